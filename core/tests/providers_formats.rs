//! Provider formats: specs → tool definitions, responses → calls, results → messages, for
//! each provider, and a whole conversation round-tripping through each real format.

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::providers::{
    Anthropic, FinishReason, Gemini, Message, ModelRequest, OpenAiChat, OpenAiResponses, Provider,
    ProviderFormat, ToolCall, ToolChoice, ToolResult,
};
use tooljig::*;

fn engine() -> Arc<Engine> {
    let e = Engine::new();
    e.register(Tool::from_fn(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}),
        |args: Value, _| async move { Ok(json!({"city": args["city"], "temp": 21})) },
    ))
    .unwrap();
    e.register(Tool::from_fn(
        "fail",
        "Always fails.",
        json!({"type": "object", "properties": {}}),
        |_, _| async move { Err(HandlerError::tool(ErrorCode::NotFound, "no such thing")) },
    ))
    .unwrap();
    Arc::new(e)
}

async fn run(engine: &Engine, calls: Vec<Call>) -> Vec<CallResult> {
    engine
        .run(calls, Caller::default(), BatchOptions::default())
        .await
        .results
}

#[tokio::test]
async fn openai_chat_round_trip() {
    let e = engine();
    let f = OpenAiChat::default();
    let tools = f.tools(&e.specs());
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "get_weather");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["city"])
    );
    assert!(tools[0]["function"].get("strict").is_none());

    // A real response shape: two parallel calls, arguments as JSON strings.
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [
                {"id": "call_A", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_B", "type": "function", "function": {"name": "fail", "arguments": "{}"}}
            ]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
    });
    let turn = f.parse_response(&body).unwrap();
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    assert_eq!(turn.usage.total(), 70);
    let ids: Vec<&str> = turn.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_A", "call_B"]);
    let (calls, refused) = turn.into_batch();
    assert!(refused.is_empty());
    let results = run(&e, calls).await;
    let msgs = f.tool_results(&results);
    assert_eq!(
        msgs,
        vec![
            json!({"role": "tool", "tool_call_id": "call_A", "content": "{\"ok\":true,\"data\":{\"city\":\"Paris\",\"temp\":21}}"}),
            json!({"role": "tool", "tool_call_id": "call_B", "content": "{\"ok\":false,\"error\":{\"code\":\"not_found\",\"message\":\"no such thing\",\"retryable\":false}}"}),
        ]
    );
    // The whole conversation in the real format.
    let conv = vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris?"),
        turn.message(),
        Message::Tool {
            results: results.iter().map(ToolResult::from_result).collect(),
        },
    ];
    let req = ModelRequest {
        model: "gpt-4o".into(),
        messages: conv,
        tools: e.specs(),
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(100),
        stream: true,
        ..Default::default()
    };
    let body = f.request(&req);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_A", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_B", "type": "function", "function": {"name": "fail", "arguments": "{}"}}
        ]})
    );
    assert_eq!(body["messages"][3]["tool_call_id"], "call_A");
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 100);
}

#[tokio::test]
async fn anthropic_round_trip() {
    let e = engine();
    let f = Anthropic::default();
    let tools = f.tools(&e.specs());
    assert_eq!(
        tools[0],
        json!({"name": "get_weather", "description": "Weather for a city.", "input_schema": e.specs()[0].input_schema})
    );
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "fail", "input": {}}
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let turn = f.parse_response(&body).unwrap();
    assert_eq!(turn.content, "Checking.");
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    let results = run(&e, turn.into_batch().0).await;
    let msgs = f.tool_results(&results);
    assert_eq!(msgs.len(), 1, "all results in one user message");
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(
        msgs[0]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"ok\":true,\"data\":{\"city\":\"Oslo\",\"temp\":21}}"})
    );
    assert_eq!(msgs[0]["content"][1]["tool_use_id"], "toolu_2");
    assert_eq!(msgs[0]["content"][1]["is_error"], true);
    let req = ModelRequest {
        model: "claude".into(),
        messages: vec![
            Message::system("Be brief."),
            Message::user("Weather?"),
            turn.message(),
        ],
        tools: e.specs(),
        tool_choice: ToolChoice::Required,
        ..Default::default()
    };
    let body = f.request(&req);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "fail", "input": {}}
        ])
    );
}

#[tokio::test]
async fn openai_responses_round_trip() {
    let e = engine();
    let f = OpenAiResponses::default();
    let tools = f.tools(&e.specs());
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["name"], "get_weather");
    assert_eq!(tools[0]["strict"], false);
    let body = json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4.1",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_X", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_Y", "name": "get_weather", "arguments": "{\"city\":\"Nice\"}", "status": "completed"}
        ],
        "usage": {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42}
    });
    let turn = f.parse_response(&body).unwrap();
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    assert_eq!(turn.usage.total(), 42);
    let results = run(&e, turn.into_batch().0).await;
    let items = f.tool_results(&results);
    assert_eq!(
        items[1],
        json!({"type": "function_call_output", "call_id": "call_Y", "output": "{\"ok\":true,\"data\":{\"city\":\"Nice\",\"temp\":21}}"})
    );
    let input = f.messages(&[Message::user("hi"), turn.message()]);
    assert_eq!(input[0], json!({"role": "user", "content": "hi"}));
    assert_eq!(
        input[1],
        json!({"type": "function_call", "call_id": "call_X", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}", "id": "fc_1"})
    );
    let req = f.request(&ModelRequest {
        model: "gpt-4.1".into(),
        messages: vec![Message::system("sys"), Message::user("hi")],
        tools: e.specs(),
        max_tokens: Some(64),
        ..Default::default()
    });
    assert_eq!(req["instructions"], "sys");
    assert_eq!(req["max_output_tokens"], 64);
    // A response cut at the token limit leaves its last call incomplete.
    let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{\"ci", "status": "incomplete"}]});
    let t = f.parse_response(&cut).unwrap();
    assert_eq!(t.finish_reason, FinishReason::Length);
    assert!(t.tool_calls[0].incomplete);
    let (run_now, refused) = t.into_batch();
    assert!(run_now.is_empty());
    assert_eq!(
        refused[0].envelope.code(),
        Some(ErrorCode::IncompleteArguments)
    );
}

#[tokio::test]
async fn gemini_round_trip() {
    let e = engine();
    let f = Gemini::default();
    let tools = f.tools(&e.specs());
    assert_eq!(
        tools[0]["functionDeclarations"][0]["parametersJsonSchema"],
        e.specs()[0].input_schema
    );
    let body = json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Berlin"}}, "thoughtSignature": "sig1"},
            {"functionCall": {"id": "given-id", "name": "get_weather", "args": {"city": "Bonn"}}}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 13},
        "modelVersion": "gemini-2.5-flash"
    });
    let turn = f.parse_response(&body).unwrap();
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    assert_eq!(turn.tool_calls[1].id, "given-id");
    assert_ne!(turn.tool_calls[0].id, turn.tool_calls[1].id);
    let results = run(&e, turn.into_batch().0).await;
    let msgs = f.tool_results(&results);
    assert_eq!(
        msgs[0],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"ok": true, "data": {"city": "Berlin", "temp": 21}}}},
            {"functionResponse": {"name": "get_weather", "response": {"ok": true, "data": {"city": "Bonn", "temp": 21}}, "id": "given-id"}}
        ]})
    );
    let history = f.messages(&[turn.message()]);
    assert_eq!(
        history[0]["parts"][0],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Berlin"}}, "thoughtSignature": "sig1"})
    );
    let req = f.request(&ModelRequest {
        messages: vec![Message::system("sys"), Message::user("hi")],
        tools: e.specs(),
        tool_choice: ToolChoice::Tool("get_weather".into()),
        ..Default::default()
    });
    assert_eq!(
        req["systemInstruction"],
        json!({"parts": [{"text": "sys"}]})
    );
    assert_eq!(
        req["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
}

#[test]
fn gemini_openapi_subset() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}},
        "properties": {
            "unit": {"$ref": "#/$defs/Unit", "description": "Which unit"},
            "note": {"type": ["string", "null"]},
            "kind": {"const": "x"},
            "pick": {"oneOf": [{"type": "integer"}, {"type": "string"}]}
        }
    });
    let out = tooljig::providers::gemini::openapi_schema(&schema);
    assert_eq!(
        out,
        json!({"type": "object", "properties": {
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Which unit"},
            "note": {"nullable": true, "type": "string"},
            "kind": {"enum": ["x"]},
            "pick": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        }})
    );
}

#[test]
fn errors_are_reported_not_panicked() {
    for p in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ] {
        let f = p.format();
        for body in [
            json!(null),
            json!({}),
            json!({"error": {"message": "bad key"}}),
            json!({"choices": []}),
        ] {
            // Either an error or an empty turn; never a panic.
            if let Ok(t) = f.parse_response(&body) {
                assert!(t.tool_calls.is_empty(), "{p:?} {body}");
            }
        }
    }
    let bad_call = json!({"choices": [{"message": {"tool_calls": [{"id": "x"}]}, "finish_reason": "tool_calls"}]});
    assert!(OpenAiChat::default().parse_response(&bad_call).is_err());
}

#[test]
fn tool_call_arguments_convert_between_text_and_objects() {
    let c = ToolCall::new("1", "t", "{\"a\": 1,}");
    assert_eq!(c.arguments_object(), json!({"a": 1}));
    let c = ToolCall::new("1", "t", json!({"a": 1}));
    assert_eq!(c.arguments_text(), "{\"a\":1}");
}

/// A conversation with text, parallel calls and every kind of envelope.
fn conversation() -> Vec<Message> {
    vec![
        Message::user("Weather in Paris and Oslo, then book?"),
        Message::Assistant {
            content: "Checking.".into(),
            tool_calls: vec![
                ToolCall::new("id_1", "get_weather", json!({"city": "Paris"})),
                ToolCall::new("id_2", "get_weather", json!({"city": "Oslo"})),
                ToolCall::new("id_3", "book", json!({})),
            ],
        },
        Message::Tool {
            results: vec![
                ToolResult {
                    call_id: "id_1".into(),
                    name: "get_weather".into(),
                    envelope: Envelope::Ok(json!({"temp": 21})),
                },
                ToolResult {
                    call_id: "id_2".into(),
                    name: "get_weather".into(),
                    envelope: Envelope::Needs(vec!["date".into()]),
                },
                ToolResult {
                    call_id: "id_3".into(),
                    name: "book".into(),
                    envelope: Envelope::Error(
                        ToolError::new(ErrorCode::RateLimited, "slow down")
                            .with("retry_after_ms", 10),
                    ),
                },
            ],
        },
        Message::assistant("Paris is 21°C; for Oslo, which date?"),
    ]
}

/// Calls compared by what they mean: arguments as objects, whatever the wire spelling.
fn normalized(messages: &[Message]) -> Value {
    let list: Vec<Value> = messages
        .iter()
        .map(|m| match m {
            Message::Assistant { content, tool_calls } => json!({
                "assistant": content,
                "calls": tool_calls.iter().map(|c| json!([c.id, c.name, c.arguments_object()])).collect::<Vec<_>>(),
            }),
            other => serde_json::to_value(other).unwrap(),
        })
        .collect();
    Value::Array(list)
}

#[test]
fn conversations_round_trip_through_every_format() {
    let conv = conversation();
    for p in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ] {
        let f = p.format();
        let wire = f.messages(&conv);
        let back = f
            .parse_messages(&wire)
            .unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(
            normalized(&back),
            normalized(&conv),
            "{p:?}: {}",
            Value::Array(wire.clone())
        );
        // And the provider's shape is stable through a second trip.
        assert_eq!(f.messages(&back), wire, "{p:?}");
    }
    // OpenAI keeps a system message in the list.
    let with_system = [vec![Message::system("Be brief.")], conversation()].concat();
    let f = OpenAiChat::default();
    assert_eq!(
        f.parse_messages(&f.messages(&with_system)).unwrap()[0],
        Message::system("Be brief.")
    );
}

#[test]
fn gemini_results_without_ids_answer_their_calls_in_order() {
    let f = Gemini::default();
    let wire = vec![
        json!({"role": "user", "parts": [{"text": "two cities"}]}),
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "A"}}},
            {"functionCall": {"name": "get_weather", "args": {"city": "B"}}}
        ]}),
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"ok": true, "data": 1}}},
            {"functionResponse": {"name": "get_weather", "response": {"temp": 2}}}
        ]}),
    ];
    let msgs = f.parse_messages(&wire).unwrap();
    let Message::Assistant { tool_calls, .. } = &msgs[1] else {
        panic!()
    };
    let Message::Tool { results } = &msgs[2] else {
        panic!()
    };
    assert_eq!(results[0].call_id, tool_calls[0].id);
    assert_eq!(results[1].call_id, tool_calls[1].id);
    assert_ne!(tool_calls[0].id, tool_calls[1].id);
    assert_eq!(results[0].envelope, Envelope::Ok(json!(1)));
    // Foreign results (not envelopes) are taken as data.
    assert_eq!(results[1].envelope, Envelope::Ok(json!({"temp": 2})));
}

#[test]
fn foreign_tool_errors_stay_errors() {
    let msgs = Anthropic::default()
        .parse_messages(&[
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true}]}),
        ])
        .unwrap();
    let Message::Tool { results } = &msgs[1] else {
        panic!()
    };
    assert_eq!(results[0].envelope.code(), Some(ErrorCode::InternalError));
    assert_eq!(results[0].name, "x");
    assert!(
        OpenAiChat::default()
            .parse_messages(&[json!({"role": "wizard"})])
            .is_err()
    );
}
