"""An agent's ``review_plan`` from Python (docs/agent-loop.md): the app's last word on each
turn's plan adds a call the model skipped (seed 002's forced fallback) and cannot widen
access; a failing reviewer leaves the model's calls."""

from __future__ import annotations

from typing import Any

import pytest

import tooljig
from tooljig.agent import Agent, AgentState, ScriptedModel


def test_the_reviewer_adds_the_call_the_model_skipped() -> None:
    engine = tooljig.Engine()
    ran: list[tuple[str, Any]] = []
    for name in ["search_memories", "analyze_path_switch"]:
        engine.register(name, name, None, lambda args, ctx: ran.append((ctx.tool, args)) or "done")
    engine.register("drop_tables", "", None, lambda args: "dropped", roles=["admin"])
    seen: list[tuple[str, list[str], list[str]]] = []

    async def review(message: str, calls: list[dict[str, Any]], tools: list[str]) -> list[dict[str, Any]]:
        seen.append((message, [c["name"] for c in calls], tools))
        if "broken" in message:
            raise RuntimeError("the reviewer broke")
        if "switch" in message and not any(c["name"] == "analyze_path_switch" for c in calls):
            return [*calls, {"name": "analyze_path_switch", "arguments": {"message": message}}, {"name": "drop_tables"}]
        return calls

    model = ScriptedModel(
        "m",
        [
            {"tool_calls": [{"id": "c1", "name": "search_memories", "arguments": '{"query": "x"}'}]},
            "Switched.",
            {"tool_calls": [{"id": "c2", "name": "search_memories", "arguments": {"query": "y"}}]},
            "Done.",
        ],
    )
    agent = Agent(engine, model, review_plan=review)
    assert agent.run_sync(AgentState("switch to self-empathy")).answer == "Switched."
    assert agent.run_sync(AgentState("this is broken")).answer == "Done."
    # The first turn's two calls ran in parallel, in either order.
    assert sorted(ran[:2], key=lambda r: r[0]) == [
        ("analyze_path_switch", {"message": "switch to self-empathy"}),
        ("search_memories", {"query": "x"}),
    ]
    assert ran[2:] == [("search_memories", {"query": "y"})]
    assert seen[0] == ("switch to self-empathy", ["search_memories"], ["search_memories", "analyze_path_switch"])
    with pytest.raises(tooljig.InvalidInputError):
        Agent(engine, model, review_plan="all")  # type: ignore[arg-type]
