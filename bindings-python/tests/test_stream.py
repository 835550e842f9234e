"""Streaming through the binding: recorded provider streams replayed in pieces, a stream cut
inside a call's arguments, and the AI SDK UI message stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooljig.providers import ProviderError, into_batch
from tooljig.stream import (
    UI_MESSAGE_STREAM_HEADERS,
    StreamParser,
    UiMessageStream,
    parse_stream,
    to_ui_message_stream,
)

from support.corpora import corpus


def in_pieces(provider: str, data: bytes, size: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    parser = StreamParser(provider)
    events: list[dict[str, Any]] = []
    for i in range(0, len(data), size):
        events.extend(parser.push(data[i : i + size]))
    rest, turn = parser.finish()
    return events + rest, turn


def test_openai_chat_stream_split_anywhere_gives_the_same_events() -> None:
    data = (
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1",'
        b'"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Os"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"lo\\"}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    whole = parse_stream("openai_chat", data)
    for size in (1, 3, 7, 64):
        assert in_pieces("openai_chat", data, size) == whole
    events, turn = whole
    types = [e["type"] for e in events]
    assert types[0] == "tool_input_start"
    assert types[-1] == "tool_input_available"
    partials = [e.get("partial") for e in events if e["type"] == "tool_input_delta"]
    assert partials[-1] == {"city": "Oslo"}
    assert turn["tool_calls"][0]["id"] == "call_1"
    assert turn["finish_reason"] == "tool_calls"


def test_parser_refuses_use_after_finish_and_bad_events() -> None:
    parser = StreamParser("anthropic")
    assert parser.provider == "anthropic"
    parser.finish()
    with pytest.raises(RuntimeError, match="finished"):
        parser.push(b"data: {}\n\n")
    with pytest.raises(ProviderError):
        parse_stream("openai_chat", b"data: {not json\n\n")


def test_recorded_anthropic_streams_replay_in_pieces() -> None:
    files = sorted(corpus("wire/anthropic-messages-sse").glob("*.txt"))
    assert files
    for path in files:
        data = path.read_bytes()
        try:
            whole = parse_stream("anthropic", data)
        except ProviderError:
            # A recorded provider error event is an error whatever the split.
            with pytest.raises(ProviderError):
                in_pieces("anthropic", data, 5)
            continue
        assert in_pieces("anthropic", data, 5) == whole, path.name
        assert in_pieces("anthropic", data, 1) == whole, path.name


def test_recorded_tool_use_stream_has_the_weather_call() -> None:
    path = corpus("wire/anthropic-messages-sse") / "tool_use_response.txt"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this corpus sample")
    events, turn = parse_stream("anthropic", path.read_bytes())
    assert turn["content"] == "I'll check the current weather in Paris for you."
    assert turn["tool_calls"][0]["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert turn["usage"] == {"input_tokens": 377, "output_tokens": 65}
    partials = [e["partial"] for e in events if e["type"] == "tool_input_delta" and "partial" in e]
    assert partials[-1] == {"location": "Paris"}


def test_a_stream_cut_inside_arguments_never_runs_the_call() -> None:
    path = corpus("wire/anthropic-messages-sse") / "incomplete_partial_json_response.txt"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this corpus sample")
    events, turn = parse_stream("anthropic", path.read_bytes())
    assert turn["finish_reason"] == "length"
    (incomplete,) = [e for e in events if e["type"] == "tool_input_incomplete"]
    assert "max_tokens" in incomplete["reason"]
    assert incomplete["partial"]["filename"] == "taxes.txt"
    assert not any(e["type"] == "tool_input_available" for e in events)
    calls, refused = into_batch(turn)
    assert calls == []
    assert refused[0].envelope["error"]["code"] == "incomplete_arguments"


def test_recorded_openai_chat_streams_replay_in_pieces() -> None:
    files = sorted(corpus("wire/openai-chat-sse").glob("*.bin"))
    assert files
    for path in files:
        data = path.read_bytes()
        try:
            whole = parse_stream("openai_chat", data)
        except ProviderError:
            continue
        assert in_pieces("openai_chat", data, 3) == whole, path.name


def test_ui_message_stream_frames_a_run() -> None:
    events: list[dict[str, Any]] = [
        {"type": "start", "run_id": "r1"},
        {"type": "step_start", "step": 1},
        {"type": "tool_input_start", "call_id": "c1", "tool": "get_weather"},
        {"type": "tool_input_delta", "call_id": "c1", "delta": '{"city":"Oslo"}'},
        {
            "type": "tool_input_available",
            "call_id": "c1",
            "tool": "get_weather",
            "input": {"city": "Oslo"},
        },
        {
            "type": "tool_output_available",
            "call_id": "c1",
            "tool": "get_weather",
            "output": {"ok": True, "data": 4},
        },
        {"type": "text_delta", "delta": "It is 4°C."},
        {"type": "finish", "finish_reason": "stop"},
    ]
    ui = UiMessageStream("m1")
    body = "".join(ui.encode(e) for e in events) + ui.done()
    assert body == to_ui_message_stream("m1", events)
    frames = [f for f in body.split("\n\n") if f]
    assert frames[-1] == "data: [DONE]"
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[:-1]]
    kinds = [c["type"] for c in chunks]
    for kind in (
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "text-delta",
        "finish",
    ):
        assert kind in kinds
    assert kinds.index("text-delta") > kinds.index("tool-output-available")
    assert ("x-vercel-ai-ui-message-stream", "v1") in UI_MESSAGE_STREAM_HEADERS
    assert UiMessageStream("m2").chunks({"type": "text_delta", "delta": "a"})[-1]["delta"] == "a"
    with pytest.raises(Exception, match="stream event"):
        UiMessageStream("m3").encode({"type": "no_such_event"})
