"""Tool selection in the app's language (docs/tools.md): an agent's ``select_tools`` picks
each turn's tools from the caller's candidates; made-up names are ignored and a failing
selector offers every candidate."""

from __future__ import annotations

from typing import Any

import pytest

import tooljig
from tooljig.agent import Agent, AgentState, ScriptedModel


async def test_an_async_selector_picks_each_turns_tools() -> None:
    engine = tooljig.Engine()
    for name in ["get_weather", "send_email", "book_table"]:
        engine.register(name, f"The {name} tool.", None, lambda args: args)
    asked: list[tuple[str, list[str]]] = []

    async def pick(message: str, tools: list[dict[str, Any]]) -> list[str]:
        asked.append((message, [t["name"] for t in tools]))
        if "broken" in message:
            raise RuntimeError("the selector broke")
        return ["send_email", "made_up", "get_weather"]

    model = ScriptedModel("m", ["Done.", "Still done."])
    agent = Agent(engine, model, select_tools=pick)
    await agent.run(AgentState("Email Bob the forecast"))
    await agent.run(AgentState("this is broken"))
    offered = [[t["name"] for t in r["tools"]] for r in model.requests()]
    assert offered[0] == ["send_email", "get_weather"]
    assert offered[1] == ["get_weather", "send_email", "book_table"], "a failing selector offers every candidate"
    assert asked[0] == ("Email Bob the forecast", ["get_weather", "send_email", "book_table"])
    with pytest.raises(tooljig.InvalidInputError):
        Agent(engine, model, select_tools="all")  # type: ignore[arg-type]
