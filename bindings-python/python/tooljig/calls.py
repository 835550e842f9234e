"""The shape of a call, for type checkers: a plain dict at run time."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Call"]


class Call(TypedDict, total=False):
    """One tool call in a batch, as the core's ``Call`` (``core/src/call.rs``).

    Only ``tool`` is required. ``arguments`` is a JSON string (parsed, repaired if need be)
    or a value; ``{"$from": "<call id>", "pointer": "/json/pointer"}`` inside it takes data
    from an earlier call's result. Keys the core adds later are accepted as they are.
    """

    id: str
    """Unique within the batch; ``call_0``, ``call_1``, ... when empty."""
    tool: str
    """The tool's name."""
    arguments: Any
    """A JSON string or a JSON value."""
    depends_on: list[str]
    """Calls that must finish before this one starts."""
    run_if_dependency_failed: bool
    """Run even when a dependency failed."""
    idempotency_key: str
    """The app's idempotency key for this call (never set by the model)."""
