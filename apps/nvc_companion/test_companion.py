"""Seed 002 end to end in Python: the JSON plan's parallel and dependent calls, the prefilter,
the forced fallback, cache TTLs, schema defaults and the seed's limits, checked in the
transcript, the audit log and the tools' model-call costs."""

from __future__ import annotations

import json
from typing import Any

from tooljig.agent import ModelClient

import companion

FEELING = "Ich fühle mich frustriert, weil mein Partner nicht zuhört"


def records(c: companion.Companion) -> list[dict[str, Any]]:
    return sorted(c.engine.audit_query(), key=lambda r: r["seq"])


def test_small_talk_costs_no_expensive_tool() -> None:
    c = companion.Companion()
    out = c.send("Hallo!")
    assert out.answer.startswith("Hallo!")
    assert out.counters["tool_calls"] == 0 and not c.costs
    assert companion.prefilter("Hallo!", [{"name": n} for n in ["search_memories", "extract_nvc_components"]]) == ["search_memories"]
    # A model that plans an expensive call anyway has it dropped before it runs.
    assert companion.review("danke", [{"id": "x", "name": "extract_nvc_components", "arguments": {}}], []) == []


def test_two_calls_in_parallel_and_one_after_them_with_defaults_filled() -> None:
    c = companion.Companion()
    out = c.send(FEELING)
    assert out.answer.startswith("Ich höre Frustration, und dass dir Verständnis wichtig ist.")
    assert "Empathisches Zuhören" in out.answer and "Zuhören beim Abendessen" in out.answer
    assert out.counters["tool_calls"] == 3 and out.counters["model_calls"] == 2, "one plan, one answer"
    by_tool = {r["tool"]: r for r in records(c)}
    kb = by_tool["retrieve_nvc_knowledge"]
    assert kb["arguments"] == {"query": "Verständnis", "limit": 3, "minSimilarity": 0.7}, "$from and defaults"
    assert by_tool["search_memories"]["arguments"]["minSimilarity"] == 0.7
    assert by_tool["search_memories"]["arguments"]["userId"] == "u_mia", "from the caller, not the model"
    assert by_tool["extract_nvc_components"]["arguments"]["locale"] == "de"
    # The knowledge search settled after both calls it depends on.
    assert kb["seq"] > by_tool["search_memories"]["seq"] and kb["seq"] > by_tool["extract_nvc_components"]["seq"]


def test_a_switch_request_is_analysed_even_when_the_planner_forgets() -> None:
    c = companion.Companion(path="idle")
    out = c.send("Können wir zur Selbst-Empathie wechseln? Ich fühle mich gestresst.")
    assert "Gern wechseln wir zu self_empathy." in out.answer
    switch = [r for r in records(c) if r["tool"] == "analyze_path_switch"]
    assert len(switch) == 1 and switch[0]["arguments"]["currentPath"] == "idle"
    assert c.costs["analyze_path_switch"] == 1


def test_read_tools_are_cached_per_their_ttl() -> None:
    c = companion.Companion()
    c.send(FEELING)
    c.send(FEELING)
    cached = {(r["tool"], r["cached"]) for r in records(c)[3:]}
    assert cached == {("search_memories", True), ("retrieve_nvc_knowledge", True), ("extract_nvc_components", False)}
    assert c.costs == {"extract_nvc_components": 2, "retrieve_nvc_knowledge": 1}


def test_at_most_five_tools_a_turn() -> None:
    six = ModelClient(
        lambda request, emit: json.dumps(
            {"toolCalls": [{"id": f"m{i}", "tool": "search_memories", "params": {"query": f"q{i}"}} for i in range(6)]}
        ),
        name="six",
    )
    c = companion.Companion(planner=six)
    out = c.send(FEELING)
    assert out.counters["tool_successes"] == 5
    assert out.counters["failures_by_code"] == {"too_many_calls": 1}


def test_a_tool_slower_than_five_seconds_times_out_and_the_turn_still_answers() -> None:
    c = companion.Companion(kb_delay_s=5.5)
    out = c.send(FEELING)
    assert out.status == "finished"
    assert out.answer.startswith("Ich höre Frustration")
    kb = next(r for r in records(c) if r["tool"] == "retrieve_nvc_knowledge")
    assert kb["code"] == "timeout"
