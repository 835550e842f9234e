"""Type stubs of ``tooljig._native``, the compiled core binding (checked by
``tests/test_stubs.py`` with ``mypy.stubtest``)."""

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, final

__all__ = [
    "Batch",
    "BatchResult",
    "CallResult",
    "Caller",
    "ERROR_CODES",
    "Engine",
    "Event",
    "InboxServer",
    "McpClient",
    "McpServer",
    "ToolContext",
    "__version__",
    "cli",
    "shutdown",
    # providers, streaming, the agent loop
    "Agent",
    "AgentRun",
    "AgentState",
    "Emit",
    "JsonProtocol",
    "Model",
    "Provider",
    "StreamParser",
    "TraceExport",
    "UI_MESSAGE_STREAM_HEADERS",
    "UiMessageStream",
    "drop_strict_nulls",
    "export_traces",
    "format_results",
    "into_batch",
    "parse_stream",
    "to_strict",
    "import_tools",
    "to_ui_message_stream",
]

ERROR_CODES: Final[list[str]]
__version__: Final[str]

def cli(argv: list[str]) -> int:
    """Runs the ``tooljig`` command line with ``argv``; returns its exit code."""

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
        run_lease_ms: int | None = None,
        audit: str | Mapping[str, str] | None = None,
        policy_hook: tuple[Callable[[dict[str, Any]], Any], bool] | None = None,
        resolvers: Mapping[str, tuple[Callable[[dict[str, Any]], Any], bool]] | None = None,
        state_store: str | Mapping[str, str] | None = None,
        rate_limiter: str | None = None,
        result_cache: str | None = None,
        approval_predicate: tuple[Callable[[dict[str, Any]], Any], bool] | None = None,
        seal_key: str | None = None,
        audit_anchor: str | None = None,
    ) -> Engine: ...
    def durable(self, args: Mapping[str, Any]) -> asyncio.Future[Any]: ...
    def compensate_with(self, tool: str, invoke: Callable[..., Any], is_async: bool) -> None: ...
    def audit_query(self, query: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def verify_audit(self) -> dict[str, Any]: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    @settings.setter
    def settings(self, value: Mapping[str, Any]) -> None: ...
    def specs_for(self, caller: Caller | Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def search_tools(
        self, query: str, limit: int, caller: Caller | Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]: ...
    def register_openapi(self, document: Any, options: Mapping[str, Any]) -> dict[str, Any]: ...
    def enable_tool_search(self) -> None: ...
    def telemetry(self) -> dict[str, Any]: ...
    def register(
        self,
        spec: Mapping[str, Any],
        invoke: Callable[[dict[str, Any], ToolContext], Any] | None,
        is_async: bool,
        present: tuple[Callable[[Any, ToolContext], Any], bool] | None = None,
        on_success: tuple[Callable[[Any, ToolContext], Any], bool] | None = None,
        sync_to_thread: bool = True,
        takes_ctx: bool = True,
    ) -> None: ...
    def specs(self) -> list[dict[str, Any]]: ...
    def serve_mcp_http(
        self,
        options: Mapping[str, Any],
        auth: tuple[Callable[[dict[str, Any]], Any], bool] | None = None,
    ) -> McpServer: ...
    def serve_mcp_stdio(self, options: Mapping[str, Any]) -> asyncio.Future[None]: ...
    def serve_inbox(
        self,
        tokens: Mapping[str, Any],
        bind: str,
        auth: tuple[Callable[[dict[str, Any]], Any], bool] | None = None,
    ) -> InboxServer: ...
    def mcp_connect(
        self, target: Mapping[str, Any], options: Mapping[str, Any]
    ) -> tuple[McpClient, asyncio.Future[list[str]]]: ...
    def start(
        self,
        calls: Sequence[Mapping[str, Any]],
        caller: Caller | Mapping[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        events: bool = False,
    ) -> Batch: ...

@final
class TraceExport:
    def flush(self) -> None: ...
    def shutdown(self) -> None: ...

def export_traces(options: Mapping[str, Any]) -> TraceExport: ...

@final
class InboxServer:
    @property
    def url(self) -> str: ...
    def stop(self) -> None: ...

@final
class McpServer:
    @property
    def url(self) -> str: ...
    def stop(self) -> asyncio.Future[None]: ...
    def stopped(self) -> asyncio.Future[None]: ...

@final
class McpClient:
    def reconnect(self) -> asyncio.Future[None]: ...
    def close(self) -> asyncio.Future[None]: ...

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
    def model_output(self) -> Any:
        """What the model sees in place of the data when the tool's ``to_model_output`` or
        budget changed it; None otherwise."""
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
    def run_id(self) -> str | None: ...
    @property
    def rollback(self) -> dict[str, Any] | None: ...
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
    def run_id(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def cancelled(self) -> bool: ...
    def progress(self, fraction: float | None = None, message: str | None = None) -> None:
        """Reports how far the call is (``fraction`` 0 to 1, a message); a no-op unheard."""
    def partial(self, output: Any) -> None:
        """Hands out a partial output before the result (a preliminary tool output)."""
    def run(self, calls: Iterable[Mapping[str, Any]], *, atomic: bool = False) -> asyncio.Future[BatchResult]:
        """Runs other tools of the engine as one batch (the policy's ``may_call``); with
        ``atomic``, the completed calls are compensated when one fails."""
    def call(self, tool: str, arguments: Any = None) -> asyncio.Future[CallResult]:
        """Runs one other tool of the engine (the policy's ``may_call``)."""

# --- providers (src/providers.rs) ---------------------------------------------------------

@final
class Provider:
    """One model API's wire format."""

    def __new__(
        cls,
        name: str,
        *,
        strict: bool = False,
        sequential_tool_calls: bool = False,
        openapi_schema: bool = False,
    ) -> Provider: ...
    @property
    def name(self) -> str: ...
    @property
    def strict(self) -> bool: ...
    def tools(self, specs: Sequence[Mapping[str, Any]], strict: bool | None = None) -> list[dict[str, Any]]: ...
    def request(self, request: Mapping[str, Any]) -> dict[str, Any]: ...
    def parse_response(self, body: Mapping[str, Any]) -> dict[str, Any]: ...
    def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]: ...
    def parse_messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]: ...
    def tool_results(self, results: Iterable[CallResult | Mapping[str, Any]]) -> list[dict[str, Any]]: ...

@final
class JsonProtocol:
    """The JSON-structured tool protocol."""

    def __new__(cls, options: Mapping[str, Any] | None = None) -> JsonProtocol: ...
    @property
    def options(self) -> dict[str, Any]: ...
    def response_schema(self, specs: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...
    def prompt(self, specs: Sequence[Mapping[str, Any]]) -> str: ...
    def parse(self, text: str) -> dict[str, Any]: ...

def into_batch(turn: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[CallResult]]: ...
def drop_strict_nulls(turn: Mapping[str, Any], specs: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...
def to_strict(schema: Mapping[str, Any]) -> dict[str, Any]: ...
def format_results(results: Iterable[CallResult | Mapping[str, Any]]) -> str: ...

# --- importers (src/imports.rs) -----------------------------------------------------------

def import_tools(definitions: Any, options: Mapping[str, Any]) -> list[dict[str, Any]]: ...

# --- streaming (src/stream.rs) ------------------------------------------------------------

UI_MESSAGE_STREAM_HEADERS: Final[list[tuple[str, str]]]

@final
class StreamParser:
    """Parses one provider's server-sent-event stream incrementally."""

    def __new__(cls, provider: str) -> StreamParser: ...
    @property
    def provider(self) -> str: ...
    def push(self, data: bytes | bytearray | memoryview | str) -> list[dict[str, Any]]: ...
    def finish(self) -> tuple[list[dict[str, Any]], dict[str, Any]]: ...

def parse_stream(
    provider: str, data: bytes | bytearray | memoryview | str
) -> tuple[list[dict[str, Any]], dict[str, Any]]: ...

@final
class UiMessageStream:
    """Writes one assistant message's Vercel AI SDK UI message stream."""

    def __new__(cls, message_id: str) -> UiMessageStream: ...
    def chunks(self, event: Mapping[str, Any]) -> list[dict[str, Any]]: ...
    def encode(self, event: Mapping[str, Any]) -> str: ...
    def done(self) -> str: ...

def to_ui_message_stream(message_id: str, events: Sequence[Mapping[str, Any]]) -> str: ...

# --- the agent loop (src/model.rs, callable_model.rs, agent_state.rs, agent_run.rs, agent.rs)

@final
class Emit:
    """Streams a model's events to the run."""

    def __call__(self, event: Mapping[str, Any]) -> None: ...
    @property
    def streaming(self) -> bool: ...

@final
class Model:
    """A model the agent can call."""

    @staticmethod
    def callable(name: str, invoke: Callable[[dict[str, Any], Emit], Any]) -> Model: ...
    @staticmethod
    def scripted(
        name: str,
        steps: Sequence[Mapping[str, Any] | str],
        *,
        streaming: bool = False,
        then_forever: Mapping[str, Any] | str | None = None,
    ) -> Model: ...
    @staticmethod
    def http(
        provider: str,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        stream: bool | None = None,
        strict: bool = False,
        timeout_ms: int | None = None,
        connect_timeout_ms: int | None = None,
        max_retries: int | None = None,
        initial_backoff_ms: int | None = None,
        max_backoff_ms: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Model: ...
    @staticmethod
    def fallback(
        models: Sequence[Model], *, threshold: int | None = None, cooldown_ms: int | None = None
    ) -> Model: ...
    @property
    def name(self) -> str: ...
    def requests(self) -> list[dict[str, Any]]: ...
    def remaining(self) -> int: ...
    def breakers(self) -> list[dict[str, Any]]: ...

@final
class AgentState:
    """A conversation run's state."""

    def __new__(cls, message: str | None = None, *, messages: Sequence[Mapping[str, Any]] | None = None) -> AgentState: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> AgentState: ...
    def to_dict(self) -> dict[str, Any]: ...
    @property
    def run_id(self) -> str: ...
    @property
    def messages(self) -> list[dict[str, Any]]: ...
    @property
    def status(self) -> dict[str, Any]: ...
    @property
    def counters(self) -> dict[str, Any]: ...
    @property
    def answer(self) -> str: ...
    @property
    def running(self) -> bool: ...

@final
class AgentRun:
    """A run started by ``Agent.start``."""

    @property
    def result(self) -> asyncio.Future[dict[str, Any]]: ...
    def next_events(self) -> asyncio.Future[list[dict[str, Any]]]: ...
    def cancel(self) -> None: ...

@final
class Agent:
    """Drives conversations over an engine's tools."""

    def __new__(
        cls,
        engine: Engine,
        model: Model,
        *,
        responder: Model | None = None,
        options: Mapping[str, Any] | None = None,
        select_tools: tuple[Callable[[Any, ToolContext], Any], bool] | None = None,
        review_plan: tuple[Callable[[Any, ToolContext], Any], bool] | None = None,
    ) -> Agent: ...
    @property
    def options(self) -> dict[str, Any]: ...
    def start(
        self,
        state: AgentState,
        op: str,
        *,
        message: str | None = None,
        results: Iterable[CallResult | Mapping[str, Any]] | None = None,
        caller: Caller | Mapping[str, Any] | None = None,
        mode: str | None = None,
        events: bool = False,
    ) -> AgentRun: ...
