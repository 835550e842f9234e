"""Provider formats through the binding: tools (strict mode), responses to turns, results to
each provider's own messages, round trips, the JSON-structured protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tooljig
from tooljig.providers import (
    JsonProtocol,
    Provider,
    ProviderError,
    drop_strict_nulls,
    format_results,
    into_batch,
    to_strict,
)

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}


def weather_engine() -> tooljig.Engine:
    engine = tooljig.Engine()

    @engine.tool
    def get_weather(city: str, unit: str = "c") -> dict[str, Any]:
        """Weather for a city."""
        return {"city": city, "temp": 21, "unit": unit}

    return engine


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(tooljig.InvalidInputError, match="unknown provider"):
        Provider("cohere")


def test_every_spelling_of_a_provider_names_the_same_one() -> None:
    # The core's one table of names: canonical, then the aliases every binding accepts.
    for alias, name in [
        ("openai", "openai_chat"),
        ("openaiChat", "openai_chat"),
        ("openai_compatible", "openai_chat"),
        ("openaiResponses", "openai_responses"),
        ("anthropic", "anthropic"),
    ]:
        assert Provider(alias).name == name


def test_openai_tools_and_strict_mode() -> None:
    chat = Provider("openai_chat")
    tools = chat.tools([WEATHER])
    assert tools[0]["type"] == "function"
    assert tools[0]["function"]["name"] == "get_weather"
    assert "strict" not in tools[0]["function"] or tools[0]["function"]["strict"] is False
    strict = chat.tools([WEATHER], strict=True)[0]["function"]
    assert strict["strict"] is True
    params = strict["parameters"]
    assert sorted(params["required"]) == ["city", "unit"]
    assert params["additionalProperties"] is False
    assert Provider("openai_chat", strict=True).tools([WEATHER]) == chat.tools(
        [WEATHER], strict=True
    )


def test_to_strict_makes_optional_fields_nullable() -> None:
    schema = to_strict(WEATHER["input_schema"])
    assert sorted(schema["required"]) == ["city", "unit"]
    assert "null" in json.dumps(schema["properties"]["unit"])
    assert "null" not in json.dumps(schema["properties"]["city"])


def test_drop_strict_nulls_restores_optional_fields() -> None:
    turn = {
        "tool_calls": [
            {"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo", "unit": null}'}
        ],
        "finish_reason": "tool_calls",
    }
    cleaned = drop_strict_nulls(turn, [WEATHER])
    assert cleaned["tool_calls"][0]["arguments"] == {"city": "Oslo"}


def test_openai_response_to_batch_to_tool_messages_round_trip() -> None:
    chat = Provider("openai_chat")
    body = {
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    turn = chat.parse_response(body)
    assert [c["id"] for c in turn["tool_calls"]] == ["call_a", "call_b"]
    assert turn["finish_reason"] == "tool_calls"
    assert turn["usage"] == {"input_tokens": 10, "output_tokens": 5}
    calls, refused = into_batch(turn)
    assert refused == []
    results = weather_engine().run_sync(calls)
    messages = chat.tool_results(results)
    assert [m["tool_call_id"] for m in messages] == ["call_a", "call_b"]
    assert all(m["role"] == "tool" for m in messages)
    assert json.loads(messages[1]["content"]) == {
        "ok": True,
        "data": {"city": "Rome", "temp": 21, "unit": "c"},
    }
    # The whole conversation goes out in the provider's shape and comes back the same.
    conversation = [
        {"role": "user", "content": "Weather in Oslo and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": turn["tool_calls"]},
        {
            "role": "tool",
            "results": [
                {"call_id": r.call_id, "name": r.tool, "envelope": r.envelope} for r in results
            ],
        },
    ]
    wire = chat.messages(conversation)
    assert chat.parse_messages(wire) == chat.parse_messages(
        chat.messages(chat.parse_messages(wire))
    )
    back = chat.parse_messages(wire)
    assert back[2]["results"][1]["envelope"] == results[1].envelope


def test_anthropic_results_are_content_blocks_with_is_error() -> None:
    anthropic = Provider("anthropic")
    turn = anthropic.parse_response(
        {
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    )
    assert turn["content"] == "Checking."
    calls, _ = into_batch(turn)
    results = weather_engine().run_sync(calls)
    (message,) = anthropic.tool_results(results)
    assert message["role"] == "user"
    blocks = message["content"]
    assert [b["tool_use_id"] for b in blocks] == ["toolu_1", "toolu_2"]
    assert blocks[0].get("is_error", False) is False
    assert blocks[1]["is_error"] is True  # `city` is missing: refused as invalid arguments
    # Results given as dicts work the same as CallResult objects.
    assert anthropic.tool_results([r.to_dict() for r in results]) == [message]


def test_gemini_and_responses_formats() -> None:
    gemini = Provider("gemini")
    decl = gemini.tools([WEATHER])
    assert decl[0]["functionDeclarations"][0]["name"] == "get_weather"
    turn = gemini.parse_response(
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
                        ]
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    assert turn["tool_calls"][0]["name"] == "get_weather"
    responses = Provider("openai_responses")
    assert responses.tools([WEATHER])[0]["name"] == "get_weather"
    body = responses.request(
        {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER]}
    )
    assert body["model"] == "gpt-4.1"
    assert body["tools"][0]["name"] == "get_weather"


def test_request_puts_the_system_prompt_where_the_provider_wants_it() -> None:
    request = {
        "model": "claude-x",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 100,
    }
    body = Provider("anthropic").request(request)
    assert body["system"] == "Be brief."
    assert (
        body["messages"] == [{"role": "user", "content": "hi"}]
        or body["messages"][0]["role"] == "user"
    )
    chat = Provider("openai_chat").request(request)
    assert chat["messages"][0] == {"role": "system", "content": "Be brief."}


def test_bad_bodies_and_inputs_raise_clear_errors() -> None:
    with pytest.raises(ProviderError):
        Provider("openai_chat").parse_response({"nope": 1})
    with pytest.raises(tooljig.InvalidInputError, match="specs"):
        Provider("openai_chat").tools([{"description": "no name"}])
    with pytest.raises(tooljig.InvalidInputError, match="turn"):
        into_batch({"content": "missing finish_reason"})


def test_incomplete_calls_are_refused_never_run() -> None:
    turn = {
        "tool_calls": [
            {"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
            {"id": "c2", "name": "get_weather", "arguments": '{"city": "Ro', "incomplete": True},
        ],
        "finish_reason": "length",
    }
    calls, refused = into_batch(turn)
    assert [c["id"] for c in calls] == ["c1"]
    assert isinstance(refused[0], tooljig.CallResult)
    assert refused[0].call_id == "c2"
    assert refused[0].envelope["error"]["code"] == "incomplete_arguments"


def test_json_protocol_schema_prompt_parse_and_results() -> None:
    protocol = JsonProtocol({"dependencies": True, "reasoning": True})
    assert protocol.options["dependencies"] is True
    specs = weather_engine().specs()
    schema = protocol.response_schema(specs)
    assert "get_weather" in json.dumps(schema)
    assert "get_weather" in protocol.prompt(specs)
    # Trailing commas and a missing closing brace are repaired.
    plan = protocol.parse(
        '{"reasoning": "two cities", "calls": [{"id": "a", "tool": "get_weather", "params": {"city": "Oslo"}},'
        ' {"id": "b", "tool": "get_weather", "params": {"city": "Rome"}, "dependsOn": ["a"]},]'
    )
    assert plan["repaired"] is True
    assert plan["reasoning"] == "two cities"
    assert [c["tool"] for c in plan["calls"]] == ["get_weather", "get_weather"]
    assert plan["calls"][1]["depends_on"] == ["a"]
    results = weather_engine().run_sync(plan["calls"])
    text = format_results(results)
    assert "Oslo" in text and "Rome" in text
    with pytest.raises(ProviderError):
        protocol.parse("I would rather chat.")
    with pytest.raises(tooljig.InvalidInputError):
        JsonProtocol({"shape": "round"})
