"""The guardrail seams from Python: the policy hook, resolvers and the audit log
(guards.rs, engine.py, audit.py)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import tooljig

SCHEMA = {
    "type": "object",
    "properties": {"counterpart": {"type": "string"}, "connection": {"type": "string"}},
    "required": ["counterpart", "connection"],
}
HIDDEN = {"connection": {"from": "resolver", "resolver": "contacts", "input": "counterpart"}}
REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


def calls(*counterparts: str) -> list[dict[str, Any]]:
    return [{"id": c, "tool": "meet", "arguments": {"counterpart": c}} for c in counterparts]


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_the_policy_hook_decides_on_the_final_arguments(flavour: str) -> None:
    seen: list[tuple[dict[str, Any], str, bool]] = []
    loop_thread = threading.get_ident()

    def decide(request: dict[str, Any]) -> Any:
        seen.append((request, REQUEST_ID.get(), threading.get_ident() == loop_thread))
        who = request["arguments"]["counterpart"]
        if who == "Eve":
            return {"allow": False, "reason": "Eve is outside your department"}
        if who == "Mallory":
            return False
        if who == "Trent":
            raise tooljig.ToolError("conflict", "ask your manager", retryable=False)
        if who == "Oops":
            raise RuntimeError("the directory is down")
        return True

    async def decide_async(request: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return decide(request)

    engine = tooljig.Engine(policy_hook=decide if flavour == "sync" else decide_async)
    engine.register("meet", "Meets.", None, echo, risk="high")
    REQUEST_ID.set("r-1")
    out = await engine.run(calls("Ada", "Eve", "Mallory", "Trent", "Oops"), caller={"principal": "u1"})
    assert out.get("Ada").envelope == {"ok": True, "data": {"counterpart": "Ada"}}
    assert out.get("Eve").envelope["error"]["code"] == "permission_denied"
    assert out.get("Eve").envelope["error"]["message"] == "Eve is outside your department"
    assert out.get("Mallory").error_code == "permission_denied"
    assert out.get("Trent").envelope["error"]["code"] == "conflict"
    assert out.get("Trent").envelope["error"]["message"] == "ask your manager"
    # Fails closed: the model sees a sanitized error, the app the traceback.
    oops = out.get("Oops")
    assert oops.error_code == "internal_error"
    assert "the directory is down" not in json.dumps(oops.envelope)
    assert oops.detail is not None and "the directory is down" in oops.detail
    request = seen[0][0]
    assert set(request) == {"tool", "call_id", "arguments", "caller", "risk", "effect"}
    assert request["tool"] == "meet" and request["risk"] == "high"
    assert request["caller"]["principal"] == "u1"
    # Runs in a copy of the caller's context; async on the loop, sync off it.
    assert {s[1] for s in seen} == {"r-1"}
    assert {s[2] for s in seen} == {flavour == "async"}


def test_a_policy_hook_answer_of_the_wrong_shape_fails_closed() -> None:
    engine = tooljig.Engine(policy_hook=lambda request: "yes")
    engine.register("meet", "Meets.", None, echo)
    r = engine.run_sync(calls("Ada"))[0]
    assert r.error_code == "internal_error"
    assert r.detail is not None and "return True, False" in r.detail


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_resolvers_fill_hidden_parameters(flavour: str) -> None:
    table: dict[str, Any] = {
        "Aviad": {"status": "found", "value": "conn_42"},
        "Dana": {"status": "ambiguous", "candidates": ["Dana Levi", "Dana Cohen"]},
    }
    asked: list[dict[str, Any]] = []

    def resolve(request: dict[str, Any]) -> Any:
        asked.append(request)
        if request["value"] == "Boom":
            return {"status": "maybe"}
        return table.get(request["value"], {"status": "not_found"})

    async def resolve_async(request: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return resolve(request)

    engine = tooljig.Engine(resolvers={"contacts": resolve if flavour == "sync" else resolve_async})
    engine.register("meet", "Meets.", SCHEMA, echo, hidden=HIDDEN)
    assert engine.specs_for()[0]["input_schema"]["required"] == ["counterpart"]
    out = await engine.run(calls("Aviad", "Dana", "Zed", "Boom"), caller={"principal": "u1"})
    assert out.get("Aviad").envelope == {"ok": True, "data": {"counterpart": "Aviad", "connection": "conn_42"}}
    assert out.get("Dana").envelope["error"]["candidates"] == ["Dana Levi", "Dana Cohen"]
    assert out.get("Zed").error_code == "not_found"
    boom = out.get("Boom")
    assert boom.error_code == "internal_error"
    assert boom.detail is not None and "invalid resolution" in boom.detail
    aviad = next(a for a in asked if a["value"] == "Aviad")
    assert aviad == {
        "tool": "meet",
        "parameter": "connection",
        "input": "counterpart",
        "value": "Aviad",
        "caller": aviad["caller"],
    }
    assert aviad["caller"]["principal"] == "u1"


def test_app_callables_are_checked_at_construction(tmp_path: Path) -> None:
    with pytest.raises(tooljig.InvalidInputError, match="policy_hook"):
        tooljig.Engine(policy_hook=42)  # type: ignore[arg-type]
    with pytest.raises(tooljig.InvalidInputError, match="resolvers\\['contacts'\\]"):
        tooljig.Engine(resolvers={"contacts": "nope"})  # type: ignore[dict-item]
    # A bare path is not a URL: the message says what is.
    with pytest.raises(tooljig.InvalidInputError, match="invalid audit: .* is not a URL; expected e.g. .memory. or .sqlite://"):
        tooljig.Engine(audit=str(tmp_path / "a.db"))
    with pytest.raises(tooljig.InvalidInputError, match="SqliteAudit"):
        tooljig.Engine(audit=3)  # type: ignore[arg-type]
    with pytest.raises(tooljig.InvalidInputError, match="no audit log"):
        tooljig.Engine().audit_query()
    with pytest.raises(tooljig.InvalidInputError, match="audit"):
        tooljig.Engine(audit=tooljig.SqliteAudit(tmp_path / "missing" / "dir" / "a.db"))


@pytest.mark.parametrize("sink", ["memory", "sqlite", "jsonl"])
def test_the_audit_log_records_every_call_and_verifies(sink: str, tmp_path: Path) -> None:
    audit: tooljig.MemoryAudit | tooljig.SqliteAudit | tooljig.JsonlAudit = {
        "memory": tooljig.MemoryAudit(),
        "sqlite": tooljig.SqliteAudit(tmp_path / "audit.db"),
        "jsonl": tooljig.JsonlAudit(tmp_path / "audit.jsonl"),
    }[sink]
    engine = tooljig.Engine(audit=audit, policy_hook=lambda r: r["arguments"].get("counterpart") != "Eve")
    engine.register("meet", "Meets.", None, echo)
    engine.run_sync(calls("Ada", "Eve"), caller={"principal": "u1", "tenant": "t1"})
    engine.run_sync(calls("Bob"), caller={"principal": "u2"})
    # Records come in the order calls settled: a batch's in any order, batches in order.
    records = engine.audit_query()
    assert sorted(r["call_id"] for r in records[:2]) == ["Ada", "Eve"] and records[2]["call_id"] == "Bob"
    eve = next(r for r in records if r["call_id"] == "Eve")
    assert eve["outcome"] == "error" and eve["code"] == "permission_denied"
    assert eve["principal"] == "u1" and eve["tenant"] == "t1"
    assert sorted(r["call_id"] for r in engine.audit_query(principal="u1")) == ["Ada", "Eve"]
    assert [r["call_id"] for r in engine.audit_query(code="permission_denied")] == ["Eve"]
    assert [r["call_id"] for r in engine.audit_query(limit=1)] == ["Bob"]
    assert engine.verify_audit() == {"records": 3, "broken": None}
    with pytest.raises(tooljig.InvalidInputError, match="audit query"):
        engine._native.audit_query({"principle": "u1"})
    if sink == "jsonl":
        # Tampering with a stored record breaks the chain at that record.
        path = tmp_path / "audit.jsonl"
        lines = path.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if "permission_denied" in line)
        lines[at] = lines[at].replace("permission_denied", "invalid_request")
        path.write_text("\n".join(lines) + "\n")
        fresh = tooljig.Engine(audit=tooljig.JsonlAudit(path))
        report = fresh.verify_audit()
        assert report["broken"] is not None and report["broken"]["seq"] >= 1


def test_a_sealed_anchored_audit_log_catches_records_cut_off_its_end(tmp_path: Path) -> None:
    import sqlite3

    db, anchor = tmp_path / "audit.db", tmp_path / "elsewhere.anchor"
    key = b"k" * 32
    engine = tooljig.Engine(audit=tooljig.SqliteAudit(db), seal_key=key, audit_anchor=anchor)
    engine.register("meet", "Meets.", None, echo)
    engine.run_sync(calls("Ada", "Bob", "Cy"), caller={"principal": "u1"})
    assert engine.verify_audit() == {"records": 3, "broken": None}
    del engine
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM audit_log WHERE seq = 3")
    conn.close()
    # Reading the log again with the key: the cut is named; the log is not continued.
    with pytest.raises(tooljig.InvalidInputError, match="removed from the end"):
        tooljig.Engine(audit=tooljig.SqliteAudit(db), seal_key=key, audit_anchor=anchor)
    # Without the key (or with another) a keyed log is not continued either.
    with pytest.raises(tooljig.InvalidInputError, match="sealed with a key"):
        tooljig.Engine(audit=tooljig.SqliteAudit(db))
    with pytest.raises(tooljig.InvalidInputError, match="32 bytes"):
        tooljig.Engine(seal_key="short")
    # Hex digits with a two-byte character among them: refused, not a panic.
    with pytest.raises(tooljig.InvalidInputError, match="hex key"):
        tooljig.Engine(seal_key="hex:a\u00e9b" + "6b" * 32)
