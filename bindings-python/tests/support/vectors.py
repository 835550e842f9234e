"""The conformance vector format (``tests/conformance/README.md``), read strictly.

Mirrors ``core/tests/support/conformance/vector.rs``: every key is checked against the keys
this runner implements. A vector with a key the runner does not know fails loudly; the keys
of capabilities not yet exposed in Python are listed in :data:`NOT_EXPOSED`, so those vectors
are reported as expected failures naming the keys, never passed unchecked.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIR_ENV = "TOOLJIG_CONFORMANCE_DIR"

TOP_KEYS = {
    "name",
    "engine",
    "tools",
    "caller",
    "options",
    "calls",
    "model_turn",
    "agent",
    "expect",
    "then",
    "steps",
}
THEN_KEYS = {"wait_ms", "caller", "calls", "expect"}
THEN_EXPECT_KEYS = {"results", "audit"}
ENGINE_KEYS = {
    "limits",
    "settings",
    "approval_rules",
    "external_expiry_ms",
    "resolvers",
    "policy_hook",
    "approval_predicate",
}
LIMIT_KEYS = {"max_argument_bytes", "max_depth"}
TOOL_KEYS = {"spec", "script"}
SCRIPT_KEYS = {"sleep_ms", "fail_times", "return", "echo", "error", "needs", "panic", "hang"}
OUTCOME_KEYS = ("return", "echo", "error", "needs", "panic", "hang")
SCRIPT_ERROR_KEYS = {"code", "message", "retryable"}
EXPECT_KEYS = {
    "results",
    "order",
    "overlap",
    "disjoint",
    "within_ms",
    "invocations",
    "registration_error",
    "visible",
    "model_schemas",
    "audit",
    "rollback",
    "tool_results",
}
RESULT_KEYS = {
    "call_id",
    "tool",
    "status",
    "envelope",
    "attempts",
    "repaired",
    "replayed",
    "cached",
    "arguments",
    "error_code",
    "has_detail",
    "message_contains",
    "retry_after_ms_at_most",
    "hidden",
    "approval",
    "recovered",
    "defaults",
}

#: Keys of the format whose capabilities the Python package does not expose yet. Vectors
#: using them are expected failures, naming the keys. (Every key is exposed today.)
NOT_EXPOSED: set[str] = set()


class VectorError(Exception):
    """The file is not a vector this runner understands."""


@dataclass
class Script:
    """What a scripted handler does."""

    sleep_ms: int | None = None
    fail_times: int | None = None
    outcome: str = "echo"
    value: Any = None


@dataclass
class Tool:
    """A tool of a vector: its spec and its script (None: client-side)."""

    spec: dict[str, Any]
    script: Script | None


@dataclass
class Then:
    """A later batch on the same engine (``then[]``)."""

    calls: list[dict[str, Any]]
    expect: dict[str, Any]
    wait_ms: int = 0
    caller: dict[str, Any] | None = None


@dataclass
class Vector:
    """One vector file."""

    path: Path
    name: str
    tools: list[Tool]
    calls: list[dict[str, Any]]
    expect: dict[str, Any]
    caller: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    approval_rules: dict[str, Any] | None = None
    external_expiry_ms: int | None = None
    resolvers: dict[str, dict[str, Any]] = field(default_factory=dict)
    policy_hook: dict[str, Any] | None = None
    approval_predicate: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    then: list[Then] = field(default_factory=list)
    model_turn: dict[str, Any] | None = None
    agent: dict[str, Any] | None = None


def default_dir() -> Path:
    """``$TOOLJIG_CONFORMANCE_DIR``, else the repository's ``tests/conformance``."""
    env = os.environ.get(DIR_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "tests" / "conformance"


def discover(root: Path) -> list[Path]:
    """Every ``*.json`` file under ``root``, sorted."""
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def unexposed_keys(raw: dict[str, Any]) -> list[str]:
    """The keys of :data:`NOT_EXPOSED` that a vector uses."""
    used = set()
    if isinstance(raw, dict):
        used.update(raw)
        for key in raw.get("engine", {}) if isinstance(raw.get("engine"), dict) else {}:
            used.add(f"engine.{key}")
        expect = raw.get("expect") if isinstance(raw.get("expect"), dict) else {}
        for key in expect:
            used.add(f"expect.{key}")
        for result in expect.get("results") or []:
            if isinstance(result, dict):
                for key in result:
                    used.add(f"expect.results[].{key}")
        for step in raw.get("then") or []:
            step_expect = step.get("expect") if isinstance(step, dict) else None
            for key in step_expect if isinstance(step_expect, dict) else {}:
                used.add(f"then[].expect.{key}")
    return sorted(used & NOT_EXPOSED)


def load(path: Path) -> Vector:
    """Reads and checks one vector; raises :class:`VectorError` naming an unknown key."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise VectorError(f"cannot read the vector: {e}") from e
    _only(raw, TOP_KEYS, "the vector")
    for key in ("name", "tools"):
        if key not in raw:
            raise VectorError(f"missing key {key!r}")
    from support.model import AGENT_EXPECT_KEYS, AGENT_KEYS, MODEL_TURN_KEYS

    if "model_turn" in raw:
        _only(raw["model_turn"], MODEL_TURN_KEYS, "model_turn")
    if "agent" in raw:
        _only(raw["agent"], AGENT_KEYS, "agent")
        _only(raw["agent"].get("expect", {}), AGENT_EXPECT_KEYS, "agent.expect")
    elif "expect" not in raw:
        raise VectorError("missing key 'expect'")
    engine = raw.get("engine", {})
    _only(engine, ENGINE_KEYS, "engine")
    limits = engine.get("limits")
    if limits is not None:
        _only(limits, LIMIT_KEYS, "engine.limits")
    tools = []
    for entry in raw["tools"]:
        _only(entry, TOOL_KEYS, "a tool")
        if "script" not in entry:
            raise VectorError("a tool needs `script` (null for a client-side tool)")
        tools.append(Tool(entry["spec"], _script(entry["script"])))
    expect = raw.get("expect", {})
    _only(expect, EXPECT_KEYS, "expect")
    for result in expect.get("results") or []:
        _only(result, RESULT_KEYS, "an expected result")
    steps = raw.get("steps", [])
    if not isinstance(steps, list):
        raise VectorError("`steps` must be a list")
    from support.durable import check_steps

    check_steps(steps)
    then = []
    for step in raw.get("then", []):
        _only(step, THEN_KEYS, "a then step")
        if "calls" not in step:
            raise VectorError("a then step needs `calls`")
        step_expect = step.get("expect", {})
        _only(step_expect, THEN_EXPECT_KEYS, "a then step's expect")
        for result in step_expect.get("results") or []:
            _only(result, RESULT_KEYS, "an expected result")
        then.append(Then(step["calls"], step_expect, step.get("wait_ms", 0), step.get("caller")))
    return Vector(
        then=then,
        path=path,
        name=raw["name"],
        tools=tools,
        calls=raw.get("calls", []),
        expect=expect,
        caller=raw.get("caller", {}),
        options=raw.get("options", {}),
        limits=limits,
        settings=engine.get("settings"),
        approval_rules=engine.get("approval_rules"),
        external_expiry_ms=engine.get("external_expiry_ms"),
        resolvers=engine.get("resolvers") or {},
        policy_hook=engine.get("policy_hook"),
        approval_predicate=engine.get("approval_predicate"),
        steps=steps,
        model_turn=raw.get("model_turn"),
        agent=raw.get("agent"),
    )


def _script(raw: Any) -> Script | None:
    if raw is None:
        return None
    _only(raw, SCRIPT_KEYS, "a script")
    given = [k for k in OUTCOME_KEYS if k in raw]
    if len(given) > 1:
        raise VectorError(f"a script has one outcome, this one has {', '.join(given)}")
    if raw.get("echo", True) is not True or raw.get("hang", True) is not True:
        raise VectorError("`echo` and `hang` are only ever `true`")
    if "error" in raw:
        _only(raw["error"], SCRIPT_ERROR_KEYS, "a script's error")
    outcome = given[0] if given else "echo"
    return Script(
        sleep_ms=raw.get("sleep_ms"),
        fail_times=raw.get("fail_times"),
        outcome=outcome,
        value=raw.get(outcome),
    )


def _only(obj: Any, known: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise VectorError(f"{where} must be an object, not {json.dumps(obj)[:60]}")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise VectorError(
            f"unknown key {unknown[0]!r} in {where}; this runner knows {sorted(known)} "
            "(extend bindings-python/tests/support/vectors.py for new keys)"
        )
