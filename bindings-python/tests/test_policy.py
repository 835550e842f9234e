"""Policies as decorator keywords (policy.py): they reach the core's spec as given."""

from __future__ import annotations

import asyncio

import pytest

import tooljig
from tooljig import Retry


def test_retry_keeps_only_what_was_set() -> None:
    assert Retry().to_dict() == {}
    assert Retry(attempts=3, backoff_ms=10, multiplier=1.5, max_backoff_ms=50, on=["timeout", tooljig.ErrorCode.RATE_LIMITED]).to_dict() == {
        "attempts": 3, "backoff_ms": 10, "multiplier": 1.5, "max_backoff_ms": 50, "on": ["timeout", "rate_limited"],
    }
    with pytest.raises(ValueError):
        Retry(on=["nope"]).to_dict()


def test_decorator_keywords_become_the_policy(engine: tooljig.Engine) -> None:
    @engine.tool(timeout_ms=5000, retry=Retry(attempts=3), after=["other"], max_output_bytes=10, on_output_too_large="error")
    def t() -> None: ...

    @engine.tool(timeout_ms=None, retry={"attempts": 2})
    def unlimited() -> None: ...

    policy = engine.specs()[0]["policy"]
    assert policy["timeout_ms"] == 5000 and policy["retry"]["attempts"] == 3
    assert policy["after"] == ["other"] and policy["max_output_bytes"] == 10
    assert policy["on_output_too_large"] == "error"
    second = engine.specs()[1]["policy"]
    assert second["timeout_ms"] is None and second["retry"]["attempts"] == 2


def test_a_misspelt_policy_field_is_refused(engine: tooljig.Engine) -> None:
    with pytest.raises(tooljig.InvalidPolicyError, match="unknown field `timeout`"):

        @engine.tool(timeout=5)
        def t() -> None: ...


async def test_after_orders_tools_in_a_batch(engine: tooljig.Engine) -> None:
    order: list[str] = []

    @engine.tool
    async def first() -> None:
        await asyncio.sleep(0.05)
        order.append("first")

    @engine.tool(after=["first"])
    def second() -> None:
        order.append("second")

    await engine.run([{"tool": "second"}, {"tool": "first"}])
    assert order == ["first", "second"]


async def test_the_output_limit_truncates_or_refuses(engine: tooljig.Engine) -> None:
    @engine.tool(max_output_bytes=5)
    def long() -> str:
        return "abcdefghij"

    @engine.tool(max_output_bytes=5, on_output_too_large="error")
    def strict() -> str:
        return "abcdefghij"

    out = await engine.run([{"tool": "long"}, {"tool": "strict"}])
    assert out[0].envelope["data"].startswith("abcde…[truncated by tooljig:")
    assert out[1].error_code == "output_too_large"
