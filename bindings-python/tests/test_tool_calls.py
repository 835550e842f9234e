"""Tools calling tools (``ctx.call``, ``ctx.run``): the same caller through every guardrail,
each nested result naming its parent, and what the policy does not name refused."""

from __future__ import annotations

import pytest

import tooljig


async def test_a_handler_calls_tools_as_its_caller(engine: tooljig.Engine) -> None:
    @engine.tool(effect="read")
    async def weather(city: str) -> dict[str, object]:
        """Weather."""
        return {"city": city, "temp_c": 21}

    @engine.tool
    def whoami(ctx: tooljig.ToolContext) -> str | None:
        """Who calls."""
        return ctx.caller.principal

    @engine.tool
    def secret() -> str:
        """Not for plan."""
        return "s3cret"

    @engine.tool(may_call=["weather", "whoami"])
    async def plan(city: str, ctx: tooljig.ToolContext) -> dict[str, object]:
        """Plans a trip by calling other tools."""
        forecast = await ctx.call("weather", {"city": city})
        both = await ctx.run([{"id": "me", "tool": "whoami"}, {"id": "s", "tool": "secret"}])
        return {
            "forecast": forecast.envelope,
            "parent": forecast["parent"],
            "me": both[0].envelope,
            "secret": both[1].error_code,
        }

    [out] = await engine.run([{"id": "top", "tool": "plan", "arguments": {"city": "Oslo"}}], caller={"principal": "alice"})
    data = out.envelope["data"]
    assert data["forecast"] == {"ok": True, "data": {"city": "Oslo", "temp_c": 21}}
    assert data["parent"]["call_id"] == "top" and data["parent"]["tool"] == "plan" and data["parent"]["depth"] == 1
    assert data["me"] == {"ok": True, "data": "alice"}
    assert data["secret"] == "permission_denied"


async def test_a_tool_that_names_nothing_to_call_is_refused_clearly(engine: tooljig.Engine) -> None:
    @engine.tool
    async def lonely(ctx: tooljig.ToolContext) -> str:
        """Tries to call."""
        with pytest.raises(tooljig.ToolError) as refused:
            await ctx.call("lonely")
        assert refused.value.code == "permission_denied"
        return "alone"

    [out] = await engine.run([{"tool": "lonely"}])
    assert out.envelope == {"ok": True, "data": "alone"}


async def test_an_atomic_nested_batch_releases_the_hold_when_the_booking_fails() -> None:
    engine = tooljig.Engine()
    log: list[str] = []

    @engine.tool(compensation="release", internal=True)
    def hold(slot: int) -> dict[str, str]:
        """Holds a slot."""
        log.append(f"hold {slot}")
        return {"hold": f"h-{slot}"}

    @engine.tool(internal=True)
    def release(arguments: dict[str, object], result: dict[str, str]) -> bool:
        """Releases a hold."""
        log.append(f"release {result['hold']}")
        return True

    @engine.tool(internal=True)
    def book(slot: int) -> str:
        """Books the slot."""
        if slot == 2:
            raise tooljig.ToolError("conflict", "the slot was taken")
        return "booked"

    @engine.tool(may_call=["hold", "book"])
    async def confirm(slot: int, ctx: tooljig.ToolContext) -> dict[str, object]:
        """Two-phase booking."""
        out = await ctx.run(
            [
                {"id": "hold", "tool": "hold", "arguments": {"slot": slot}},
                {"id": "book", "tool": "book", "arguments": {"slot": slot}, "depends_on": ["hold"]},
            ],
            atomic=True,
        )
        rollback = out.rollback
        return {"book": out.get("book").error_code, "rollback": rollback and [e["outcome"] for e in rollback["entries"]]}

    out = await engine.run(
        [{"id": "ok", "tool": "confirm", "arguments": {"slot": 1}}, {"id": "taken", "tool": "confirm", "arguments": {"slot": 2}}],
        concurrency=1,
    )
    assert out.get("ok").envelope["data"] == {"book": None, "rollback": None}
    assert out.get("taken").envelope["data"] == {"book": "conflict", "rollback": ["compensated"]}
    assert log == ["hold 1", "hold 2", "release h-2"]

    # The steps are internal: a model neither sees nor calls them.
    assert [s["name"] for s in engine.specs_for()] == ["confirm"]
    direct = await engine.run([{"id": "h", "tool": "hold", "arguments": {"slot": 3}}])
    assert direct.get("h").error_code == "permission_denied"
    assert direct.get("h").envelope["error"]["reason"] == "internal"
    assert len(log) == 3
