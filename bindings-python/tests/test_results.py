"""Typed results (results.rs): CallResult and BatchResult."""

from __future__ import annotations

import json

import pytest

import tooljig


async def test_a_call_result_carries_the_envelope_and_what_the_app_needs(engine: tooljig.Engine) -> None:
    @engine.tool
    def echo(text: str) -> str:
        return text

    out = await engine.run([{"id": "a", "tool": "echo", "arguments": "{'text': 'hi',}"}])
    r = out[0]
    assert isinstance(r, tooljig.CallResult)
    assert (r.call_id, r.tool, r.status) == ("a", "echo", "done")
    assert r.envelope == {"ok": True, "data": "hi"}
    assert json.dumps(r.envelope) == '{"ok": true, "data": "hi"}'
    assert r.envelope_json() == '{"ok":true,"data":"hi"}'
    assert r.ok and r.error_code is None
    assert (r.attempts, r.repaired, r.replayed, r.cached) == (1, True, False, False)
    assert r.arguments == {"text": "hi"}
    assert r.started_us is not None and r.finished_us >= r.started_us
    assert r.duration_us <= r.finished_us and r.detail is None
    whole = r.to_dict()
    assert whole["call_id"] == "a" and whole["envelope"] == r.envelope
    assert r["repaired"] is True
    with pytest.raises(KeyError):
        r["no_such_field"]
    assert "CallResult(call_id=\"a\"" in repr(r)


async def test_a_refused_call_has_no_attempts(engine: tooljig.Engine) -> None:
    out = await engine.run([{"id": "x", "tool": "nope"}])
    r = out[0]
    assert not r.ok and r.error_code == "unknown_tool"
    assert r.attempts == 0 and r.started_us is None and r.arguments is None


async def test_a_batch_result_is_a_sequence_in_call_order(engine: tooljig.Engine) -> None:
    @engine.tool
    def n(i: int) -> int:
        return i

    out = await engine.run([{"id": f"c{i}", "tool": "n", "arguments": {"i": i}} for i in range(3)])
    assert isinstance(out, tooljig.BatchResult)
    assert len(out) == 3 and out[-1].call_id == "c2"
    assert [r.call_id for r in out] == ["c0", "c1", "c2"] == [r.call_id for r in out.results]
    assert out.get("c1") is not None and out.get("c1").envelope["data"] == 1  # type: ignore[union-attr]
    assert out.get("zz") is None
    assert out.envelopes() == [{"ok": True, "data": i} for i in range(3)]
    assert out.duration_us > 0
    d = out.to_dict()
    assert d["duration_us"] == out.duration_us and len(d["results"]) == 3
    with pytest.raises(IndexError):
        out[3]


async def test_every_kind_of_envelope_reads_as_its_json(engine: tooljig.Engine) -> None:
    # `envelope` builds the common `ok` envelope itself: the same keys, in the same order,
    # as the JSON every language shares.
    @engine.tool
    def nested(n: int) -> dict[str, object]:
        return {"z": [n, {"b": None, "a": 1.5}], "a": "x"}

    @engine.tool
    def failing() -> None:
        raise tooljig.ToolError("rate_limited", "slow down", retryable=True)

    @engine.tool(output_schema={"type": "object", "required": ["never"]})
    def unchecked() -> dict[str, int]:
        return {"n": 1}

    @engine.tool
    def asking() -> None:
        raise tooljig.Needs("date", "party_size")

    out = await engine.run(
        [
            {"tool": "nested", "arguments": {"n": 7}},
            {"tool": "failing"},
            {"tool": "unchecked"},
            {"tool": "nested", "arguments": {}},
            {"tool": "nope"},
            {"tool": "asking"},
        ]
    )
    for r in out:
        shared = json.loads(r.envelope_json())
        assert r.envelope == shared
        assert json.dumps(r.envelope) == json.dumps(shared)
    assert out[0].envelope == {"ok": True, "data": {"z": [7, {"b": None, "a": 1.5}], "a": "x"}}
    assert [r.ok for r in out] == [True, False, False, False, False, False]
    assert "needs" in out[-1].envelope
