"""Policy helpers for the ``@engine.tool(...)`` keywords.

A policy is plain data owned by the core (``core/src/policy.rs``): the decorator passes its
keywords through as a dict, so fields the core adds later work here without changes, and a
misspelt one is refused at registration with the list of known fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tooljig.codes import ErrorCode

__all__ = ["Retry"]


@dataclass(frozen=True)
class Retry:
    """Retries of failures that may succeed when tried again. Unset fields keep the core's
    defaults (1 attempt, 100 ms backoff, x2, capped at 5 s, every retryable error).

    >>> Retry(attempts=3, backoff_ms=50).to_dict()
    {'attempts': 3, 'backoff_ms': 50}
    """

    attempts: int | None = None
    """Total attempts, the first included; 1 means no retry."""
    backoff_ms: int | None = None
    """Delay before the first retry, in milliseconds."""
    multiplier: float | None = None
    """Each further delay is the previous one times this."""
    max_backoff_ms: int | None = None
    """Upper bound of a delay, in milliseconds."""
    on: Sequence[ErrorCode | str] | None = None
    """Codes worth retrying; unset means every error whose ``retryable`` flag is set."""

    def to_dict(self) -> dict[str, Any]:
        """The policy's ``retry`` field: only what was set."""
        out: dict[str, Any] = {}
        for key in ("attempts", "backoff_ms", "multiplier", "max_backoff_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.on is not None:
            out["on"] = [str(ErrorCode(code)) for code in self.on]
        return out
