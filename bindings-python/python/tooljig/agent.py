"""The agent loop: a model proposes tool calls, the engine runs them with every guardrail,
the model answers — planner → executor → responder — until it answers in text or a limit
ends the run (then it still answers, about what was done).

    >>> import tooljig
    >>> from tooljig.agent import Agent, AgentState, ScriptedModel
    >>> engine = tooljig.Engine()
    >>> @engine.tool
    ... def get_weather(city: str) -> dict:
    ...     '''Weather for a city.'''
    ...     return {"city": city, "temp_c": 21}
    >>> model = ScriptedModel("m", [
    ...     {"tool_calls": [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]},
    ...     "It is 21°C in Paris.",
    ... ])
    >>> state = AgentState("Weather in Paris?")
    >>> out = Agent(engine, model).run_sync(state)
    >>> out.status, out.reason, out.answer
    ('finished', 'answered', 'It is 21°C in Paris.')

Models: :func:`ModelClient` over your own callable (sync or ``async``; keep your SDK),
:class:`HttpModel` for the built-in HTTP clients, :func:`FallbackChain`,
:func:`ScriptedModel` for tests. Turns, messages, options and events are plain dicts, shaped
as the core serializes them (see ``docs/agent-loop.md``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from tooljig import _native
from tooljig._native import AgentState, Caller, Emit, Model
from tooljig._native_stream import NativeEventStream
from tooljig.engine import Engine
from tooljig.errors import InvalidInputError, TooljigError
from tooljig.schema import is_async_callable

if TYPE_CHECKING:
    # Only for the checker: `typing.Unpack` for `**kwargs` needs Python 3.12; pydantic
    # already depends on typing_extensions.
    from typing_extensions import Unpack

__all__ = [
    "Agent",
    "AgentEventStream",
    "AgentLimits",
    "AgentOptions",
    "AgentState",
    "Emit",
    "FallbackChain",
    "HttpModel",
    "HttpModelOptions",
    "Model",
    "ModelClient",
    "ModelError",
    "RunOutcome",
    "ScriptedModel",
]

CallerLike = Caller | Mapping[str, Any] | None
#: What a model callable may return: a turn dict, or a str (a text answer).
TurnLike = Mapping[str, Any] | str
ModelFn = Callable[[dict[str, Any], Emit], "TurnLike | Awaitable[TurnLike]"]

#: The kinds of :class:`ModelError`; they decide retries and fallbacks.
MODEL_ERROR_KINDS: tuple[str, ...] = (
    "rate_limited",
    "server",
    "timeout",
    "network",
    "auth",
    "invalid_request",
    "bad_response",
    "circuit_open",
    "other",
)


class AgentLimits(TypedDict, total=False):
    """Limits of one run; reaching one ends the run with an answer, never an exception."""

    max_steps: int
    max_tool_calls_per_step: int
    max_tool_calls_per_run: int
    deadline_ms: int | None
    token_budget: int | None
    batch_deadline_ms: int | None


class AgentOptions(TypedDict, total=False):
    """What an :class:`Agent` is configured with besides its models. ``protocol`` is
    ``"native"`` or ``{"json": {...JsonProtocol options}}`` (JSON-structured tool calling)."""

    system: str | None
    limits: AgentLimits
    mode: Literal["act_first", "talk_first", "auto"]
    responder_tools: bool
    protocol: str | Mapping[str, Any]
    max_tokens: int | None
    temperature: float | None
    concurrency: int | None
    offer_tools: int | None
    """Offer at most this many tools a turn: the best matches of the user's latest message,
    plus ``search_tools`` when registered (:meth:`Engine.enable_tool_search`)."""
    atomic: bool
    """Each batch the model asks for is atomic: once a call fails none starts after it, and
    the completed ones are compensated (after an approval and a resume too)."""


class ModelError(TooljigError):
    """Raised by a model callable to say how it failed: ``kind`` (one of
    :data:`MODEL_ERROR_KINDS`) decides whether a fallback chain moves on. Any other exception
    a model raises is an ``other`` failure with its traceback in the message."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
    ) -> None:
        if kind not in MODEL_ERROR_KINDS:
            raise ValueError(
                f"unknown model error kind {kind!r}; expected one of {MODEL_ERROR_KINDS}"
            )
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms

    def to_dict(self) -> dict[str, Any]:
        """The core's ``ModelError`` as a dict."""
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        return out


def _wrap(fn: ModelFn) -> Callable[[dict[str, Any], Emit], Any]:
    """The invoker the native model calls: the answer as ``{"turn": ...}`` or
    ``{"error": ...}``. Sync callables run on a worker thread, async ones on the run's loop."""

    async def finish(pending: Awaitable[TurnLike]) -> dict[str, Any]:
        try:
            return {"turn": await pending}
        except ModelError as e:
            return {"error": e.to_dict()}

    if is_async_callable(fn):

        async def invoke_async(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
            return await finish(fn(request, emit))  # type: ignore[arg-type]

        return invoke_async

    def invoke(request: dict[str, Any], emit: Emit) -> Any:
        try:
            answer = fn(request, emit)
        except ModelError as e:
            return {"error": e.to_dict()}
        if inspect.isawaitable(answer):
            return finish(answer)
        return {"turn": answer}

    return invoke


def ModelClient(fn: ModelFn, *, name: str | None = None) -> Model:  # noqa: N802 - a constructor
    """A model over your own callable ``fn(request, emit) -> turn``: ``request`` is the
    provider-neutral request dict (``model``, ``messages``, ``tools``, ``tool_choice``,
    ``stream``, ...); the answer is a turn dict (``content``, ``tool_calls``,
    ``finish_reason``, ``usage``) or a str. Convert with :class:`tooljig.providers.Provider`
    to call any SDK. ``emit(event)`` streams events as they arrive (e.g. what a
    :class:`tooljig.stream.StreamParser` returns). ``async def`` callables run on the run's
    event loop, plain ones on a worker thread. Raise :class:`ModelError` to say how it failed.
    """
    label: str = name or str(getattr(fn, "__name__", "python"))
    return Model.callable(label, _wrap(fn))


def ScriptedModel(  # noqa: N802 - a constructor
    name: str,
    steps: Iterable[TurnLike | Mapping[str, Any]],
    *,
    streaming: bool = False,
    then_forever: TurnLike | None = None,
) -> Model:
    """A model that plays back ``steps`` for tests: turn dicts, strs (text answers) or
    ``{"error": {"kind": ..., "message": ...}}``. ``streaming`` streams each turn like a
    provider; ``then_forever`` answers every request after the script. ``model.requests()``
    lists what it received."""
    # The core reads each step (a turn, a str, an error) as it reads every binding's scripts.
    return Model.scripted(name, list(steps), streaming=streaming, then_forever=then_forever)


def FallbackChain(  # noqa: N802 - a constructor
    models: Iterable[Model], *, threshold: int | None = None, cooldown_ms: int | None = None
) -> Model:
    """Sends each request to the first model whose circuit breaker is closed, and on to the
    next on failure; ``threshold`` failures in a row rest a model for ``cooldown_ms``.
    ``model.breakers()`` reports each breaker."""
    return Model.fallback(list(models), threshold=threshold, cooldown_ms=cooldown_ms)


class HttpModelOptions(TypedDict, total=False):
    """Options of the :class:`HttpModel` constructors; unset ones keep the core's defaults."""

    base_url: str
    api_key: str
    api_key_env: str
    stream: bool
    strict: bool
    timeout_ms: int
    connect_timeout_ms: int
    max_retries: int
    initial_backoff_ms: int
    max_backoff_ms: int
    #: Sent with every request (a gateway's key, an organization id); one named like a
    #: default (``anthropic-version``) replaces it.
    headers: Mapping[str, str]


class HttpModel:
    """The built-in HTTP clients (streaming, timeouts, retries with backoff on 429 and 5xx,
    API key from the environment). Each constructor returns a :class:`Model`; options
    (:class:`HttpModelOptions`): ``base_url``, ``api_key``, ``api_key_env``, ``stream``,
    ``strict``, ``timeout_ms``, ``connect_timeout_ms``, ``max_retries``,
    ``initial_backoff_ms``, ``max_backoff_ms``, ``headers``."""

    @staticmethod
    def openai_compatible(model: str, **options: Unpack[HttpModelOptions]) -> Model:
        """Chat Completions at OpenAI (``OPENAI_API_KEY``), or any compatible server with
        ``base_url`` (Ollama ``http://localhost:11434/v1``, vLLM, llama.cpp's server)."""
        return Model.http("openai_chat", model, **options)

    @staticmethod
    def openai_responses(model: str, **options: Unpack[HttpModelOptions]) -> Model:
        """OpenAI Responses (``/responses``)."""
        return Model.http("openai_responses", model, **options)

    @staticmethod
    def anthropic(model: str, **options: Unpack[HttpModelOptions]) -> Model:
        """Anthropic Messages (``ANTHROPIC_API_KEY``)."""
        return Model.http("anthropic", model, **options)

    @staticmethod
    def gemini(model: str, **options: Unpack[HttpModelOptions]) -> Model:
        """Gemini ``streamGenerateContent`` (``GEMINI_API_KEY``)."""
        return Model.http("gemini", model, **options)


@dataclass(frozen=True)
class RunOutcome:
    """What a ``run``, ``send`` or ``resume`` ended with. ``status`` is ``"finished"``
    (``reason``: ``answered``, ``step_limit``, ``tool_call_limit``, ``deadline``,
    ``token_budget``, ``model_failed``, ``refused``), ``"needs_input"`` (``answer`` is one
    clarifying question; ``needs`` the calls and their missing fields) or ``"suspended"``
    (``pending``: calls waiting for approval or a client; ``needs``, when calls of the same
    batch lack fields, with ``answer`` one question for them)."""

    status: str
    answer: str
    counters: dict[str, Any]
    reason: str | None = None
    needs: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunOutcome:
        """Reads the core's outcome dict."""
        status = d["status"]
        return cls(
            status=status["status"],
            answer=d["answer"],
            counters=d["counters"],
            reason=status.get("reason"),
            needs=status.get("needs", []),
            pending=status.get("pending", []),
        )


class Agent:
    """Drives conversations over ``engine``'s tools with ``model`` as planner (and
    ``responder``, when given, for the passes after tools ran). ``options`` is an
    :class:`AgentOptions` dict. ``select_tools(message, tools)`` (may be async) picks the
    tools a turn offers: it gets the user's latest message and the specs the caller may use
    (after ``offer_tools``), and returns the names to offer, in order; names it makes up are
    ignored, and if it fails every candidate is offered (docs/tools.md).
    ``review_plan(message, calls, tools)`` (may be async) has the last word on each turn's
    plan before it runs: it gets the user's message, the model's calls (``{"id", "name",
    "arguments"}``) and the names of the tools the caller may use, and returns the calls to
    run (``{"id"?, "name", "arguments"?}``): the model's, fewer, or a needed one the model
    skipped; if it fails the model's calls run (docs/agent-loop.md). Every method takes
    the :class:`AgentState` to advance; it is updated in place when the call returns (a
    cancelled call leaves it as it was)."""

    def __init__(
        self,
        engine: Engine,
        model: Model,
        *,
        responder: Model | None = None,
        options: AgentOptions | Mapping[str, Any] | None = None,
        select_tools: Callable[[str, list[dict[str, Any]]], Any] | None = None,
        review_plan: Callable[[str, list[dict[str, Any]], list[str]], Any] | None = None,
    ) -> None:
        selector = None
        if select_tools is not None:
            if not callable(select_tools):
                raise InvalidInputError(f"select_tools must be a function, not {select_tools!r}")
            pick = select_tools
            selector = (lambda request, ctx: pick(request["message"], request["tools"]), is_async_callable(pick))
        reviewer = None
        if review_plan is not None:
            if not callable(review_plan):
                raise InvalidInputError(f"review_plan must be a function, not {review_plan!r}")
            review = review_plan
            reviewer = (
                lambda request, ctx: review(request["message"], request["calls"], request["tools"]),
                is_async_callable(review),
            )
        self._native = _native.Agent(
            engine._native,
            model,
            responder=responder,
            options=dict(options) if options is not None else None,
            select_tools=selector,
            review_plan=reviewer,
        )

    @property
    def options(self) -> dict[str, Any]:
        """The options in force, defaults filled in."""
        options: dict[str, Any] = self._native.options
        return options

    async def run(
        self,
        state: AgentState,
        *,
        caller: CallerLike = None,
        mode: Literal["act_first", "talk_first", "auto"] | None = None,
    ) -> RunOutcome:
        """Runs the conversation in ``state`` (ending with a user message) until the model
        answers, asks a question, suspends, or a limit ends it."""
        return await self._await(self._native.start(state, "run", caller=caller, mode=mode))

    async def send(
        self,
        state: AgentState,
        message: str,
        *,
        caller: CallerLike = None,
        mode: Literal["act_first", "talk_first", "auto"] | None = None,
    ) -> RunOutcome:
        """Adds the user's message (a request, or the answer to a clarifying question) and
        runs."""
        return await self._await(
            self._native.start(state, "send", message=message, caller=caller, mode=mode)
        )

    async def resume(self, state: AgentState, *, caller: CallerLike = None) -> RunOutcome:
        """Continues a suspended run whose pending calls were settled through the engine's
        durable runs. Raises :class:`tooljig.InvalidInputError` when it is not suspended."""
        return await self._await(self._native.start(state, "resume", caller=caller))

    async def resume_with_results(
        self, state: AgentState, results: Iterable[Any], *, caller: CallerLike = None
    ) -> RunOutcome:
        """Continues a suspended run with final results the app obtained itself (a client
        ran its tool, a human decided): ``CallResult``s or their dicts, by call id."""
        return await self._await(
            self._native.start(state, "resume_with_results", results=list(results), caller=caller)
        )

    def run_sync(
        self,
        state: AgentState,
        *,
        caller: CallerLike = None,
        mode: Literal["act_first", "talk_first", "auto"] | None = None,
    ) -> RunOutcome:
        """:meth:`run` for code without an event loop."""
        return _sync(self.run(state, caller=caller, mode=mode))

    def send_sync(
        self,
        state: AgentState,
        message: str,
        *,
        caller: CallerLike = None,
        mode: Literal["act_first", "talk_first", "auto"] | None = None,
    ) -> RunOutcome:
        """:meth:`send` for code without an event loop."""
        return _sync(self.send(state, message, caller=caller, mode=mode))

    def resume_sync(self, state: AgentState, *, caller: CallerLike = None) -> RunOutcome:
        """:meth:`resume` for code without an event loop."""
        return _sync(self.resume(state, caller=caller))

    def resume_with_results_sync(
        self, state: AgentState, results: Iterable[Any], *, caller: CallerLike = None
    ) -> RunOutcome:
        """:meth:`resume_with_results` for code without an event loop."""
        return _sync(self.resume_with_results(state, results, caller=caller))

    def stream(
        self,
        state: AgentState,
        message: str | None = None,
        *,
        caller: CallerLike = None,
        mode: Literal["act_first", "talk_first", "auto"] | None = None,
        results: Iterable[Any] | None = None,
        resume: bool = False,
    ) -> AgentEventStream:
        """Runs (``send`` when ``message`` is given, ``resume_with_results`` with ``results``,
        ``resume`` with ``resume=True``, else ``run``) and yields its stream events (dicts)
        as they happen; ``stream.outcome`` is the :class:`RunOutcome` after the last one.
        Leaving the loop early cancels the run. Feed the events to
        :class:`tooljig.stream.UiMessageStream` to serve ``useChat``."""
        kw: dict[str, Any]
        if message is not None:
            op, kw = "send", {"message": message, "mode": mode}
        elif results is not None:
            op, kw = "resume_with_results", {"results": list(results)}
        elif resume:
            op, kw = "resume", {}
        else:
            op, kw = "run", {"mode": mode}
        return AgentEventStream(
            lambda: self._native.start(state, op, caller=caller, events=True, **kw)
        )

    @staticmethod
    async def _await(run: _native.AgentRun) -> RunOutcome:
        out: dict[str, Any] = await run.result
        return RunOutcome.from_dict(out)


def _sync(coro: Awaitable[RunOutcome]) -> RunOutcome:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if inspect.iscoroutine(coro):
            coro.close()
        raise RuntimeError(
            "the *_sync methods block, so they cannot be called from a running event loop; "
            "await the async ones there"
        )

    async def main() -> RunOutcome:
        return await coro

    return asyncio.run(main())


class AgentEventStream(NativeEventStream[dict[str, Any], dict[str, Any]]):
    """The stream events of one agent run, as an async iterator (see :meth:`Agent.stream`)."""

    async def aclose(self) -> None:
        """Stops listening; a run still going is cancelled."""
        await super().aclose()

    @property
    def outcome(self) -> RunOutcome:
        """The run's outcome, once every event was read."""
        return RunOutcome.from_dict(self._result())
