//! OpenAI Responses and Gemini streams (no recorded corpus: written from the documented
//! event shapes), stream errors, and the UI message stream mapping.

use serde_json::{Value, json};
use tooljig::providers::{FinishReason, Provider};
use tooljig::stream::ui_message_stream::to_ui_message_stream;
use tooljig::stream::{StreamEvent, StreamParser, parse_stream};
use tooljig::{ErrorCode, ToolError};

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn responses_stream(cut: bool) -> String {
    let mut ev = vec![
        (
            "response.created",
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "model": "gpt-4.1", "output": []}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Checking "}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "now."}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "", "status": "in_progress"}}),
        ),
        (
            "response.function_call_arguments.delta",
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"city\":"}),
        ),
        (
            "response.function_call_arguments.delta",
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "\"Paris\"}"}),
        ),
        (
            "response.function_call_arguments.done",
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"city\":\"Paris\"}"}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather", "arguments": "", "status": "in_progress"}}),
        ),
        (
            "response.function_call_arguments.delta",
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 2, "delta": "{\"city\":\"Ro"}),
        ),
    ];
    if cut {
        ev.push(("response.incomplete", json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 30, "output_tokens": 16}}})));
    } else {
        ev.push(("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 2, "delta": "me\"}"})));
        ev.push(("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}", "status": "completed"}})));
        ev.push(("response.completed", json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 30, "output_tokens": 20}}})));
    }
    sse(&ev)
}

#[test]
fn openai_responses_stream() {
    let (events, turn) = parse_stream(
        Provider::OpenAiResponses,
        responses_stream(false).as_bytes(),
    )
    .unwrap();
    assert_eq!(turn.content, "Checking now.");
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    assert_eq!(turn.usage.total(), 50);
    assert_eq!(turn.model.as_deref(), Some("gpt-4.1"));
    let calls: Vec<(&str, String, bool)> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments_text(), c.incomplete))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "{\"city\":\"Paris\"}".to_string(), false),
            ("call_2", "{\"city\":\"Rome\"}".to_string(), false)
        ]
    );
    // The item id is kept so the call can be sent back as the same item.
    assert_eq!(
        turn.tool_calls[0].provider_data,
        Some(json!({"id": "fc_1"}))
    );
    let available = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolInputAvailable { .. }))
        .count();
    assert_eq!(available, 2);

    let (events, turn) =
        parse_stream(Provider::OpenAiResponses, responses_stream(true).as_bytes()).unwrap();
    assert_eq!(turn.finish_reason, FinishReason::Length);
    assert!(!turn.tool_calls[0].incomplete);
    assert!(turn.tool_calls[1].incomplete);
    assert!(events.iter().any(|e| matches!(e,
        StreamEvent::ToolInputIncomplete { call_id, partial: Some(p), .. } if call_id == "call_2" && *p == json!({"city": "Ro"}))));
    let (run, refused) = turn.into_batch();
    assert_eq!(run.len(), 1);
    assert_eq!(refused[0].call_id, "call_2");
}

#[test]
fn gemini_stream() {
    let body = [
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me "}]}}], "modelVersion": "gemini-2.5-flash"}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "check."}, {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "abc"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}),
    ]
    .iter()
    .map(|d| format!("data: {d}\r\n\r\n"))
    .collect::<String>();
    let (events, turn) = parse_stream(Provider::Gemini, body.as_bytes()).unwrap();
    assert_eq!(turn.content, "Let me check.");
    assert_eq!(turn.finish_reason, FinishReason::ToolCalls);
    assert_eq!(turn.usage.total(), 15);
    assert_eq!(turn.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(
        turn.tool_calls[0].provider_data,
        Some(json!({"thoughtSignature": "abc"}))
    );
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            StreamEvent::TextDelta { .. } => "text",
            StreamEvent::ToolInputStart { .. } => "start",
            StreamEvent::ToolInputDelta { .. } => "delta",
            StreamEvent::ToolInputAvailable { .. } => "available",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "text", "start", "delta", "available"]);
}

#[test]
fn provider_error_events_fail_the_turn() {
    let anthropic = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let e = parse_stream(Provider::Anthropic, anthropic.as_bytes()).unwrap_err();
    assert!(e.message.contains("Overloaded"));
    let openai = "data: {\"error\": {\"message\": \"server had an error\"}}\n\n";
    assert!(parse_stream(Provider::OpenAiChat, openai.as_bytes()).is_err());
    let garbage = "data: {not json\n\n";
    assert!(parse_stream(Provider::OpenAiChat, garbage.as_bytes()).is_err());
}

#[test]
fn a_dropped_openai_connection_leaves_open_calls_incomplete() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}}]}}]}\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n";
    let mut p = StreamParser::new(Provider::OpenAiChat);
    let events = p.push(body.as_bytes()).unwrap();
    // call_a is whole as soon as call_b starts.
    assert!(events.iter().any(
        |e| matches!(e, StreamEvent::ToolInputAvailable { call_id, .. } if call_id == "call_a")
    ));
    let (rest, turn) = p.finish().unwrap();
    assert_eq!(turn.finish_reason, FinishReason::Unfinished);
    assert!(!turn.tool_calls[0].incomplete);
    assert!(turn.tool_calls[1].incomplete);
    assert!(
        matches!(&rest[0], StreamEvent::ToolInputIncomplete { call_id, .. } if call_id == "call_b")
    );
}

#[test]
fn ui_message_stream_mapping() {
    let events = vec![
        StreamEvent::Start { run_id: "r".into() },
        StreamEvent::StepStart { step: 1 },
        StreamEvent::TextDelta {
            delta: "Hi ".into(),
        },
        StreamEvent::TextDelta {
            delta: "there".into(),
        },
        StreamEvent::ToolInputStart {
            call_id: "c1".into(),
            tool: "t".into(),
        },
        StreamEvent::ToolInputDelta {
            call_id: "c1".into(),
            delta: "{\"a\":".into(),
            partial: Some(json!({})),
        },
        StreamEvent::ToolInputAvailable {
            call_id: "c1".into(),
            tool: "t".into(),
            input: json!({"a": 1}),
        },
        StreamEvent::ToolOutputAvailable {
            call_id: "c1".into(),
            tool: "t".into(),
            output: json!({"ok": false, "needs": {"when": true}}),
        },
        StreamEvent::ToolOutputError {
            call_id: "c9".into(),
            tool: "u".into(),
            error: ToolError::new(ErrorCode::Timeout, "too slow"),
        },
        StreamEvent::Error {
            message: "model a failed".into(),
        },
        StreamEvent::StepFinish {
            step: 1,
            finish_reason: FinishReason::ToolCalls,
            usage: Default::default(),
        },
        StreamEvent::Finish {
            finish_reason: FinishReason::Stop,
        },
    ];
    let body = to_ui_message_stream("m1", &events);
    let chunks: Vec<Value> = body
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| f.strip_prefix("data: ").unwrap())
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(body.ends_with("data: [DONE]\n\n"));
    assert_eq!(
        chunks,
        vec![
            json!({"type": "start", "messageId": "m1"}),
            json!({"type": "start-step"}),
            json!({"type": "text-start", "id": "text-m1-1"}),
            json!({"type": "text-delta", "id": "text-m1-1", "delta": "Hi "}),
            json!({"type": "text-delta", "id": "text-m1-1", "delta": "there"}),
            json!({"type": "text-end", "id": "text-m1-1"}),
            json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "t"}),
            json!({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{\"a\":"}),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "t", "input": {"a": 1}}),
            json!({"type": "tool-output-available", "toolCallId": "c1", "output": {"ok": false, "needs": {"when": true}}}),
            // A result for a call the stream never showed gets its part first.
            json!({"type": "tool-input-available", "toolCallId": "c9", "toolName": "u", "input": {}}),
            json!({"type": "tool-output-error", "toolCallId": "c9", "errorText": "timeout: too slow"}),
            json!({"type": "data-tooljig-error", "data": {"message": "model a failed"}, "transient": true}),
            json!({"type": "finish-step"}),
            json!({"type": "finish", "finishReason": "stop"}),
        ]
    );
}

#[test]
fn tool_call_deltas_without_an_index_continue_the_last_call() {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": " 1}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let body: String = chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .chain(["data: [DONE]\n\n".to_string()])
        .collect();
    let (_, turn) = parse_stream(Provider::OpenAiChat, body.as_bytes()).unwrap();
    let calls: Vec<(String, String)> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.clone(), c.arguments_text()))
        .collect();
    assert_eq!(
        calls,
        [
            ("a".to_string(), "{\"x\": 1}".to_string()),
            ("b".to_string(), "{}".to_string())
        ]
    );
}
