"""Who a batch runs for (caller.rs) and what a handler knows (context.rs)."""

from __future__ import annotations

import pytest

import tooljig


def test_a_caller_from_keywords_or_a_dict() -> None:
    c = tooljig.Caller(principal="u1", tenant="acme", roles=["admin"], scopes=["a.read"], attributes={"dept": 7}, session="s1")
    assert (c.principal, c.tenant, c.roles, c.scopes, c.attributes, c.session) == (
        "u1", "acme", ["admin"], ["a.read"], {"dept": 7}, "s1",
    )
    assert c["principal"] == "u1" and c.to_dict()["tenant"] == "acme"
    assert c == tooljig.Caller(principal="u1", tenant="acme", roles=["admin"], scopes=["a.read"], attributes={"dept": 7}, session="s1")
    assert tooljig.Caller().principal is None
    assert "u1" in repr(c)


def test_an_unknown_caller_field_is_refused_with_the_known_ones() -> None:
    with pytest.raises(tooljig.InvalidInputError, match="unknown field `princpal`"):
        tooljig.Caller(princpal="u1")


async def test_handlers_receive_the_context_left_out_of_the_schema(engine: tooljig.Engine) -> None:
    @engine.tool
    async def whoami(greeting: str, ctx: tooljig.ToolContext) -> dict:
        return {
            "greeting": greeting,
            "principal": ctx.caller.principal,
            "scopes": ctx.caller.scopes,
            "call": ctx.call_id,
            "tool": ctx.tool,
            "attempt": ctx.attempt,
            "cancelled": ctx.cancelled,
        }

    @engine.tool
    def sync_whoami(ctx: tooljig.ToolContext | None = None) -> str | None:
        assert ctx is not None
        return ctx.caller.tenant

    schema = engine.specs()[0]["input_schema"]
    assert list(schema["properties"]) == ["greeting"]
    assert engine.specs()[1]["input_schema"]["properties"] == {}
    caller = tooljig.Caller(principal="u1", tenant="t", scopes=["x"])
    out = await engine.run(
        [{"id": "1", "tool": "whoami", "arguments": {"greeting": "hi"}}, {"id": "2", "tool": "sync_whoami"}],
        caller=caller,
    )
    assert out[0].envelope["data"] == {
        "greeting": "hi", "principal": "u1", "scopes": ["x"], "call": "1", "tool": "whoami", "attempt": 1, "cancelled": False,
    }
    assert out[1].envelope["data"] == "t"
    out = await engine.run([{"tool": "sync_whoami"}], caller={"tenant": "from-dict"})
    assert out[0].envelope["data"] == "from-dict"


async def test_a_bad_caller_dict_is_refused(engine: tooljig.Engine) -> None:
    with pytest.raises(tooljig.InvalidInputError, match="invalid caller"):
        await engine.run([], caller={"roles": "admin"})
