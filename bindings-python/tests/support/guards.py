"""The guardrail keys of the vector format: scripted resolvers and policy hook written in
Python, and audit expectations (mirrors ``core/tests/support/conformance/guards.rs``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tooljig
from support.compare import _json, diff

#: The keys an entry of ``expect.audit`` may hold.
AUDIT_KEYS = {
    "call_id",
    "tool",
    "principal",
    "tenant",
    "session",
    "arguments",
    "hidden",
    "outcome",
    "code",
    "risk",
    "effect",
    "attempts",
    "cached",
    "replayed",
    "repaired",
}

_MISSING = object()


def _pointer(value: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or ``_MISSING``."""
    if pointer == "":
        return value
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def resolvers(tables: dict[str, dict[str, Any]], *, sync: bool) -> dict[str, Callable[..., Any]]:
    """Per resolver, a Python function answering from its table (``not_found`` otherwise)."""

    def make(table: dict[str, Any]) -> Callable[..., Any]:
        def answer(request: dict[str, Any]) -> Any:
            value = request["value"]
            return table.get(value, {"status": "not_found"}) if isinstance(value, str) else {"status": "not_found"}

        if sync:
            return answer

        async def answer_async(request: dict[str, Any]) -> Any:
            return answer(request)

        return answer_async

    return {name: make(table) for name, table in tables.items()}


def policy_hook(script: dict[str, Any], *, sync: bool) -> Callable[..., Any]:
    """A hook refusing the calls a ``deny`` rule matches (the first one's reason), allowing
    the rest."""

    def check(request: dict[str, Any]) -> Any:
        for rule in script.get("deny", []):
            if rule["tool"] != request["tool"]:
                continue
            pointer = rule.get("pointer")
            if pointer is not None and _pointer(request["arguments"], pointer) != rule.get("equals"):
                continue
            return {"allow": False, "reason": rule["reason"]}
        return True

    if sync:
        return check

    async def check_async(request: dict[str, Any]) -> Any:
        return check(request)

    return check_async


ROLLBACK_OUTCOMES = {"rolled_back", "not_reversible", "rollback_failed"}


def check_audit(
    engine: tooljig.Engine,
    before: int,
    results: tooljig.BatchResult,
    expected: list[dict[str, Any]] | None,
    problems: list[str],
) -> None:
    """Checks the records one batch added: one per call, each ``expected`` entry matching the
    record of its call on the keys it has, and the chain intact."""
    # A rollback's records (``rolled_back``, ...) come after the calls' own.
    added = [r for r in engine.audit_query()[before:] if r["outcome"] not in ROLLBACK_OUTCOMES]
    if len(added) != len(results):
        problems.append(
            f"the batch wrote {len(added)} audit records for {len(results)} calls; every call must have one"
        )
    report = engine.verify_audit()
    if report.get("broken") is not None:
        problems.append(f"the audit chain does not verify: {report}")
    for i, want in enumerate(expected or []):
        bad = sorted(set(want) - AUDIT_KEYS)
        if bad:
            problems.append(f"unknown key {bad[0]!r} in expect.audit[{i}]; expected one of {sorted(AUDIT_KEYS)}")
            continue
        call_id = want.get("call_id")
        if not isinstance(call_id, str):
            problems.append(f"expect.audit[{i}] needs a call_id")
            continue
        record = next((r for r in added if r.get("call_id") == call_id), None)
        if record is None:
            problems.append(f"no audit record for call {call_id!r}")
            continue
        for key, w in want.items():
            g = record.get(key)
            if _json(g) != _json(w):
                paths: list[str] = []
                diff(w, g, "", paths)
                problems.append(
                    f"audit record of {call_id!r}: {key} differs:\n" + "\n".join(paths)
                    + f"\n      expected: {_json(w)}\n      actual:   {_json(g)}"
                )
