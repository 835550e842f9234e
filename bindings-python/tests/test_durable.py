"""Durable runs from Python: approvals, the approval predicate, client results, resume by
another engine, preferences and rollback (durable.rs, durable.py)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import tooljig

MAIL = {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to"]}
ALICE = {"principal": "alice", "tenant": "acme"}
RITA = {"principal": "rita", "tenant": "acme", "roles": ["reviewer"]}


def mail_engine(log: list[str], **options: Any) -> tooljig.Engine:
    """An engine whose `send_email` needs a reviewer's approval; its async handler records
    the thread it ran on, so a resume can be seen running it on the caller's loop."""
    engine = tooljig.Engine(approval_rules={"min_risk": "high"}, **options)

    async def send_email(args: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        log.append(f"sent {args['to']} {args.get('body')} by {ctx.caller.principal} on {threading.get_ident()}")
        return {"sent": args["to"]}

    engine.register(
        "send_email", "Sends mail.", MAIL, send_email, risk="high", approval={"approver_roles": ["reviewer"]}
    )
    engine.register("search", "Searches.", None, lambda args: args)
    return engine


def mail_calls() -> list[dict[str, Any]]:
    return [
        {"id": "mail", "tool": "send_email", "arguments": {"to": "bob@x.io", "body": "hi"}},
        {"id": "after", "tool": "search", "arguments": {"sent": {"$from": "mail", "pointer": "/sent"}}},
    ]


async def test_an_approved_call_runs_on_resume_on_the_callers_loop() -> None:
    log: list[str] = []
    engine = mail_engine(log)
    out = await engine.run(mail_calls(), caller=ALICE)
    mail = out.get("mail")
    assert mail is not None and mail.status == "pending_approval" and out.run_id
    assert mail.envelope["error"]["code"] == "pending_approval"
    approval = mail["approval"]
    pending = await engine.pending_approvals("acme")
    assert [p["id"] for p in pending] == [approval["id"]]
    assert (await engine.approval(approval["id"]))["status"] == "pending"
    decided = await engine.decide(
        approval["id"], "approve", arguments_hash=approval["arguments_hash"], approver=RITA
    )
    assert decided["status"] == "approved"
    resumed = await engine.resume(out.run_id)
    assert resumed.run_id == out.run_id
    assert resumed.get("mail").envelope == {"ok": True, "data": {"sent": "bob@x.io"}}
    assert resumed.get("after").envelope == {"ok": True, "data": {"sent": "bob@x.io"}}
    assert log == [f"sent bob@x.io hi by alice on {threading.get_ident()}"]
    # Finished calls never run again.
    again = await engine.resume(out.run_id)
    assert again.get("mail").envelope["ok"] and len(log) == 1
    record = await engine.run_record(out.run_id)
    assert record is not None and record["state"] == "finished"
    assert await engine.run_record("nope") is None


async def test_refusals_raise_tool_error_with_code_and_reason() -> None:
    engine = mail_engine([])
    out = await engine.run(mail_calls(), caller=ALICE)
    approval = out.get("mail")["approval"]

    async def refusal(coro: Any) -> tuple[str, Any]:
        with pytest.raises(tooljig.ToolError) as e:
            await coro
        return e.value.code.value, e.value.details.get("reason")

    good = {"arguments_hash": approval["arguments_hash"]}
    assert await refusal(engine.decide(approval["id"], "approve", **good, approver=ALICE)) == (
        "permission_denied",
        "not_an_approver",
    )
    assert await refusal(engine.decide(approval["id"], "approve", arguments_hash="forged", approver=RITA)) == (
        "conflict",
        "arguments_mismatch",
    )
    assert await refusal(engine.decide("unknown", "approve", **good, approver=RITA)) == (
        "not_found",
        "unknown_approval",
    )
    await engine.decide(approval["id"], "reject", **good, approver=RITA, message="not to Bob")
    assert await refusal(engine.decide(approval["id"], "approve", **good, approver=RITA)) == (
        "conflict",
        "already_decided",
    )
    assert await refusal(engine.resume("no-such-run")) == ("not_found", "unknown_run")
    assert await refusal(engine.rollback("no-such-run")) == ("not_found", "unknown_run")
    resumed = await engine.resume(out.run_id)
    rejected = resumed.get("mail").envelope["error"]
    assert rejected["code"] == "approval_rejected" and "not to Bob" in rejected["message"]
    with pytest.raises(tooljig.InvalidInputError):
        await engine.decide(approval["id"], "maybe", **good, approver=RITA)  # type: ignore[arg-type]


async def test_an_edit_runs_exactly_the_edited_arguments() -> None:
    log: list[str] = []
    engine = mail_engine(log)
    out = await engine.run(mail_calls()[:1], caller=ALICE)
    approval = out[0]["approval"]
    await engine.decide(
        approval["id"],
        "edit",
        arguments_hash=approval["arguments_hash"],
        approver=RITA,
        arguments={"to": "carol@x.io", "body": "edited"},
    )
    resumed = await engine.resume(out.run_id)
    assert resumed[0].envelope == {"ok": True, "data": {"sent": "carol@x.io"}}
    assert log[0].startswith("sent carol@x.io edited")


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_the_approval_predicate_decides_which_calls_need_approval(flavour: str) -> None:
    seen: list[dict[str, Any]] = []

    def needed(query: dict[str, Any]) -> bool:
        seen.append(query)
        if query["arguments"].get("to") == "boom@x.io":
            raise RuntimeError("the rules service is down")
        return bool(query["arguments"]["to"].endswith("@external.io"))

    async def needed_async(query: dict[str, Any]) -> bool:
        await asyncio.sleep(0)
        return needed(query)

    engine = tooljig.Engine(approval_predicate=needed if flavour == "sync" else needed_async)
    engine.register("send_email", "Sends mail.", MAIL, lambda args: "sent", approval={})
    calls = [
        {"id": "in", "tool": "send_email", "arguments": {"to": "bob@x.io"}},
        {"id": "out", "tool": "send_email", "arguments": {"to": "eve@external.io"}},
        {"id": "boom", "tool": "send_email", "arguments": {"to": "boom@x.io"}},
    ]
    out = await engine.run(calls, caller=ALICE)
    assert out.get("in").envelope == {"ok": True, "data": "sent"}
    assert out.get("out").status == "pending_approval"
    assert out.get("boom").status == "pending_approval", "a failing predicate fails closed"
    assert {q["arguments"]["to"] for q in seen} == {"bob@x.io", "eve@external.io", "boom@x.io"}
    assert seen[0]["caller"]["principal"] == "alice" and seen[0]["tool"] == "send_email"


async def test_client_results_complete_the_run() -> None:
    engine = tooljig.Engine(external_expiry_ms=60_000)
    engine.register(
        "ask_user",
        "Asks the user.",
        {"type": "object"},
        None,
        output_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
    )
    engine.register("echo", "Echoes.", None, lambda args: args)
    calls = [
        {"id": "q", "tool": "ask_user", "arguments": {"question": "Which day?"}},
        {"id": "q2", "tool": "ask_user", "arguments": {"question": "Which room?"}},
        {"id": "e", "tool": "echo", "arguments": {"day": {"$from": "q", "pointer": "/answer"}}},
    ]
    out = await engine.run(calls, caller=ALICE)
    assert out.get("q").status == "pending_external" and out.get("e").status == "waiting"
    pending = await engine.pending_external(out.run_id)
    assert sorted(p["call_id"] for p in pending) == ["q", "q2"]
    with pytest.raises(tooljig.ToolError) as bad:
        await engine.submit_result(out.run_id, "q", {"answer": 3}, caller=ALICE)
    assert bad.value.code.value == "invalid_output" and bad.value.details["reason"] == "invalid_result"
    with pytest.raises(tooljig.ToolError) as stranger:
        await engine.submit_result(out.run_id, "q", {"answer": "Monday"}, caller={"principal": "mallory", "tenant": "acme"})
    assert stranger.value.code.value == "permission_denied" and stranger.value.details["reason"] == "not_the_caller"
    with pytest.raises(tooljig.ToolError):
        await engine.submit_result(out.run_id, "q", {"answer": "Monday"})  # anonymous: refused too
    assert await engine.submit_result(out.run_id, "q", {"answer": "Tuesday"}, caller=ALICE) == {
        "ok": True,
        "data": {"answer": "Tuesday"},
    }
    failed = await engine.submit_result(
        out.run_id, "q2", error=tooljig.ToolError("not_found", "no rooms", retryable=False, floor=3), caller=ALICE
    )
    assert failed["error"] == {"code": "not_found", "message": "no rooms", "retryable": False, "floor": 3}
    with pytest.raises(tooljig.ToolError) as dup:
        await engine.submit_result(out.run_id, "q", {"answer": "Friday"}, caller=ALICE)
    assert dup.value.details["reason"] == "duplicate"
    with pytest.raises(TypeError):
        await engine.submit_result(out.run_id, "q")
    resumed = await engine.resume(out.run_id)
    assert resumed.get("e").envelope == {"ok": True, "data": {"day": "Tuesday"}}
    assert resumed.get("q2").error_code == "not_found"


def test_another_engine_on_the_same_sqlite_store_resumes_the_run(tmp_path: Path) -> None:
    store = tooljig.SqliteStore(tmp_path / "runs.db")
    log: list[str] = []
    first = mail_engine(log, state_store=store)
    out = first.run_sync(mail_calls(), caller=ALICE)
    approval = out.get("mail")["approval"]
    # Another process would build its own engine on the same file: a decision and the
    # resume there, with sync twins (no event loop here).
    second = mail_engine(log, state_store=store)
    second.decide_sync(approval["id"], "approve", arguments_hash=approval["arguments_hash"], approver=RITA)
    resumed = second.resume_sync(out.run_id)
    assert resumed.get("after").envelope == {"ok": True, "data": {"sent": "bob@x.io"}}
    assert len(log) == 1
    assert first.run_record_sync(out.run_id)["state"] == "finished"
    with pytest.raises(tooljig.InvalidInputError, match="state_store"):
        tooljig.Engine(state_store=tooljig.SqliteStore(tmp_path / "missing" / "runs.db"))
    with pytest.raises(tooljig.InvalidInputError, match="state_store"):
        tooljig.Engine(state_store="disk")
    with pytest.raises(tooljig.InvalidInputError, match="state_store"):
        tooljig.Engine(state_store=3)  # type: ignore[arg-type]


async def test_sync_twins_refuse_to_run_inside_an_event_loop() -> None:
    engine = tooljig.Engine()
    with pytest.raises(RuntimeError, match="await engine.resume"):
        engine.resume_sync("r")


def test_always_allow_preferences_can_be_listed_and_revoked() -> None:
    engine = mail_engine([])
    pref = engine.allow_always_sync(ALICE, "send_email", {"to": "bob@x.io"})
    assert pref["tool"] == "send_email"
    out = engine.run_sync(mail_calls()[:1], caller=ALICE)
    assert out[0].envelope == {"ok": True, "data": {"sent": "bob@x.io"}}, "the preference skips approval"
    assert [p["id"] for p in engine.preferences_sync(ALICE)] == [pref["id"]]
    assert engine.preferences_sync({"principal": "bob", "tenant": "acme"}) == []
    assert engine.revoke_preference_sync(ALICE, pref["id"]) is True
    assert engine.revoke_preference_sync(ALICE, pref["id"]) is False
    assert engine.run_sync(mail_calls()[:1], caller=ALICE)[0].status == "pending_approval"


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_rollback_runs_python_compensations_latest_first(flavour: str) -> None:
    undone: list[tuple[str, Any, bool]] = []
    loop_thread = threading.get_ident()
    engine = tooljig.Engine(audit="memory")
    engine.register("book", "Books.", None, lambda args: {"booking": f"b-{args['room']}"}, compensation="unbook")
    engine.register("unbook", "Unused as a tool.", None, lambda args: None)
    engine.register("charge", "Charges.", None, lambda args: {"charge": "ch_1"})

    def undo(request: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        undone.append((request["result"]["booking"], request["arguments"], threading.get_ident() == loop_thread))
        return {"cancelled": True}

    async def undo_async(request: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        return undo(request, ctx)

    engine.compensate_with("book", undo if flavour == "sync" else undo_async)
    out = await engine.run(
        [
            {"id": "b1", "tool": "book", "arguments": {"room": 1}},
            {"id": "b2", "tool": "book", "arguments": {"room": 2}, "depends_on": ["b1"]},
            {"id": "c", "tool": "charge", "arguments": {}},
        ],
        caller=ALICE,
    )
    assert out.run_id, "a run with compensable calls is kept"
    report = await engine.rollback(out.run_id)
    outcomes = {e["call_id"]: e["outcome"] for e in report["entries"]}
    assert outcomes["b1"] == outcomes["b2"] == "compensated"
    assert outcomes["c"] == "not_reversible"
    assert [u[0] for u in undone] == ["b-2", "b-1"], "latest first"
    assert undone[0][1] == {"room": 2}
    assert {u[2] for u in undone} == {flavour == "async"}, "async compensations run on the loop"
    # The audit log says what the rollback undid and what stays, after the calls' own records.
    audited = {(r["call_id"], r["outcome"]) for r in engine.audit_query(principal=ALICE["principal"])[-3:]}
    assert audited == {("b2", "rolled_back"), ("b1", "rolled_back"), ("c", "not_reversible")}
    # Each compensation runs once, however often the run is rolled back.
    again = await engine.rollback(out.run_id, "b1")
    assert len(undone) == 2 and again["entries"][0]["call_id"] == "b1"
    with pytest.raises(TypeError):
        engine.compensate_with("book", "nope")  # type: ignore[arg-type]


async def test_rollback_has_nothing_to_undo_for_a_read_only_call() -> None:
    engine = tooljig.Engine()
    engine.register("lookup", "Reads.", None, lambda args: {"free": True}, effect="read")
    engine.register("book", "Books.", None, lambda args: {"booking": "b-1"}, compensation="unbook")
    engine.register("unbook", "Cancels.", None, lambda args: None)
    out = await engine.run(
        [
            {"id": "l", "tool": "lookup", "arguments": {}},
            {"id": "b", "tool": "book", "arguments": {}, "depends_on": ["l"]},
        ],
        caller=ALICE,
    )
    assert out.run_id
    report = await engine.rollback(out.run_id)
    entries = {e["call_id"]: e for e in report["entries"]}
    assert entries["l"]["outcome"] == "nothing_to_undo"
    assert "cannot be undone" not in entries["l"]["message"]
    assert entries["b"]["outcome"] == "compensated"


async def test_approve_reject_edit_and_pending_mirror_the_other_languages() -> None:
    log: list[str] = []
    engine = mail_engine(log)
    calls = [
        {"id": k, "tool": "send_email", "arguments": {"to": f"{k}@x.io", "body": "hi"}}
        for k in ("a", "r", "e")
    ]
    out = await engine.run(calls, caller=ALICE)
    assert out.run_id
    inbox = await engine.pending("acme")
    assert len(inbox) == 3
    info = {k: out.get(k)["approval"] for k in ("a", "r", "e")}  # type: ignore[index]
    await engine.approve(info["a"]["id"], arguments_hash=info["a"]["arguments_hash"], approver=RITA)
    rejected = await engine.reject(
        info["r"]["id"], arguments_hash=info["r"]["arguments_hash"], approver=RITA, message="no"
    )
    assert rejected["status"] == "rejected"
    await engine.edit(
        info["e"]["id"],
        {"to": "carol@x.io", "body": "edited"},
        arguments_hash=info["e"]["arguments_hash"],
        approver=RITA,
    )
    assert await engine.pending("acme") == []
    done = await engine.resume(out.run_id)
    assert done.get("a").envelope["ok"] and done.get("e").envelope["ok"]  # type: ignore[union-attr]
    assert done.get("r").envelope["error"]["code"] == "approval_rejected"  # type: ignore[union-attr]
    assert sorted(line.split(" by ")[0] for line in log) == ["sent a@x.io hi", "sent carol@x.io edited"]


async def test_a_submitted_error_cannot_override_its_code_with_a_detail() -> None:
    engine = tooljig.Engine()
    engine.register("ask_user", "Asks the user.", {"type": "object"}, None)
    out = await engine.run([{"id": "q", "tool": "ask_user", "arguments": {}}], caller=ALICE)
    assert out.run_id
    error = tooljig.ToolError("not_found", "no rooms")
    error.details.update({"code": "ok", "message": "pwned", "retryable": True, "floor": 3})
    failed = await engine.submit_result(out.run_id, "q", error=error, caller=ALICE)
    assert failed["error"] == {"code": "not_found", "message": "no rooms", "retryable": False, "floor": 3}


async def test_an_edit_passes_every_guard_again() -> None:
    ran: list[dict[str, Any]] = []
    engine = tooljig.Engine(
        approval_rules={"min_risk": "high"},
        policy_hook=lambda request: request["arguments"]["amount"] <= 500
        or {"allow": False, "reason": f"{request['arguments']['amount']} is over the limit"},
    )
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "integer"}, "account": {"type": "string"}},
        "required": ["amount", "account"],
        "additionalProperties": False,
    }
    engine.register(
        "transfer", "Moves money.", schema, lambda args: ran.append(args) or args,
        risk="high", hidden={"account": {"from": "principal"}},
    )

    async def ask() -> tuple[str, Any]:
        out = await engine.run([{"id": "t", "tool": "transfer", "arguments": {"amount": 100}}], caller=ALICE)
        assert out.run_id
        return out.run_id, out.get("t")["approval"]  # type: ignore[index]

    run_id, info = await ask()
    with pytest.raises(tooljig.ToolError) as hidden:
        await engine.edit(info["id"], {"amount": 100, "account": "mallory"}, arguments_hash=info["arguments_hash"], approver=ALICE)
    assert (hidden.value.code.value, hidden.value.details["reason"]) == ("invalid_arguments", "hidden_argument")
    await engine.edit(info["id"], {"amount": 100_000, "account": "alice"}, arguments_hash=info["arguments_hash"], approver=ALICE)
    refused = (await engine.resume(run_id)).get("t")
    assert refused is not None and refused.error_code == "permission_denied"
    assert "over the limit" in refused.envelope["error"]["message"]
    assert ran == []

    run_id, info = await ask()
    await engine.edit(info["id"], {"amount": 400, "account": "alice"}, arguments_hash=info["arguments_hash"], approver=ALICE)
    done = (await engine.resume(run_id)).get("t")
    assert done is not None and done.envelope == {"ok": True, "data": {"amount": 400, "account": "alice"}}
    assert ran == [{"amount": 400, "account": "alice"}]


def test_reading_the_files_with_pythons_own_sqlite3_loses_nothing(tmp_path: Path) -> None:
    """The state store and the audit log are plain SQLite files apps read with ``sqlite3``.
    Two copies of SQLite in one process would let the app's connection, on close, delete the
    write-ahead log under tooljig's open one; tooljig links the SQLite Python itself uses."""
    import sqlite3

    runs: list[int] = []
    state, audit = tmp_path / "state.db", tmp_path / "audit.db"
    engine = tooljig.Engine(state_store=tooljig.SqliteStore(state), audit=tooljig.SqliteAudit(audit))
    engine.register(
        "charge", "Charges.", None, lambda args: runs.append(args["n"]) or args,
        effect="write", idempotency={"mode": "key"},
    )

    def charge(n: int) -> None:
        out = engine.run_sync(
            [{"id": f"c{n}", "tool": "charge", "arguments": {"n": n}, "idempotency_key": f"charge-{n}"}],
            caller=ALICE,
        )
        assert out.results[0].envelope["ok"], out.results[0].envelope

    for n in range(3):
        charge(n)
        for path in (state, audit):
            conn = sqlite3.connect(path)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            conn.close()
    for n in range(3):
        charge(n)
    assert runs == [0, 1, 2], "a finished idempotent call ran again"
    with sqlite3.connect(audit) as conn:
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 6
    conn.close()
    assert engine.verify_audit() == {"records": 6, "broken": None}
    del engine
    fresh = tooljig.Engine(state_store=tooljig.SqliteStore(state))
    fresh.register("charge", "Charges.", None, lambda args: runs.append(args["n"]) or args,
                   effect="write", idempotency={"mode": "key"})
    out = fresh.run_sync([{"id": "c1", "tool": "charge", "arguments": {"n": 1}, "idempotency_key": "charge-1"}], caller=ALICE)
    assert out.results[0].replayed and runs == [0, 1, 2]


async def test_ctx_idempotency_key_is_stable_for_a_call_and_effect_class_is_a_policy() -> None:
    seen: list[tuple[str, int, str]] = []
    engine = tooljig.Engine()

    def pay(args: dict[str, Any], ctx: tooljig.ToolContext) -> str:
        seen.append((ctx.call_id, ctx.attempt, ctx.idempotency_key))
        if ctx.attempt == 1:
            raise tooljig.ToolError("external_api_error", "flaky", retryable=True)
        return "paid"

    engine.register("pay", "Pays.", None, pay, effect_class="idempotent", retry={"attempts": 2, "backoff_ms": 1})
    out = await engine.run([{"id": "a", "tool": "pay"}, {"id": "b", "tool": "pay", "idempotency_key": "req-42"}])
    assert all(r.envelope["ok"] for r in out.results)
    keys = {c: {k for cid, _, k in seen if cid == c} for c in ("a", "b")}
    assert len(keys["a"]) == 1 and len(keys["b"]) == 1
    assert next(iter(keys["a"])).startswith("tj_") and keys["a"] != keys["b"]
    await engine.run([{"id": "other", "tool": "pay", "idempotency_key": "req-42"}])
    assert seen[-1][2] in keys["b"]
    assert [s["policy"].get("effect_class") for s in engine.specs()] == ["idempotent"]
    with pytest.raises(tooljig.RegistrationError):
        engine.register("bad", "Bad.", None, pay, effect_class="sometimes")


async def test_concurrency_bounds_the_handlers_while_calls_wait_for_the_store_together(tmp_path: Path) -> None:
    """docs/deployment.md, "A batch and its store": a call waiting for its idempotency claim
    gives its place up, yet never more than ``concurrency`` handlers run at once, each call
    runs once, and the same batch again replays every call."""
    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'state.db'}")
    running, most, ran = 0, 0, []

    async def pay(args: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.002)
        running -= 1
        ran.append(args["n"])
        return {"paid": args["n"]}

    engine.register("pay", "Pays.", {"type": "object", "properties": {"n": {"type": "integer"}}}, pay,
                    idempotency={"mode": "arguments"})
    calls = [{"id": f"c{n}", "tool": "pay", "arguments": {"n": n}} for n in range(60)]
    out = await engine.run(calls, caller=ALICE, concurrency=3)
    assert [r.envelope for r in out.results] == [{"ok": True, "data": {"paid": n}} for n in range(60)]
    assert 1 <= most <= 3, f"{most} handlers at once"
    assert sorted(ran) == list(range(60))
    again = await engine.run(calls, caller=ALICE, concurrency=3)
    assert all(r.replayed for r in again.results) and len(ran) == 60


def test_resume_takes_the_batch_result_that_suspended() -> None:
    """``resume(out)``: a result with a pending call is a run, so no ``run_id`` to narrow."""
    engine = tooljig.Engine()

    @engine.tool(approval={"required": "always"})
    def send(to: str) -> dict[str, str]:
        return {"sent": to}

    @engine.tool
    def echo(text: str) -> str:
        return text

    out = engine.run_sync([{"id": "s", "tool": "send", "arguments": {"to": "bo"}}], caller=ALICE)
    approval = out[0]["approval"]
    engine.approve_sync(approval["id"], arguments_hash=approval["arguments_hash"], approver=ALICE)
    assert engine.resume_sync(out)[0].envelope == {"ok": True, "data": {"sent": "bo"}}
    plain = engine.run_sync([{"id": "e", "tool": "echo", "arguments": {"text": "hi"}}])
    assert plain.run_id is None
    with pytest.raises(tooljig.InvalidInputError, match="not a run"):
        engine.resume_sync(plain)
