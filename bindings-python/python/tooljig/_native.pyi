"""Type stubs of ``tooljig._native``, the compiled core binding (checked by
``tests/test_stubs.py`` with ``mypy.stubtest``)."""

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, final

__all__ = [
    "Batch",
    "BatchResult",
    "CallResult",
    "Caller",
    "ERROR_CODES",
    "Engine",
    "Event",
    "ToolContext",
    "__version__",
    "shutdown",
]

ERROR_CODES: Final[list[str]]
__version__: Final[str]

def shutdown() -> None:
    """Stops tooljig before the interpreter finalizes (registered with ``atexit``)."""

@final
class Engine:
    def __new__(
        cls,
        *,
        limits: Mapping[str, int] | None = None,
        schema_resources: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        approval_rules: Mapping[str, Any] | None = None,
        external_expiry_ms: int | None = None,
    ) -> Engine: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    @settings.setter
    def settings(self, value: Mapping[str, Any]) -> None: ...
    def specs_for(self, caller: Caller | Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def telemetry(self) -> dict[str, Any]: ...
    def register(
        self,
        spec: Mapping[str, Any],
        invoke: Callable[[dict[str, Any], ToolContext], Any] | None,
        is_async: bool,
    ) -> None: ...
    def specs(self) -> list[dict[str, Any]]: ...
    def start(
        self,
        calls: Sequence[Mapping[str, Any]],
        caller: Caller | Mapping[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        events: bool = False,
    ) -> Batch: ...

@final
class Batch:
    @property
    def result(self) -> asyncio.Future[BatchResult]: ...
    def next_events(self) -> asyncio.Future[list[Event]]: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

@final
class CallResult:
    """The result of one call: the envelope for the model, and what the app needs."""

    @property
    def call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def status(self) -> str:
        """``"done"``, ``"pending_approval"``, ``"pending_external"``, ..."""
    @property
    def envelope(self) -> dict[str, Any]:
        """What the model sees, as a plain dict ready for ``json.dumps``."""
    def envelope_json(self) -> str:
        """The envelope as compact JSON: the same bytes in Rust, Python and Node."""
    @property
    def ok(self) -> bool: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def attempts(self) -> int: ...
    @property
    def repaired(self) -> bool: ...
    @property
    def replayed(self) -> bool: ...
    @property
    def cached(self) -> bool: ...
    @property
    def arguments(self) -> Any: ...
    @property
    def started_us(self) -> int | None: ...
    @property
    def finished_us(self) -> int: ...
    @property
    def duration_us(self) -> int: ...
    @property
    def detail(self) -> str | None:
        """An unexpected failure's traceback: for the app, never shown to the model."""
    def to_dict(self) -> dict[str, Any]: ...
    def __getitem__(self, key: str, /) -> Any: ...

@final
class BatchResult:
    """The results of a batch, in call order."""

    @property
    def duration_us(self) -> int: ...
    @property
    def results(self) -> list[CallResult]: ...
    def get(self, call_id: str) -> CallResult | None: ...
    def envelopes(self) -> list[dict[str, Any]]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> CallResult: ...
    def __iter__(self) -> Iterator[CallResult]: ...

@final
class Event:
    """One thing that happened in a batch."""

    @property
    def type(
        self,
    ) -> (
        Literal[
            "batch_started",
            "call_planned",
            "call_started",
            "call_retried",
            "call_finished",
            "batch_finished",
        ]
        | str
    ): ...
    @property
    def at_us(self) -> int: ...
    @property
    def call_id(self) -> str | None: ...
    @property
    def result(self) -> CallResult | None: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __getitem__(self, key: str, /) -> Any: ...

@final
class Caller:
    """Who a batch runs for; handlers see it, the model never does."""

    def __new__(
        cls,
        *,
        principal: str | None = ...,
        tenant: str | None = ...,
        roles: Sequence[str] = ...,
        scopes: Sequence[str] = ...,
        attributes: Mapping[str, Any] = ...,
        session: str | None = ...,
        **fields: Any,
    ) -> Caller: ...
    @property
    def principal(self) -> str | None: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def roles(self) -> list[str]: ...
    @property
    def scopes(self) -> list[str]: ...
    @property
    def attributes(self) -> dict[str, Any]: ...
    @property
    def session(self) -> str | None: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __getitem__(self, key: str, /) -> Any: ...

@final
class ToolContext:
    """What a handler knows about the call it runs."""

    @property
    def call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def caller(self) -> Caller: ...
    @property
    def cancelled(self) -> bool: ...
