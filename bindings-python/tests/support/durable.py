"""The durable-run keys of the vector format: a scripted approval predicate written in
Python, and ``steps`` that decide approvals, submit client results, resume the run and roll
it back (mirrors ``core/tests/support/conformance/durable.rs``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import tooljig
from support import compare
from support.guards import _MISSING, _pointer
from support.vectors import VectorError

STEP_KEYS = {"wait_ms", "decide", "submit", "resume", "rollback", "run", "expect"}
STEP_EXPECT_KEYS = {"results", "error", "rollback"}
DECIDE_KEYS = {"call_id", "approver", "decision", "message", "arguments", "remember", "arguments_hash", "approval_id"}
SUBMIT_KEYS = {"call_id", "result", "error", "caller"}
RUN_KEYS = {"caller", "options", "calls"}
ROLLBACK_KEYS = {"call_id"}
ERROR_KEYS = {"code", "reason"}
PREDICATE_KEYS = {"require"}
RULE_KEYS = {"tool", "pointer", "equals", "principal"}


def _only(obj: Any, known: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise VectorError(f"{where} must be an object")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise VectorError(f"unknown key {unknown[0]!r} in {where}; this runner knows {sorted(known)}")


def check_steps(steps: list[Any]) -> None:
    """Refuses a step with a key this runner does not know."""
    for i, step in enumerate(steps):
        _only(step, STEP_KEYS, f"steps[{i}]")
        _only(step.get("expect", {}), STEP_EXPECT_KEYS, f"steps[{i}].expect")
        for key, known in (("decide", DECIDE_KEYS), ("submit", SUBMIT_KEYS), ("run", RUN_KEYS), ("rollback", ROLLBACK_KEYS)):
            if key in step:
                _only(step[key], known, f"steps[{i}].{key}")
        if "error" in step.get("expect", {}):
            _only(step["expect"]["error"], ERROR_KEYS, f"steps[{i}].expect.error")


def approval_predicate(script: dict[str, Any], *, sync: bool) -> Callable[..., Any]:
    """A predicate: a call needs approval when any rule matches it."""
    _only(script, PREDICATE_KEYS, "engine.approval_predicate")
    for rule in script["require"]:
        _only(rule, RULE_KEYS, "an approval_predicate rule")

    def matches(rule: dict[str, Any], q: dict[str, Any]) -> bool:
        if "tool" in rule and rule["tool"] != q["tool"]:
            return False
        if "principal" in rule and q["caller"].get("principal") != rule["principal"]:
            return False
        if "pointer" in rule:
            got = _pointer(q["arguments"], rule["pointer"])
            if got is _MISSING or got != rule.get("equals"):
                return False
        return True

    def needed(q: dict[str, Any]) -> bool:
        return any(matches(r, q) for r in script["require"])

    if sync:
        return needed

    async def needed_async(q: dict[str, Any]) -> bool:
        return needed(q)

    return needed_async


def check_rollback(want: list[dict[str, Any]], got: dict[str, Any] | None, at: str, problems: list[str]) -> None:
    """Compares a rollback report with expected entries (each on the keys it has)."""
    entries = (got or {}).get("entries", [])
    if len(entries) != len(want):
        problems.append(f"{at}: expected {len(want)} rollback entries, got {len(entries)}: {entries}")
        return
    for i, (w, g) in enumerate(zip(want, entries)):
        for k, v in w.items():
            if g.get(k) != v:
                problems.append(f"{at}: rollback[{i}].{k} is {g.get(k)!r}, expected {v!r}")


def _check_error(refusal: tooljig.ToolError | None, want: dict[str, Any] | None, at: str, problems: list[str]) -> None:
    if refusal is None:
        if want is not None:
            problems.append(f"{at}: should have been refused with {want['code']}, but it was accepted")
        return
    if want is None:
        problems.append(f"{at}: refused unexpectedly: {refusal}")
        return
    reason = refusal.details.get("reason")
    if refusal.code.value != want["code"] or ("reason" in want and reason != want["reason"]):
        problems.append(
            f"{at}: refused with {refusal.code.value} (reason {reason!r}), "
            f"expected {want['code']} (reason {want.get('reason')!r})"
        )


async def run_steps(
    engine: tooljig.Engine,
    caller: dict[str, Any],
    first: tooljig.BatchResult,
    steps: list[dict[str, Any]],
    problems: list[str],
) -> None:
    """Runs the ``steps`` of a vector against the run of its first batch."""
    latest = first
    run_id = first.run_id or ""
    for n, step in enumerate(steps):
        at = f"steps[{n}]"
        expect = step.get("expect", {})
        if step.get("wait_ms"):
            await asyncio.sleep(step["wait_ms"] / 1000)
        actions = [k for k in ("decide", "submit", "resume", "rollback", "run") if k in step]
        if len(actions) > 1:
            problems.append(f"{at}: a step has at most one of decide, submit, resume, rollback, run")
            continue
        if "run" in step:
            r = step["run"]
            out = await engine.run(r["calls"], caller=r.get("caller", caller), **r.get("options", {}))
            found: list[str] = []
            if expect.get("results") is not None:
                compare.results(expect["results"], out, found)
            problems.extend(f"{at}: {p}" for p in found)
            if expect.get("rollback") is not None:
                check_rollback(expect["rollback"], out.rollback, at, problems)
            run_id = out.run_id or ""
            latest = out
            continue
        refusal: tooljig.ToolError | None = None
        try:
            if "decide" in step:
                d = step["decide"]
                if d["decision"] not in ("approve", "reject", "edit"):
                    problems.append(f"{at}: unknown decision {d['decision']!r}")
                    continue
                pending = latest.get(d["call_id"])
                info = pending.to_dict().get("approval") if pending is not None else None
                info = info or {}
                await engine.decide(
                    d.get("approval_id", info.get("id") or ""),
                    d["decision"],
                    arguments_hash=d.get("arguments_hash", info.get("arguments_hash", "")),
                    approver=d["approver"],
                    message=d.get("message"),
                    arguments=d.get("arguments") if d["decision"] == "edit" else None,
                    remember=d.get("remember"),
                )
            elif "submit" in step:
                s = step["submit"]
                if ("result" in s) == ("error" in s):
                    problems.append(f"{at}: submit holds exactly one of result, error")
                    continue
                if "error" in s:
                    e = s["error"]
                    await engine.submit_result(
                        run_id,
                        s["call_id"],
                        error=tooljig.ToolError(e["code"], e["message"], e.get("retryable")),
                        caller=s.get("caller", caller),
                    )
                else:
                    await engine.submit_result(run_id, s["call_id"], s["result"], caller=s.get("caller", caller))
            elif step.get("resume") is True:
                out = await engine.resume(run_id)
                found = []
                if expect.get("results") is not None:
                    compare.results(expect["results"], out, found)
                problems.extend(f"{at}: {p}" for p in found)
                if expect.get("rollback") is not None:
                    check_rollback(expect["rollback"], out.rollback, at, problems)
                latest = out
            elif "rollback" in step:
                report = await engine.rollback(run_id, step["rollback"].get("call_id"))
                if expect.get("rollback") is not None:
                    check_rollback(expect["rollback"], report, at, problems)
        except tooljig.ToolError as e:
            refusal = e
        _check_error(refusal, expect.get("error"), at, problems)
