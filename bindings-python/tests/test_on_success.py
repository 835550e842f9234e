"""A tool's ``on_success`` hook from Python (sync or async): it runs once after each call
that succeeded, with its arguments and data, out of the model's reach; never for a refusal,
a failure or a replayed duplicate; a failing hook keeps the result and says why in
``detail`` and the audit log."""

from __future__ import annotations

from typing import Any

import pytest

import tooljig


def booking_engine(sent: list[Any], audit: str = "memory") -> tooljig.Engine:
    engine = tooljig.Engine(audit=audit)

    async def notify(event: dict[str, Any], ctx: tooljig.ToolContext) -> None:
        if event["arguments"].get("note") == "boom":
            raise RuntimeError("mail server down")
        sent.append({**event, "by": ctx.caller.principal})

    @engine.tool(on_success=notify, idempotency={"mode": "arguments"})
    def book(room: int, note: str = "") -> dict[str, Any]:
        """Books a room."""
        if room == 13:
            raise tooljig.ToolError("conflict", "room 13 is taken")
        return {"booked": room}

    return engine


async def test_the_hook_runs_once_per_success_and_never_reaches_the_model() -> None:
    sent: list[Any] = []
    engine = booking_engine(sent)
    caller = {"principal": "dana"}
    out = await engine.run([{"id": "a", "tool": "book", "arguments": {"room": 7}}], caller=caller)
    r = out.get("a")
    assert r.envelope == {"ok": True, "data": {"booked": 7}}
    assert r.model_output is None and r.detail is None
    assert sent == [{"arguments": {"room": 7, "note": ""}, "result": {"booked": 7}, "by": "dana"}]

    again = await engine.run([{"id": "b", "tool": "book", "arguments": {"room": 7}}], caller=caller)
    assert again.get("b").replayed
    await engine.run(
        [
            {"id": "c", "tool": "book", "arguments": {"room": 13}},
            {"id": "d", "tool": "book", "arguments": {"room": "seven"}},
        ],
        caller=caller,
    )
    assert len(sent) == 1, sent


def test_a_failing_hook_keeps_the_result_and_the_audit_says_why() -> None:
    sent: list[Any] = []
    engine = booking_engine(sent)
    out = engine.run_sync([{"id": "a", "tool": "book", "arguments": {"room": 1, "note": "boom"}}])
    r = out.get("a")
    assert r.envelope == {"ok": True, "data": {"booked": 1}}
    assert r.detail is not None and "on_success failed" in r.detail and "mail server down" in r.detail
    [record] = engine.audit_query(tool="book")
    assert record["outcome"] == "ok" and "mail server down" in record["detail"]
    assert sent == []


def test_sync_hooks_and_register_take_on_success_too() -> None:
    engine = tooljig.Engine()
    seen: list[Any] = []
    engine.register("ping", "", None, lambda a: "pong", on_success=seen.append)
    engine.run_sync([{"id": "p", "tool": "ping", "arguments": {}}])
    assert seen == [{"arguments": {}, "result": "pong"}]
    with pytest.raises(tooljig.InvalidPolicyError, match="on_success must be a function"):
        engine.register("pong", "", None, lambda a: "ping", on_success="notify")  # type: ignore[arg-type]
