"""``tooljig.Engine``: register tools written in Python, run the calls models propose.

The engine is the core's (``tooljig._native.Engine``); this module adds what is Python's own:
the decorator that reads a function's type hints, ``await``/blocking/streaming ways to run a
batch, and keyword arguments for policies and options.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar, overload

from tooljig import _native
from tooljig._native import BatchResult, Caller, Event
from tooljig._native_stream import NativeEventStream
from tooljig.audit import AuditLog, JsonlAudit, MemoryAudit, PostgresAudit, SqliteAudit
from tooljig.calls import Call
from tooljig.durable import DurableRuns, MemoryStore, PostgresStore, RedisStore, SqliteStore, StateStore
from tooljig.mcp import McpEndpoints
from tooljig.errors import InvalidInputError, InvalidPolicyError
from tooljig.policy import Retry
from tooljig.schema import (
    from_function,
    invoker_for_schema,
    is_async_callable,
    output_schema_of,
    takes_context,
)

__all__ = ["Engine", "EventStream"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
_log = logging.getLogger("tooljig")

CallerLike = Caller | Mapping[str, Any] | None

# `timeout_ms=None` means "no timeout", so "not given" needs its own marker.
_DEFAULT: Any = object()


class Engine(DurableRuns, McpEndpoints):
    """Runs tool calls: parsed, repaired, validated, run in dependency order and in parallel,
    each ending as an envelope.

    >>> engine = Engine()
    >>> @engine.tool(timeout_ms=5000)
    ... def add(a: int, b: int) -> int:
    ...     '''Adds two numbers.'''
    ...     return a + b
    >>> engine.run_sync([{"id": "1", "tool": "add", "arguments": '{"a": 1, "b": 2,}'}])[0].envelope
    {'ok': True, 'data': 3}

    ``limits`` sets argument limits (``max_argument_bytes``, ``max_depth``);
    ``schema_resources`` maps URIs to schema documents that ``$ref`` may name (nothing is
    fetched over the network); ``settings`` are the enabled flags (``system``, ``tenants``,
    ``departments``, ``users``: tool name or ``"*"`` → bool); ``approval_rules`` (e.g.
    ``{"min_risk": "high"}``), ``external_expiry_ms`` and ``run_lease_ms`` (how soon another
    process may take over a run whose process died; 15 000 by default) configure durable runs.

    Guardrails: ``audit`` (:class:`MemoryAudit`, :class:`SqliteAudit`, :class:`JsonlAudit`,
    :class:`PostgresAudit`, or a URL: ``"memory"``, ``"sqlite://PATH"``, ``"jsonl://PATH"``,
    ``"postgres://..."``)
    keeps a hash-chained record of every call; ``policy_hook(request)`` is the app's last
    word on each call (``request``: ``tool``, ``call_id``, ``arguments``, ``caller``,
    ``risk``, ``effect``; it returns ``True``, ``False`` or ``{"allow": ..., "reason": ...}``);
    ``resolvers`` maps a name to ``resolve(request)`` (``request``: ``tool``, ``parameter``,
    ``input``, ``value``, ``caller``; it returns ``{"status": "found", "value": ...}``,
    ``{"status": "not_found"}`` or ``{"status": "ambiguous", "candidates": [...]}``). Both
    may be ``def`` (run on a worker thread) or ``async def`` (run on the batch's event loop);
    raising :class:`ToolError` refuses the call with that error, anything else fails closed.
    ``rate_limiter`` is where rate-limit budgets live and ``result_cache`` where read tools'
    cached results live: ``"memory"`` (the default, per process) or
    ``"redis://HOST:PORT/DB?prefix=NAME"`` (a cluster: ``"redis+cluster://HOST:PORT,..."``),
    shared by every worker (Redis unreachable: a
    limited call ends ``unavailable``, never unlimited; a cache lookup is a miss).

    Tamper evidence: ``seal_key`` (bytes, or a string: ``"env:NAME"``, ``"file:PATH"``,
    ``"hex:HEX"`` or the key itself; at least 32 bytes) seals the audit chain and stored
    approval decisions with HMAC-SHA256, so nobody without the key can alter, forge or append
    records, or make a decision the engine will honour; ``audit_anchor`` (a path, out of band)
    receives the log's head after every commit, so records cut off the end are detected.

    Durable runs: ``state_store`` (:class:`MemoryStore`, the default, :class:`SqliteStore`,
    :class:`PostgresStore`, :class:`RedisStore`, or a URL: ``"memory"``, ``"sqlite://PATH"``,
    ``"postgres://..."``, ``"redis://..."``)
    keeps runs, approvals and preferences; ``approval_predicate(query)`` (``query``: ``tool``,
    ``arguments``, ``caller``, ``risk``) returns whether a call needs a human decision. The operations on runs (``decide``, ``resume``, ``rollback``, ...) are
    in :class:`tooljig.durable.DurableRuns`.
    """

    def __init__(
        self,
        *,
        limits: Mapping[str, int] | None = None,
        schema_resources: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        approval_rules: Mapping[str, Any] | None = None,
        external_expiry_ms: int | None = None,
        run_lease_ms: int | None = None,
        audit: AuditLog | str | None = None,
        policy_hook: Callable[[dict[str, Any]], Any] | None = None,
        resolvers: Mapping[str, Callable[[dict[str, Any]], Any]] | None = None,
        state_store: StateStore | str | None = None,
        rate_limiter: str | None = None,
        result_cache: str | None = None,
        approval_predicate: Callable[[dict[str, Any]], Any] | None = None,
        seal_key: str | bytes | None = None,
        audit_anchor: str | os.PathLike[str] | None = None,
    ) -> None:
        if audit is not None and not isinstance(audit, (str, MemoryAudit, SqliteAudit, JsonlAudit, PostgresAudit)):
            raise InvalidInputError(
                "invalid audit: expected MemoryAudit(), SqliteAudit(path), JsonlAudit(path), "
                f"PostgresAudit(url) or a URL, not {audit!r}"
            )
        if state_store is not None and not isinstance(state_store, (str, MemoryStore, SqliteStore, PostgresStore, RedisStore)):
            raise InvalidInputError(
                "invalid state_store: expected MemoryStore(), SqliteStore(path), PostgresStore(url), RedisStore(url) "
                f"or a URL, not {state_store!r}"
            )
        self._native = _native.Engine(
            limits=dict(limits) if limits is not None else None,
            schema_resources=dict(schema_resources) if schema_resources is not None else None,
            settings=dict(settings) if settings is not None else None,
            approval_rules=dict(approval_rules) if approval_rules is not None else None,
            external_expiry_ms=external_expiry_ms,
            run_lease_ms=run_lease_ms,
            audit=audit if isinstance(audit, str) or audit is None else audit._option(),
            policy_hook=_app_callable("policy_hook", policy_hook) if policy_hook is not None else None,
            resolvers={
                name: _app_callable(f"resolvers[{name!r}]", f) for name, f in resolvers.items()
            }
            if resolvers is not None
            else None,
            state_store=(
                state_store if isinstance(state_store, str) or state_store is None else state_store._option()
            ),
            rate_limiter=rate_limiter,
            result_cache=result_cache,
            approval_predicate=_app_callable("approval_predicate", approval_predicate)
            if approval_predicate is not None
            else None,
            seal_key=f"hex:{bytes(seal_key).hex()}" if isinstance(seal_key, (bytes, bytearray)) else seal_key,
            audit_anchor=os.fspath(audit_anchor) if audit_anchor is not None else None,
        )

    @property
    def settings(self) -> dict[str, Any]:
        """The enabled flags in force; assign a dict to replace them (every call that starts
        after that sees them, in running batches too)."""
        settings: dict[str, Any] = self._native.settings
        return settings

    @settings.setter
    def settings(self, value: Mapping[str, Any]) -> None:
        self._native.settings = dict(value)

    def specs_for(self, caller: CallerLike = None) -> list[dict[str, Any]]:
        """The specs to hand a model for ``caller``: only the tools it may use (enabled,
        roles, scopes), hidden parameters removed from the input schemas."""
        specs: list[dict[str, Any]] = self._native.specs_for(caller)
        return specs

    def search_tools(self, query: str, *, limit: int = 5, caller: CallerLike = None) -> list[dict[str, Any]]:
        """The tools ``caller`` may use that best match ``query`` (names, descriptions and
        parameters, BM25 ranked), best first, at most ``limit``, as a model sees them: for
        registries too large to offer whole (docs/tools.md)."""
        specs: list[dict[str, Any]] = self._native.search_tools(query, limit, caller)
        return specs

    def enable_tool_search(self) -> None:
        """Registers ``search_tools``, a tool the model calls with ``{"query", "limit"}`` to
        find the tools it was not offered (only those its caller may use)."""
        self._native.enable_tool_search()

    def audit_query(
        self,
        *,
        principal: str | None = None,
        tenant: str | None = None,
        tool: str | None = None,
        call_id: str | None = None,
        outcome: str | None = None,
        code: str | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The audit records matching every filter given, in log order (the newest
        ``limit`` when set), as dicts. Raises :class:`InvalidInputError` when the engine keeps
        no audit log, ``OSError`` when the storage fails."""
        given = {
            "principal": principal,
            "tenant": tenant,
            "tool": tool,
            "call_id": call_id,
            "outcome": outcome,
            "code": code,
            "since_ms": since_ms,
            "until_ms": until_ms,
            "limit": limit,
        }
        records: list[dict[str, Any]] = self._native.audit_query(
            {k: v for k, v in given.items() if v is not None}
        )
        return records

    def verify_audit(self) -> dict[str, Any]:
        """Walks the audit log's hash chain: ``{"records": n, "broken": None}`` when intact,
        else ``broken`` is ``{"seq": ..., "reason": ...}`` of the first bad record."""
        report: dict[str, Any] = self._native.verify_audit()
        return report

    def telemetry(self) -> dict[str, Any]:
        """Counters and latency histograms per tool, so far."""
        snapshot: dict[str, Any] = self._native.telemetry()
        return snapshot

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | type | None = None,
        timeout_ms: int | None = _DEFAULT,
        retry: Retry | Mapping[str, Any] | None = None,
        after: Iterable[str] | None = None,
        max_output_bytes: int | None = None,
        on_output_too_large: str | None = None,
        to_model_output: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        sync_to_thread: bool = True,
        **policy: Any,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | type | None = None,
        timeout_ms: int | None = _DEFAULT,
        retry: Retry | Mapping[str, Any] | None = None,
        after: Iterable[str] | None = None,
        max_output_bytes: int | None = None,
        on_output_too_large: str | None = None,
        to_model_output: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        sync_to_thread: bool = True,
        **policy: Any,
    ) -> F | Callable[[F], F]:
        """Registers a typed function as a tool; use bare (``@engine.tool``) or with options.

        The input schema comes from the type hints, the descriptions from the docstring; a
        parameter annotated ``ToolContext`` is injected. Policy is keyword arguments:
        ``timeout_ms`` (per attempt; default 30 s, ``None`` for none), ``retry``, ``after`` (tool names this one runs after in a batch),
        ``max_output_bytes``, ``on_output_too_large`` (``"truncate"`` or ``"error"``), and
        any other policy field the core knows. ``to_model_output(data)`` (or ``(data, ctx)``;
        may be async) turns the tool's data into what the model reads, the app still getting
        the data (docs/tools.md). ``on_success(event)`` (or ``(event, ctx)``; may be async)
        runs after each call that succeeded, out of the model's reach (a notification, an
        outbox record), with ``{"arguments": ..., "result": <data>}``: never for a refusal,
        a failure or a replayed duplicate; its failure leaves the result as it was and says
        why in ``detail``. A ``def`` function runs on a worker thread, so it may block;
        ``sync_to_thread=False`` runs it on the caller's event loop instead, for a function
        that never blocks (no I/O, no sleeps, no locks): a one-call batch then costs a few
        µs instead of a thread hand-over's ~100 µs, but while it runs the loop does nothing
        else (no effect on ``async def``). The function is returned unchanged.
        """
        options = _policy(timeout_ms, retry, after, max_output_bytes, on_output_too_large, policy)

        def register(f: F) -> F:
            tool = from_function(f, name=name, description=description)
            self._register(
                tool.name,
                tool.description,
                tool.input_schema,
                tool.invoke,
                tool.is_async,
                output_schema,
                options,
                to_model_output,
                on_success,
                sync_to_thread,
                tool.takes_ctx,
            )
            return f

        return register(fn) if fn is not None else register

    def register(
        self,
        name: str,
        description: str,
        input_schema: Mapping[str, Any] | bool | None,
        handler: Callable[..., Any] | None,
        *,
        output_schema: Mapping[str, Any] | bool | type | None = None,
        to_model_output: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        sync_to_thread: bool = True,
        **policy: Any,
    ) -> None:
        """Registers a tool with a raw JSON Schema (draft 2020-12 or draft 7).

        ``handler(arguments)`` or ``handler(arguments, ctx)`` receives the validated
        arguments dict; it may be ``def`` or ``async def``. ``handler=None`` registers a
        client-side tool: its calls end as ``pending_external``. ``input_schema=None`` accepts
        any object; a boolean schema (``True`` accepts anything, ``False`` nothing) is taken
        as JSON Schema defines it. Policy, ``to_model_output``, ``on_success`` and
        ``sync_to_thread`` as for :meth:`tool`.
        """
        retry = policy.pop("retry", None)
        options = _policy(_DEFAULT, retry, None, None, None, policy)
        invoke = invoker_for_schema(handler) if handler is not None else None
        is_async = handler is not None and is_async_callable(handler)
        schema = (
            input_schema
            if input_schema is None or isinstance(input_schema, bool)
            else dict(input_schema)
        )
        self._register(
            name,
            description,
            schema,
            invoke,
            is_async,
            output_schema,
            options,
            to_model_output,
            on_success,
            sync_to_thread,
            handler is None or takes_context(handler),
        )

    def register_spec(
        self,
        spec: Mapping[str, Any],
        handler: Callable[..., Any] | None = None,
        *,
        to_model_output: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        sync_to_thread: bool = True,
    ) -> None:
        """Registers a tool from its spec as data (``name``, ``description``,
        ``input_schema``, ``output_schema``, ``policy``, ``original_name``), as
        :meth:`specs` exports it and :func:`tooljig.import_tools` makes it. ``handler``,
        ``to_model_output``, ``on_success`` and ``sync_to_thread`` as for :meth:`register`;
        without a handler, the tool is client-side."""
        invoke = invoker_for_schema(handler) if handler is not None else None
        is_async = handler is not None and is_async_callable(handler)
        self._native.register(
            dict(spec),
            invoke,
            is_async,
            _hook("to_model_output", to_model_output),
            _hook("on_success", on_success),
            sync_to_thread,
            handler is None or takes_context(handler),
        )

    def _register(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any] | bool | None,
        invoke: Callable[..., Any] | None,
        is_async: bool,
        output_schema: Mapping[str, Any] | bool | type | None,
        policy: dict[str, Any],
        to_model_output: Callable[..., Any] | None = None,
        on_success: Callable[..., Any] | None = None,
        sync_to_thread: bool = True,
        takes_ctx: bool = True,
    ) -> None:
        spec: dict[str, Any] = {"name": name, "description": description, "policy": policy}
        if input_schema is not None:
            spec["input_schema"] = input_schema
        out = output_schema_of(output_schema)
        if out is not None:
            spec["output_schema"] = out
        self._native.register(
            spec,
            invoke,
            is_async,
            _hook("to_model_output", to_model_output),
            _hook("on_success", on_success),
            sync_to_thread,
            takes_ctx,
        )

    def register_openapi(
        self,
        document: Mapping[str, Any],
        *,
        base_url: str | None = None,
        prefix: str = "",
        include: Iterable[str] | None = None,
        credentials: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        policy: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Registers one tool per operation of an OpenAPI 3.0 or 3.1 ``document`` (parsed
        JSON or YAML), each calling the described endpoint (docs/tools.md). ``base_url``
        overrides the document's server; ``prefix`` goes before every name; ``include`` keeps
        only these operation ids; ``credentials`` (``{"attribute": "github_token", "header":
        "Authorization", "scheme": "Bearer"}``) says which caller attribute holds the secret,
        never an argument the model writes; ``headers`` go with every request; ``policy``
        applies to every tool. Returns ``{"registered": [names], "skipped": [{"operation",
        "reason"}]}``. Raises :class:`InvalidInputError` for a document that is not OpenAPI 3
        or has no absolute address."""
        options: dict[str, Any] = {"prefix": prefix, "headers": dict(headers or {})}
        if base_url is not None:
            options["base_url"] = base_url
        if include is not None:
            options["include"] = [include] if isinstance(include, str) else list(include)
        if credentials is not None:
            options["credentials"] = dict(credentials)
        if policy is not None:
            options["policy"] = dict(policy)
        report: dict[str, Any] = self._native.register_openapi(document, options)
        return report

    def specs(self) -> list[dict[str, Any]]:
        """Provider-neutral specs of every tool, in registration order: ``name``,
        ``description``, ``input_schema``, ``output_schema`` (when set) and ``policy``."""
        specs: list[dict[str, Any]] = self._native.specs()
        return specs

    async def run(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        caller: CallerLike = None,
        concurrency: int | None = None,
        deadline_ms: int | None = None,
        max_calls: int | None = None,
        **options: Any,
    ) -> BatchResult:
        """Runs a batch and returns one result per call, in call order. Never raises for a
        call: every refusal and failure is an envelope.

        Async handlers run on this event loop, sync ones on worker threads (or on this loop
        when registered with ``sync_to_thread=False``). Cancelling the
        awaiting task (``asyncio.wait_for``, Ctrl-C under ``asyncio.run``) cancels the batch:
        running async handlers get ``CancelledError``.

        ``concurrency`` (default 256) bounds the calls running the app's code at once; a call
        waiting for the state store gives its place up meanwhile, except in an atomic batch.
        """
        batch = self._start(calls, caller, concurrency, deadline_ms, max_calls, options, False)
        result: BatchResult = await batch.result
        return result

    def run_sync(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        caller: CallerLike = None,
        concurrency: int | None = None,
        deadline_ms: int | None = None,
        max_calls: int | None = None,
        **options: Any,
    ) -> BatchResult:
        """:meth:`run` for code without an event loop (scripts, Flask, Django views).

        Runs the batch on a fresh event loop (async handlers run there); Ctrl-C cancels the
        batch and raises ``KeyboardInterrupt``. Inside a running loop, ``await run(...)``.
        Returns as soon as the batch is done: a handler task that ignores its cancellation
        (swallows ``CancelledError``) gets one second to end, then is abandoned with a
        warning, where ``asyncio.run`` would wait for it forever.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "run_sync() blocks, so it cannot be called from a running event loop; "
                "use `await engine.run(...)` there"
            )
        return _run_to_end(
            self.run(
                calls,
                caller=caller,
                concurrency=concurrency,
                deadline_ms=deadline_ms,
                max_calls=max_calls,
                **options,
            )
        )

    def stream(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        caller: CallerLike = None,
        concurrency: int | None = None,
        deadline_ms: int | None = None,
        max_calls: int | None = None,
        **options: Any,
    ) -> EventStream:
        """Runs a batch and yields its events as they happen::

            async for event in engine.stream(calls):
                if event.type == "call_finished":
                    print(event.result.envelope)

        The batch starts with the iteration; leaving the loop early (or ``aclose()``)
        cancels it. After the last event, ``stream.result`` is the :class:`BatchResult`.
        """
        return EventStream(
            lambda: self._start(calls, caller, concurrency, deadline_ms, max_calls, options, True)
        )

    def _start(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        caller: CallerLike,
        concurrency: int | None,
        deadline_ms: int | None,
        max_calls: int | None,
        options: dict[str, Any],
        events: bool,
    ) -> _native.Batch:
        opts: dict[str, Any] | None = None
        # The common call sets no option: skip building and converting an empty dict.
        if options or concurrency is not None or deadline_ms is not None or max_calls is not None:
            given = {"concurrency": concurrency, "deadline_ms": deadline_ms, "max_calls": max_calls}
            opts = {k: v for k, v in given.items() if v is not None}
            opts.update(options)
        # One call or a string where the list belongs goes as it is, for the core to name
        # the mistake rather than read the keys or letters as calls.
        batch: Any = calls if type(calls) is list or isinstance(calls, (str, Mapping)) else list(calls)
        return self._native.start(batch, caller, opts, events)


class EventStream(NativeEventStream[Event, BatchResult]):
    """The events of one batch, as an async iterator (see :meth:`Engine.stream`)."""

    async def aclose(self) -> None:
        """Stops listening; a batch still running is cancelled."""
        await super().aclose()

    @property
    def result(self) -> BatchResult:
        """The batch's results, once every event was read."""
        return self._result()


def _app_callable(what: str, f: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
    """An app callable (policy hook, resolver) and whether it is async, for the core."""
    if not callable(f):
        raise InvalidInputError(f"invalid {what}: expected a function, not {f!r}")
    return f, is_async_callable(f)


def _hook(name: str, hook: Callable[..., Any] | None) -> tuple[Any, bool] | None:
    """A tool's hook (``to_model_output``, ``on_success``) as the native layer takes it: its
    invoker and whether it is async. It is called like a handler, with its one input (and
    the context, if it takes two parameters)."""
    if hook is None:
        return None
    if not callable(hook):
        raise InvalidPolicyError(f"{name} must be a function, not {hook!r}")
    return (invoker_for_schema(hook), is_async_callable(hook))


def _policy(
    timeout_ms: Any,
    retry: Retry | Mapping[str, Any] | None,
    after: Iterable[str] | None,
    max_output_bytes: int | None,
    on_output_too_large: str | None,
    rest: Mapping[str, Any],
) -> dict[str, Any]:
    """The policy dict the core deserializes; unset keywords keep the core's defaults."""
    policy: dict[str, Any] = {}
    if timeout_ms is not _DEFAULT:
        policy["timeout_ms"] = timeout_ms
    if retry is not None:
        policy["retry"] = retry.to_dict() if isinstance(retry, Retry) else dict(retry)
    if after is not None:
        if isinstance(after, str):
            after = [after]
        policy["after"] = list(after)
    if max_output_bytes is not None:
        policy["max_output_bytes"] = max_output_bytes
    if on_output_too_large is not None:
        policy["on_output_too_large"] = on_output_too_large
    policy.update(rest)
    return policy


#: How long ``run_sync`` waits, after the batch, for handler tasks it cancelled.
_CANCEL_GRACE_S = 1.0


def _run_to_end(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, except that leftover tasks which ignore their cancellation
    cannot keep it from returning (``asyncio.run`` waits for every task it cancels)."""
    if sys.version_info >= (3, 11):
        # The Runner's SIGINT handling (Ctrl-C cancels `main`), as asyncio.run has it.
        runner = asyncio.Runner()
        try:
            return runner.run(main)
        finally:
            _close(runner.get_loop())
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        _close(loop)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            _, stubborn = loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_GRACE_S))
            for task in stubborn:
                _log.warning("run_sync: abandoning a task that ignores cancellation: %r", task)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
