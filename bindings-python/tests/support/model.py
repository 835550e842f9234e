"""The model-facing part of the vector format: a batch taken from a provider's response
(``model_turn``), the tool results each provider gets back (``expect.tool_results``), and an
agent run with a scripted model (``agent``). Mirrors
``core/tests/support/conformance/model.rs``."""

from __future__ import annotations

import json
from typing import Any

import tooljig
from tooljig.providers import Provider, into_batch

MODEL_TURN_KEYS = {"provider", "response"}
AGENT_KEYS = {"model", "message", "expect"}
AGENT_EXPECT_KEYS = {"status", "answer", "counters", "messages", "requests"}


def calls_of(model_turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls a provider's response asks for."""
    turn = Provider(model_turn["provider"]).parse_response(model_turn["response"])
    calls, refused = into_batch(turn)
    if refused:
        raise AssertionError(f"model_turn: {len(refused)} call(s) were cut off")
    return calls


def placeholders(value: Any, out: tooljig.BatchResult) -> Any:
    """``value`` with the batch's approval ids and run id replaced by their placeholders."""
    text = json.dumps(value, ensure_ascii=False)
    for r in out:
        approval = r.to_dict().get("approval")
        if approval and approval.get("id"):
            text = text.replace(approval["id"], "<approval_id>")
    if out.run_id:
        text = text.replace(out.run_id, "<run_id>")
    return json.loads(text)


def check_tool_results(want: dict[str, Any], out: tooljig.BatchResult, problems: list[str]) -> None:
    """Per provider, the exact messages or blocks ``tool_results`` gives for the batch."""
    for name, expected in want.items():
        got = placeholders(Provider(name).tool_results(out), out)
        if got != expected:
            problems.append(f"expect.tool_results.{name}: got {json.dumps(got)}, expected {json.dumps(expected)}")


async def run_agent(engine: tooljig.Engine, caller: Any, run: dict[str, Any], problems: list[str]) -> None:
    """Runs the agent loop with a scripted model and checks ``agent.expect``."""
    model = tooljig.ScriptedModel("scripted", run["model"])
    state = tooljig.AgentState(run["message"])
    out = await tooljig.Agent(engine, model).run(state, caller=caller)
    want = run.get("expect", {})
    status = state.status
    if "status" in want and status != want["status"]:
        problems.append(f"agent.expect.status: got {status}, expected {want['status']}")
    if "answer" in want and out.answer != want["answer"]:
        problems.append(f"agent.expect.answer: got {out.answer!r}, expected {want['answer']!r}")
    messages = state.messages
    for key, expected in (want.get("counters") or {}).items():
        got = out.counters.get(key)
        if got != expected:
            problems.append(f"agent.expect.counters.{key}: got {got}, expected {expected}")
    if "messages" in want and messages != want["messages"]:
        problems.append(f"agent.expect.messages: got {json.dumps(messages)}, expected {json.dumps(want['messages'])}")
    if "requests" in want and len(model.requests()) != want["requests"]:
        problems.append(f"agent.expect.requests: the model received {len(model.requests())}, expected {want['requests']}")
