"""Runs every conformance vector (``tests/conformance``, or ``$TOOLJIG_CONFORMANCE_DIR``)
through the Python package, with each scripted handler written in Python: once with
``async def`` handlers and once with ``def`` handlers."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import Counter
from pathlib import Path

import pytest

import tooljig
from support import compare, durable, guards, model
from support.scripts import make_handler
from support.vectors import VectorError, default_dir, discover, load, unexposed_keys

ROOT = default_dir()
FILES = discover(ROOT) if ROOT.is_dir() else []
VECTOR_TIMEOUT_S = 60


def test_the_folder_holds_vectors() -> None:
    assert ROOT.is_dir(), f"no conformance folder at {ROOT}"
    assert FILES, f"no *.json vectors under {ROOT}"


def _params() -> list[object]:
    params = []
    for path in FILES:
        rel = str(path.relative_to(ROOT))
        try:
            raw = json.loads(path.read_text())
        except ValueError:
            raw = {}
        missing = unexposed_keys(raw)
        marks = []
        if missing:
            marks.append(
                pytest.mark.xfail(
                    reason=f"uses {', '.join(missing)}: not exposed in Python yet",
                    strict=True,
                    raises=VectorError,
                )
            )
        for flavour in ("async", "sync"):
            params.append(pytest.param(path, flavour, id=f"{rel}[{flavour}]", marks=marks))
    return params


@pytest.mark.parametrize(("path", "flavour"), _params())
async def test_vector(path: Path, flavour: str) -> None:
    vector = load(path)
    problems = await asyncio.wait_for(run(vector, sync=flavour == "sync"), VECTOR_TIMEOUT_S)
    assert not problems, f"{path.relative_to(ROOT)} ({vector.name}):\n  - " + "\n  - ".join(problems)


async def run(vector, *, sync: bool) -> list[str]:
    problems: list[str] = []
    engine = tooljig.Engine(
        limits=vector.limits,
        settings=vector.settings,
        approval_rules=vector.approval_rules,
        external_expiry_ms=vector.external_expiry_ms,
        audit=tooljig.MemoryAudit(),
        resolvers=guards.resolvers(vector.resolvers, sync=sync),
        policy_hook=guards.policy_hook(vector.policy_hook, sync=sync) if vector.policy_hook is not None else None,
        approval_predicate=durable.approval_predicate(vector.approval_predicate, sync=sync)
        if vector.approval_predicate is not None
        else None,
    )
    invocations: Counter[str] = Counter()
    lock = threading.Lock()
    error: Exception | None = None
    for tool in vector.tools:
        spec = tool.spec
        handler = None
        if tool.script is not None:
            handler = make_handler(tool.script, spec.get("name", ""), invocations, lock, sync=sync)
        try:
            engine.register(
                spec.get("name", ""),
                spec.get("description", ""),
                spec.get("input_schema"),
                handler,
                output_schema=spec.get("output_schema"),
                **spec.get("policy", {}),
            )
        except tooljig.RegistrationError as e:
            error = e
            break
    want_error = vector.expect.get("registration_error")
    if want_error is not None:
        if error is None:
            problems.append(f"registration should have failed with {want_error!r}, but every tool registered")
        elif want_error not in str(error):
            problems.append(f"registration failed with {str(error)!r}, which does not contain {want_error!r}")
        return problems
    if error is not None:
        return [f"registration failed: {error}"]

    if vector.agent is not None:
        if vector.calls or vector.model_turn is not None:
            return ["a vector with `agent` has no `calls` or `model_turn`"]
        await model.run_agent(engine, vector.caller, vector.agent, problems)
        return problems
    calls = vector.calls
    if vector.model_turn is not None:
        if calls:
            return ["a vector has `calls` or `model_turn`, not both"]
        calls = model.calls_of(vector.model_turn)
    out = await engine.run(calls, caller=vector.caller, **vector.options)
    if vector.expect.get("tool_results") is not None:
        model.check_tool_results(vector.expect["tool_results"], out, problems)
    guards.check_audit(engine, 0, out, vector.expect.get("audit"), problems)
    if vector.expect.get("results") is not None:
        compare.results(vector.expect["results"], out, problems)
    compare.timing(vector.expect, out, problems)
    specs = engine.specs_for(vector.caller)
    visible = vector.expect.get("visible")
    if visible is not None and [s["name"] for s in specs] != visible:
        problems.append(f"specs_for(caller) lists {[s['name'] for s in specs]}, expected {visible}")
    for tool, schema in (vector.expect.get("model_schemas") or {}).items():
        got = next((s["input_schema"] for s in specs if s["name"] == tool), None)
        if got != schema:
            problems.append(f"the model's schema of {tool!r} is {got}, expected {schema}")
    for i, step in enumerate(vector.then):
        if step.wait_ms:
            await asyncio.sleep(step.wait_ms / 1000)
        caller = step.caller if step.caller is not None else vector.caller
        before = len(engine.audit_query())
        later = await engine.run(step.calls, caller=caller)
        step_problems: list[str] = []
        if step.expect.get("results") is not None:
            compare.results(step.expect["results"], later, step_problems)
        guards.check_audit(engine, before, later, step.expect.get("audit"), step_problems)
        problems.extend(f"then[{i}]: {p}" for p in step_problems)
    if vector.expect.get("rollback") is not None:
        durable.check_rollback(vector.expect["rollback"], out.rollback, "expect.rollback", problems)
    await durable.run_steps(engine, vector.caller, out, vector.steps, problems)
    for tool, want in (vector.expect.get("invocations") or {}).items():
        got = invocations[tool]
        if got != want:
            problems.append(f"tool {tool!r}: its handler was invoked {got} times, expected {want}")
    return problems


def test_an_unknown_key_fails_the_vector_loudly(tmp_path: Path) -> None:
    good = {
        "name": "echo",
        "tools": [{"spec": {"name": "t"}, "script": {"echo": True}}],
        "calls": [{"id": "a", "tool": "t", "arguments": "{\"x\": 1}"}],
        "expect": {"results": [{"call_id": "a", "envelope": {"ok": True, "data": {"x": 1}}}]},
    }
    cases = {
        "top": {**good, "guardrails": {}},
        "result": {**good, "expect": {"results": [{"call_id": "a", "audit": []}]}},
        "engine": {**good, "engine": {"policy": {}}},
        "script": {**good, "tools": [{"spec": {"name": "t"}, "script": {"echo": True, "resolve": {}}}]},
        "two": {**good, "tools": [{"spec": {"name": "t"}, "script": {"echo": True, "return": 1}}]},
    }
    for name, vector in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(vector))
        with pytest.raises(VectorError):
            load(path)
    (tmp_path / "ok.json").write_text(json.dumps(good))
    assert load(tmp_path / "ok.json").name == "echo"


async def test_a_wrong_expectation_is_reported(tmp_path: Path) -> None:
    vector = {
        "name": "echo",
        "tools": [{"spec": {"name": "t"}, "script": {"echo": True}}],
        "calls": [{"id": "a", "tool": "t", "arguments": "{\"x\": 1}"}],
        "expect": {
            "results": [{"call_id": "a", "envelope": {"ok": True, "data": {"x": 2}}}],
            "order": [["a", "a"]],
            "invocations": {"t": 2},
        },
    }
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(vector))
    problems = await run(load(path), sync=False)
    text = "\n".join(problems)
    assert "at '/data/x': expected 2, got 1" in text
    assert "invoked 1 times, expected 2" in text
    assert "order ['a', 'a']" in text


def test_the_folder_can_be_overridden(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLJIG_CONFORMANCE_DIR", str(tmp_path))
    assert default_dir() == tmp_path
    monkeypatch.delenv("TOOLJIG_CONFORMANCE_DIR")
    assert default_dir() == Path(__file__).resolve().parents[2] / "tests" / "conformance"
    assert os.path.isdir(default_dir())
