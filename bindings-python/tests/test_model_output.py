"""What the model sees apart from what the app gets, from Python: a tool's ``to_model_output``
hook (sync or async) and its ``model_output_max_chars`` budget; the app keeps the data, the
agent loop hands the model the view, and a failing hook fails closed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tooljig

ROWS = [{"id": i, "title": f"row {i}"} for i in range(50)]


async def test_the_model_reads_the_view_and_the_app_keeps_the_data() -> None:
    engine = tooljig.Engine()
    seen: list[str | None] = []

    async def summary(data: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        seen.append(ctx.caller.principal)
        return {"count": len(data["rows"]), "first": data["rows"][0]["title"]}

    @engine.tool(to_model_output=summary)
    def search(query: str) -> dict[str, Any]:
        """Searches."""
        return {"rows": ROWS}

    out = await engine.run([{"id": "s", "tool": "search", "arguments": {"query": "x"}}], caller={"principal": "ana"})
    r = out.get("s")
    assert r.envelope["data"]["rows"] == ROWS, "the app's data"
    assert r.model_output == {"count": 50, "first": "row 0"}
    assert seen == ["ana"]

    # The agent loop hands the model the view, never the rows.
    model = tooljig.ScriptedModel(
        "m",
        [{"tool_calls": [{"id": "c1", "name": "search", "arguments": '{"query": "x"}'}]}, "done"],
    )
    await tooljig.Agent(engine, model).run(tooljig.AgentState("find x"), caller={"principal": "ana"})
    answered = model.requests()[1]["messages"][-1]["results"][0]["envelope"]
    assert answered == {"ok": True, "data": {"count": 50, "first": "row 0"}}
    assert "row 49" not in json.dumps(model.requests()[1])


def test_a_budget_cuts_what_the_model_reads_and_a_failing_hook_fails_closed() -> None:
    engine = tooljig.Engine()
    engine.register("page", "", None, lambda a: "x" * 10_000, model_output_max_chars=100)

    def broken(data: Any) -> Any:
        raise RuntimeError("cannot summarise")

    engine.register("secret", "", None, lambda a: {"ssn": "123"}, to_model_output=broken)
    out = engine.run_sync([
        {"id": "p", "tool": "page", "arguments": {}},
        {"id": "s", "tool": "secret", "arguments": {}},
    ])
    page = out.get("p")
    assert page.envelope == {"ok": True, "data": "x" * 10_000}
    assert page.model_output.startswith("x" * 100) and page.model_output.endswith("100 of 10000 characters shown]")
    secret = out.get("s")
    assert secret.envelope == {"ok": True, "data": {"ssn": "123"}}
    assert "123" not in json.dumps(secret.model_output)
    assert "cannot summarise" in (secret.detail or "")
    with pytest.raises(tooljig.InvalidPolicyError):
        engine.register("bad", "", None, lambda a: a, to_model_output=3)  # type: ignore[arg-type]


def test_a_token_budget() -> None:
    engine = tooljig.Engine()
    engine.register("page", "", None, lambda a: "the quick brown fox " * 100, model_output_max_tokens=8)
    page = engine.run_sync([{"id": "p", "tool": "page", "arguments": {}}]).get("p")
    assert page.envelope["data"] == "the quick brown fox " * 100
    assert page.model_output.startswith("the quick brown fox the quick brown fox")
    assert page.model_output.endswith("8 of 401 tokens shown]")
