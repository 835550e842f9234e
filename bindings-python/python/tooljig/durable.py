"""Durable runs: human approvals, client-side results, resume and rollback.

A batch that must outlive the call (a call awaits approval or a client's result, or may be
rolled back) is a *run* with an id (``BatchResult.run_id``). The methods here act on runs;
:class:`tooljig.Engine` has them. Each is ``async`` with a blocking ``*_sync`` twin, like
``run``/``run_sync``. A refusal (unknown run, replayed or forged decision, late submission,
...) raises :class:`tooljig.ToolError` whose ``code`` and ``details["reason"]`` say why.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from tooljig import _native
from tooljig._native import BatchResult, Caller, InboxServer
from tooljig.errors import InvalidInputError, ToolError
from tooljig.schema import invoker_for_schema, is_async_callable

__all__ = ["DurableRuns", "MemoryStore", "SqliteStore", "StateStore"]

T = TypeVar("T")

CallerLike = Caller | Mapping[str, Any] | None

_MISSING: Any = object()

_log = logging.getLogger("tooljig")


@dataclass(frozen=True)
class MemoryStore:
    """Keeps runs, approvals and preferences in this process (the default)."""

    def _option(self) -> Any:
        return "memory"


@dataclass(frozen=True)
class SqliteStore:
    """Keeps runs, approvals and preferences in a SQLite database at ``path``: another
    process (or engine) opening the same file can decide, resume and roll back its runs."""

    path: str | os.PathLike[str]

    def _option(self) -> Any:
        return {"sqlite": os.fspath(self.path)}


@dataclass(frozen=True)
class PostgresStore:
    """Keeps runs, approvals and preferences in a PostgreSQL database: every worker, on
    every machine, that opens the same ``url`` shares them. ``url`` is libpq's
    (``postgres://user@host:5432/db``); ``?schema=NAME`` puts the tables in their own schema
    (default ``tooljig``), created with its tables on first use."""

    url: str

    def _option(self) -> Any:
        return {"postgres": self.url}


@dataclass(frozen=True)
class RedisStore:
    """Keeps runs, approvals and preferences in Redis, shared by every worker that opens the
    same ``url`` (``redis://host:port/db``, or a Redis Cluster's nodes
    ``redis+cluster://host:port,host:port``; ``?prefix=NAME`` puts the keys under their own
    prefix, default ``tooljig:``). As durable as the server's persistence: use PostgreSQL
    where losing the last writes matters."""

    url: str

    def _option(self) -> Any:
        return {"redis": self.url}


#: Any of the state stores.
StateStore = MemoryStore | SqliteStore | PostgresStore | RedisStore


def _caller(caller: CallerLike) -> dict[str, Any]:
    if caller is None:
        return {}
    if isinstance(caller, Caller):
        fields: dict[str, Any] = caller.to_dict()
        return fields
    return dict(caller)


def _outcome(what: str, result: Any, error: ToolError | None) -> dict[str, Any]:
    """A client's or a job's outcome as the core reads it: exactly one of data and error."""
    if (result is _MISSING) == (error is None):
        raise TypeError(f"{what}() takes exactly one of result and error=")
    if error is None:
        return {"result": result}
    return {
        "error": {
            "code": error.code.value,
            "message": error.message,
            "retryable": error.retryable,
            "details": error.details,
        }
    }


def _auth_hook(auth: Any) -> tuple[Any, bool]:
    """A server's auth hook as the native layer takes it: the function and whether it is async."""
    if not callable(auth):
        raise InvalidInputError(f"invalid auth: expected a function, not {auth!r}")
    return (auth, is_async_callable(auth))


def _run_id(run: str | BatchResult) -> str:
    """The id of a run given by its id or by the result of the batch that became it."""
    if isinstance(run, str):
        return run
    if run.run_id is None:
        raise InvalidInputError("this batch is not a run: none of its calls waited and no store kept it")
    return run.run_id


def _blocking(what: str, coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError(
        f"{what}_sync() blocks, so it cannot be called from a running event loop; "
        f"use `await engine.{what}(...)` there"
    )


class DurableRuns:
    """The operations on durable runs (mixed into :class:`tooljig.Engine`)."""

    _native: _native.Engine

    async def _op(self, op: str, **args: Any) -> Any:
        return await self._native.durable({"op": op, **args})

    def serve_inbox(
        self,
        *,
        tokens: Mapping[str, CallerLike] | None = None,
        auth: Callable[[dict[str, Any]], Any] | None = None,
        bind: str = "127.0.0.1:0",
    ) -> InboxServer:
        """Starts the approval inbox (docs/operators.md) over this engine's state store and
        audit log: pending requests decided in the browser by the operator a token stands for.

        Who is an operator: ``tokens`` maps bearer tokens to callers (the browser signs in
        with one); or ``auth(request)`` gets ``{"method", "path", "headers"}`` (names
        lowercased; the sign-in cookie arrives as ``authorization: Bearer ...``) and returns
        the operator (a dict or :class:`Caller`), or raises to refuse; call it on a running
        event loop then, where the hook runs. Returns the running server (``url``,
        ``stop()``)."""
        if auth is not None:
            return self._native.serve_inbox({}, bind, _auth_hook(auth))
        if not tokens:
            raise InvalidInputError("serve_inbox needs operator tokens or an auth hook")
        return self._native.serve_inbox({t: _caller(c) for t, c in tokens.items()}, bind)

    async def decide(
        self,
        approval_id: str,
        decision: Literal["approve", "reject", "edit"],
        *,
        arguments_hash: str,
        approver: CallerLike,
        message: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        remember: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Records a human decision on a pending approval request; returns the request as
        decided. ``arguments_hash`` is the one the pending result showed
        (``result.approval["arguments_hash"]``): a decision names what it approves.
        ``reject`` takes a ``message`` for the model, ``edit`` the ``arguments`` that will run
        instead, ``approve`` may ``remember`` (``{"scope": ..., ...}``) to always allow.
        Continue the run with :meth:`resume`."""
        body: dict[str, Any] = {"decision": decision, "arguments_hash": arguments_hash}
        if message is not None:
            body["message"] = message
        if arguments is not None:
            body["arguments"] = dict(arguments)
        if remember is not None:
            body["remember"] = dict(remember)
        record: dict[str, Any] = await self._op(
            "decide", approval_id=approval_id, decision=body, approver=_caller(approver)
        )
        return record

    async def approve(
        self,
        approval_id: str,
        *,
        arguments_hash: str,
        approver: CallerLike,
        remember: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Approves a pending request as asked (:meth:`decide` with ``"approve"``)."""
        return await self.decide(
            approval_id,
            "approve",
            arguments_hash=arguments_hash,
            approver=approver,
            remember=remember,
        )

    async def reject(
        self,
        approval_id: str,
        *,
        arguments_hash: str,
        approver: CallerLike,
        message: str | None = None,
    ) -> dict[str, Any]:
        """Rejects a pending request; the model sees ``message`` (:meth:`decide` with
        ``"reject"``)."""
        return await self.decide(
            approval_id, "reject", arguments_hash=arguments_hash, approver=approver, message=message
        )

    async def edit(
        self,
        approval_id: str,
        arguments: Mapping[str, Any],
        *,
        arguments_hash: str,
        approver: CallerLike,
    ) -> dict[str, Any]:
        """Approves a pending request with other ``arguments``, checked again and run exactly
        (:meth:`decide` with ``"edit"``)."""
        return await self.decide(
            approval_id, "edit", arguments_hash=arguments_hash, approver=approver, arguments=arguments
        )

    async def pending(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """The approval inbox: requests awaiting a decision, oldest first (of ``tenant`` when
        given); the same as :meth:`pending_approvals`."""
        return await self.pending_approvals(tenant)

    async def approval(self, approval_id: str) -> dict[str, Any] | None:
        """An approval request as stored, or None."""
        record: dict[str, Any] | None = await self._op("approval", approval_id=approval_id)
        return record

    async def pending_approvals(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """The approval requests awaiting a decision (of ``tenant`` when given)."""
        records: list[dict[str, Any]] = await self._op("pending_approvals", tenant=tenant)
        return records

    async def allow_always(
        self, caller: CallerLike, tool: str, values: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Lets ``caller`` use ``tool`` without asking again (for these argument ``values``
        only, when given); returns the stored preference."""
        pref: dict[str, Any] = await self._op(
            "allow_always", caller=_caller(caller), tool=tool, values=dict(values or {})
        )
        return pref

    async def preferences(self, caller: CallerLike) -> list[dict[str, Any]]:
        """The "always allow" preferences of ``caller``."""
        prefs: list[dict[str, Any]] = await self._op("preferences", caller=_caller(caller))
        return prefs

    async def revoke_preference(self, caller: CallerLike, id: str) -> bool:
        """Removes one of ``caller``'s preferences; False when it had none with this id."""
        done: bool = await self._op("revoke_preference", caller=_caller(caller), id=id)
        return done

    async def submit_result(
        self,
        run_id: str,
        call_id: str,
        result: Any = _MISSING,
        *,
        error: ToolError | None = None,
        caller: CallerLike = None,
    ) -> dict[str, Any]:
        """Completes a client-side call (``pending_external``) with the data it returned or
        the ``error`` it failed with (exactly one); returns the envelope stored. Data is
        checked against the tool's output schema. ``caller`` is who submits: a run started
        for a principal takes results from that principal (and tenant) alone. Continue the
        run with :meth:`resume`."""
        outcome = _outcome("submit_result", result, error)
        envelope: dict[str, Any] = await self._op(
            "submit_result", run_id=run_id, call_id=call_id, outcome=outcome, caller=_caller(caller)
        )
        return envelope

    async def complete_job(
        self, job: str, result: Any = _MISSING, *, error: ToolError | None = None
    ) -> dict[str, Any]:
        """Reports how the background job ``job`` ended (a handler answered
        ``Accepted(job)``): the data it produced or the ``error`` it failed with (exactly
        one). Data is checked against the tool's output schema. Any process sharing the
        engine's state store may report. Returns the job's status (``state``, ``run_id``,
        ``call_id``, ``tool``, ``envelope``, ...); continue the run with :meth:`resume` of its
        ``run_id``."""
        outcome = _outcome("complete_job", result, error)
        status: dict[str, Any] = await self._op("complete_job", job=job, outcome=outcome)
        return status

    async def job_status(self, job: str) -> dict[str, Any] | None:
        """Where the background job ``job`` stands (``state``: ``pending``, ``completed``,
        ``failed`` or ``expired``; ``run_id``, ``call_id``, ``tool``, ``arguments``,
        ``expires_at_ms``, ``envelope`` once reported), or None when no call accepted it."""
        status: dict[str, Any] | None = await self._op("job_status", job=job)
        return status

    async def pending_external(self, run_id: str) -> list[dict[str, Any]]:
        """The client-side calls of a run that await a result."""
        calls: list[dict[str, Any]] = await self._op("pending_external", run_id=run_id)
        return calls

    async def resume(self, run: str | BatchResult) -> BatchResult:
        """Continues a suspended run, named by its id or by the :class:`BatchResult` that
        suspended (a result with a pending call always has a ``run_id``, so the type needs no
        narrowing): decided and submitted calls settle, approved calls run with exactly the
        approved arguments, calls waiting on them run. Finished calls never run again.
        Handlers run as in :meth:`run` (async ones on this loop). A result that is no run
        (nothing in it waited, and no store kept it) raises :class:`InvalidInputError`."""
        out: BatchResult = await self._op("resume", run_id=_run_id(run))
        return out

    async def run_record(self, run_id: str) -> dict[str, Any] | None:
        """A run as stored (calls, caller, options, latest results, steps, rollback entries),
        or None."""
        record: dict[str, Any] | None = await self._op("run_record", run_id=run_id)
        return record

    async def cancel_run(self, run_id: str, reason: str | None = None) -> bool:
        """Asks a run to stop, in whichever process runs it (one sharing this engine's
        store): calls not yet started end ``cancelled``, running handlers see
        ``ctx.cancelled`` set, and a suspended run is cancelled by its next resume. With a
        PostgreSQL or Redis store the process running it hears at once, else at its next lease
        heartbeat (5 s by default). False when the run had already finished; ``ToolError``
        ``not_found`` when there is no such run."""
        asked: bool = await self._op("cancel_run", run_id=run_id, reason=reason)
        return asked

    async def wait_for_decisions(self, run_id: str, timeout_ms: int = 60_000) -> bool:
        """Waits until none of the run's approval requests awaits a decision (each decided,
        from any process sharing the store, or expired): True once none does, False when
        ``timeout_ms`` ran out. Woken by the decision itself (PostgreSQL and Redis stores carry
        it between processes), so an agent suspended on approvals goes on as soon as the inbox
        decides; then :meth:`resume` the run."""
        done: bool = await self._op("wait_for_decisions", run_id=run_id, timeout_ms=timeout_ms)
        return done

    async def rollback(self, run_id: str, call_id: str | None = None) -> dict[str, Any]:
        """Undoes the completed calls of a run (or only ``call_id``), latest first, through
        each tool's compensation; returns ``{"entries": [...]}``."""
        report: dict[str, Any] = await self._op("rollback", run_id=run_id, call_id=call_id)
        return report

    async def serve_operator_requests(self, worker: str | None = None) -> None:
        """Carries out operators' requests until cancelled: ``tooljig resume RUN`` and
        ``tooljig rollback RUN`` have no handlers, so they leave a request in the state store
        and wait; the app's workers serving them take each one (exactly one worker does, by a
        compare-and-set), resume or roll back the run with this engine's handlers on this
        loop, and record the answer the command prints. Woken at once with a PostgreSQL or
        Redis store, within 250 ms with SQLite. Run it as a task beside the app::

            asyncio.create_task(engine.serve_operator_requests())

        ``worker`` names this process in the answers (default ``host:pid``). A store that
        fails is retried after a second, the failure logged; cancelling the task stops the
        wait (and cancels a resume under way, as it would a batch)."""
        name = worker or f"{socket.gethostname()}:{os.getpid()}"
        while True:
            try:
                await self.serve_operator_request(name)
            except ToolError as e:
                _log.warning("serving operator requests failed, retrying: %s", e.message)
                await asyncio.sleep(1)

    async def serve_operator_request(
        self, worker: str | None = None, timeout_ms: int = 60_000
    ) -> dict[str, Any] | None:
        """Waits up to ``timeout_ms`` for one operator request, carries it out and records
        the answer (see :meth:`serve_operator_requests`); returns the answered request, or
        None when none came."""
        name = worker or f"{socket.gethostname()}:{os.getpid()}"
        served: dict[str, Any] | None = await self._op(
            "serve_operator_request", worker=name, timeout_ms=timeout_ms
        )
        return served

    async def ask_operator(
        self,
        action: Literal["resume", "rollback"],
        run_id: str,
        *,
        call_id: str | None = None,
        asked_by: str | None = None,
    ) -> dict[str, Any]:
        """What ``tooljig resume`` / ``tooljig rollback`` do, from code without the handlers
        (an admin tool): leaves the request for the app's workers and wakes them. Returns it
        (``id``, ``state: "queued"``); ``ToolError`` ``not_found`` for an unknown run."""
        request: dict[str, Any] = await self._op(
            "ask_operator", action=action, run_id=run_id, call_id=call_id, asked_by=asked_by
        )
        return request

    async def wait_operator_request(self, request_id: str, timeout_ms: int = 30_000) -> dict[str, Any]:
        """Waits for a worker's answer to request ``request_id``: ``state`` is ``answered``
        (``result`` or ``error``), or, when ``timeout_ms`` ran out, ``queued`` (no worker
        took it; it was withdrawn) or ``taken`` (a worker is still at it)."""
        request: dict[str, Any] = await self._op(
            "wait_operator_request", id=request_id, timeout_ms=timeout_ms
        )
        return request

    async def operator_request(self, request_id: str) -> dict[str, Any] | None:
        """An operator's request as stored now, or None."""
        request: dict[str, Any] | None = await self._op("operator_request", id=request_id)
        return request

    def compensate_with(self, tool: str, compensation: Callable[..., Any]) -> None:
        """Registers ``compensation(input)`` or ``compensation(input, ctx)`` as what undoes a
        call of ``tool`` on rollback; ``input`` is ``{"arguments": ..., "result": ...}`` of
        that call. ``def`` or ``async def``, like a handler."""
        if not callable(compensation):
            raise TypeError(f"compensate_with: expected a function, not {compensation!r}")
        self._native.compensate_with(
            tool, invoker_for_schema(compensation), is_async_callable(compensation)
        )

    def decide_sync(
        self,
        approval_id: str,
        decision: Literal["approve", "reject", "edit"],
        *,
        arguments_hash: str,
        approver: CallerLike,
        message: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        remember: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """:meth:`decide`, blocking."""
        return _blocking(
            "decide",
            self.decide(
                approval_id,
                decision,
                arguments_hash=arguments_hash,
                approver=approver,
                message=message,
                arguments=arguments,
                remember=remember,
            ),
        )

    def approve_sync(
        self,
        approval_id: str,
        *,
        arguments_hash: str,
        approver: CallerLike,
        remember: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """:meth:`approve`, blocking."""
        return _blocking(
            "approve",
            self.approve(
                approval_id, arguments_hash=arguments_hash, approver=approver, remember=remember
            ),
        )

    def reject_sync(
        self,
        approval_id: str,
        *,
        arguments_hash: str,
        approver: CallerLike,
        message: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`reject`, blocking."""
        return _blocking(
            "reject",
            self.reject(approval_id, arguments_hash=arguments_hash, approver=approver, message=message),
        )

    def edit_sync(
        self,
        approval_id: str,
        arguments: Mapping[str, Any],
        *,
        arguments_hash: str,
        approver: CallerLike,
    ) -> dict[str, Any]:
        """:meth:`edit`, blocking."""
        return _blocking(
            "edit",
            self.edit(approval_id, arguments, arguments_hash=arguments_hash, approver=approver),
        )

    def pending_sync(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """:meth:`pending`, blocking."""
        return _blocking("pending", self.pending(tenant))

    def approval_sync(self, approval_id: str) -> dict[str, Any] | None:
        """:meth:`approval`, blocking."""
        return _blocking("approval", self.approval(approval_id))

    def pending_approvals_sync(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """:meth:`pending_approvals`, blocking."""
        return _blocking("pending_approvals", self.pending_approvals(tenant))

    def allow_always_sync(
        self, caller: CallerLike, tool: str, values: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """:meth:`allow_always`, blocking."""
        return _blocking("allow_always", self.allow_always(caller, tool, values))

    def preferences_sync(self, caller: CallerLike) -> list[dict[str, Any]]:
        """:meth:`preferences`, blocking."""
        return _blocking("preferences", self.preferences(caller))

    def revoke_preference_sync(self, caller: CallerLike, id: str) -> bool:
        """:meth:`revoke_preference`, blocking."""
        return _blocking("revoke_preference", self.revoke_preference(caller, id))

    def submit_result_sync(
        self,
        run_id: str,
        call_id: str,
        result: Any = _MISSING,
        *,
        error: ToolError | None = None,
        caller: CallerLike = None,
    ) -> dict[str, Any]:
        """:meth:`submit_result`, blocking."""
        return _blocking(
            "submit_result", self.submit_result(run_id, call_id, result, error=error, caller=caller)
        )

    def complete_job_sync(
        self, job: str, result: Any = _MISSING, *, error: ToolError | None = None
    ) -> dict[str, Any]:
        """:meth:`complete_job`, blocking."""
        return _blocking("complete_job", self.complete_job(job, result, error=error))

    def job_status_sync(self, job: str) -> dict[str, Any] | None:
        """:meth:`job_status`, blocking."""
        return _blocking("job_status", self.job_status(job))

    def pending_external_sync(self, run_id: str) -> list[dict[str, Any]]:
        """:meth:`pending_external`, blocking."""
        return _blocking("pending_external", self.pending_external(run_id))

    def resume_sync(self, run: str | BatchResult) -> BatchResult:
        """:meth:`resume`, blocking (async handlers run on a fresh event loop)."""
        return _blocking("resume", self.resume(run))

    def run_record_sync(self, run_id: str) -> dict[str, Any] | None:
        """:meth:`run_record`, blocking."""
        return _blocking("run_record", self.run_record(run_id))

    def cancel_run_sync(self, run_id: str, reason: str | None = None) -> bool:
        """:meth:`cancel_run`, blocking."""
        return _blocking("cancel_run", self.cancel_run(run_id, reason))

    def wait_for_decisions_sync(self, run_id: str, timeout_ms: int = 60_000) -> bool:
        """:meth:`wait_for_decisions`, blocking."""
        return _blocking("wait_for_decisions", self.wait_for_decisions(run_id, timeout_ms))

    def rollback_sync(self, run_id: str, call_id: str | None = None) -> dict[str, Any]:
        """:meth:`rollback`, blocking."""
        return _blocking("rollback", self.rollback(run_id, call_id))
