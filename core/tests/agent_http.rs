//! The built-in HTTP clients against a local server replaying recorded provider streams and
//! scripted conversations: multi-round with parallel calls, a cut-off stream never executed,
//! 429 and 5xx retried with backoff, a model that loops until the step limit.

#![cfg(feature = "http")]

mod corpora;
mod replay_server;

use replay_server::{Reply, Server};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tooljig::agent::http::HttpModel;
use tooljig::agent::*;
use tooljig::providers::{Message, ModelRequest};
use tooljig::stream::StreamEvent;
use tooljig::*;

/// A Chat Completions stream as OpenAI writes it: role chunk, content, tool-call deltas
/// (arguments in pieces), finish reason, usage chunk, `[DONE]`.
fn openai_sse(text: &str, calls: &[(&str, &str, Value)]) -> String {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        )
    };
    let mut s = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    for word in text.split_inclusive(' ') {
        s.push_str(&chunk(json!({"content": word}), Value::Null));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        s.push_str(&chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        let text = args.to_string();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(5) {
            let p: String = piece.iter().collect();
            s.push_str(&chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    s.push_str(&chunk(json!({}), json!(finish)));
    s.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}})
    ));
    s
}

fn engine(counter: Arc<AtomicUsize>) -> Arc<Engine> {
    let e = Engine::new();
    let c = counter.clone();
    e.register(Tool::from_fn(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |a: Value, _| {
            c.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({"city": a["city"], "temp_c": 21})) }
        },
    ))
    .unwrap();
    let c = counter;
    e.register(Tool::from_fn(
        "make_file",
        "Writes a file.",
        json!({"type": "object", "properties": {"filename": {"type": "string"}, "lines_of_text": {"type": "array", "items": {"type": "string"}}}, "required": ["filename"]}),
        move |_, _| {
            c.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!("written")) }
        },
    ))
    .unwrap();
    Arc::new(e)
}

fn fast_retries(m: HttpModel) -> HttpModel {
    m.retries(3, Duration::from_millis(5), Duration::from_millis(50))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_round_parallel_calls_over_openai_compatible_http() {
    let server = Server::start(|req, n| match n {
        0 => {
            assert_eq!(req.body["tools"].as_array().unwrap().len(), 2);
            Reply::sse(
                openai_sse(
                    "",
                    &[
                        ("call_1", "get_weather", json!({"city": "Paris"})),
                        ("call_2", "get_weather", json!({"city": "Rome"})),
                    ],
                ),
                17,
            )
        }
        _ => Reply::sse(openai_sse("Paris and Rome are both 21°C.", &[]), 9),
    })
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let model = fast_retries(
        HttpModel::openai_compatible("gpt-test")
            .base_url(&server.url)
            .api_key("sk-test"),
    );
    let agent = Agent::new(engine(runs.clone()), Arc::new(model)).options(AgentOptions {
        system: Some("Be brief.".into()),
        mode: Mode::TalkFirst,
        ..Default::default()
    });
    let mut state = AgentState::new("Weather in Paris and Rome?");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent.run(&mut state, &Caller::default(), Some(tx)).await;
    assert_eq!(out.answer, "Paris and Rome are both 21°C.");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(out.counters.usage.total(), 60);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/chat/completions");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[0].body["stream"], true);
    assert_eq!(reqs[0].body["model"], "gpt-test");
    assert_eq!(
        reqs[0].body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    // The second request carries the assistant's calls and both results, in order.
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"][1]["id"], "call_2");
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_1");
    assert_eq!(msgs[4]["tool_call_id"], "call_2");
    assert_eq!(
        msgs[4]["content"],
        "{\"ok\":true,\"data\":{\"city\":\"Rome\",\"temp_c\":21}}"
    );
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let partials: Vec<&Value> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolInputDelta {
                call_id,
                partial: Some(p),
                ..
            } if call_id == "call_1" => Some(p),
            _ => None,
        })
        .collect();
    assert!(partials.len() >= 3, "arguments streamed in pieces");
    assert_eq!(*partials.last().unwrap(), &json!({"city": "Paris"}));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Paris and Rome are both 21°C.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_openai_stream_replays_over_http() {
    let Some(dir) = corpora::locate("wire/openai-chat-sse") else {
        return;
    };
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let (_, expected) =
            tooljig::stream::parse_stream(tooljig::providers::Provider::OpenAiChat, &bytes)
                .unwrap();
        let body = bytes.clone();
        let server = Server::start(move |_, _| Reply::sse(body.clone(), 64)).await;
        let model = HttpModel::openai_compatible("gpt-4o")
            .base_url(&server.url)
            .api_key("k");
        let turn = model
            .respond(
                ModelRequest {
                    messages: vec![Message::user("hi")],
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(turn, expected, "{}", path.display());
        replayed += 1;
    }
    assert!(replayed > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_anthropic_stream_is_never_executed() {
    let Some(dir) = corpora::locate("wire/anthropic-messages-sse") else {
        return;
    };
    let cut = std::fs::read(dir.join("incomplete_partial_json_response.txt")).unwrap();
    let done = std::fs::read(dir.join("basic_response.txt")).unwrap();
    let server =
        Server::start(move |_, n| Reply::sse(if n == 0 { cut.clone() } else { done.clone() }, 31))
            .await;
    let runs = Arc::new(AtomicUsize::new(0));
    // The key comes from the environment: CARGO_PKG_NAME is set by cargo for every test.
    let model = HttpModel::anthropic("claude-test")
        .base_url(&server.url)
        .api_key_env("CARGO_PKG_NAME");
    let agent = Agent::new(engine(runs.clone()), Arc::new(model));
    let mut state = AgentState::new("Write me a tax guide in taxes.txt");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent.run(&mut state, &Caller::default(), Some(tx)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the cut-off call never ran");
    assert_eq!(out.answer, "Hello there!");
    assert_eq!(
        out.counters.failures_by_code.get("incomplete_arguments"),
        Some(&1)
    );
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("x-api-key"), Some("tooljig"));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    let result = &reqs[1].body["messages"][2];
    assert_eq!(result["role"], "user");
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(
        result["content"][0]["tool_use_id"],
        "toolu_01EKqbqmZrGRXy18eN7m9kvY"
    );
    assert_eq!(result["content"][0]["is_error"], true);
    assert!(
        result["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("incomplete_arguments")
    );
    let mut incomplete = false;
    while let Ok(e) = rx.try_recv() {
        incomplete |= matches!(e, StreamEvent::ToolInputIncomplete { .. });
        assert!(!matches!(e, StreamEvent::ToolOutputAvailable { .. }));
    }
    assert!(incomplete);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_server_errors_are_retried_with_backoff() {
    let ok = json!({"id": "c", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
    let body = ok.clone();
    let server = Server::start(move |_, n| match n {
        0 => Reply::json(429, json!({"error": {"message": "slow down"}}))
            .header("retry-after-ms", "40"),
        1 => Reply::json(503, json!({"error": {"message": "overloaded"}})),
        _ => Reply::json(200, body.clone()),
    })
    .await;
    let model = fast_retries(
        HttpModel::openai_compatible("gpt-test")
            .base_url(&server.url)
            .stream(false),
    );
    let started = Instant::now();
    let turn = model
        .respond(
            ModelRequest {
                messages: vec![Message::user("hi")],
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(turn.content, "fine");
    assert_eq!(server.requests().len(), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "Retry-After was honoured"
    );

    // A request the provider refuses is not retried.
    let server = Server::start(|_, _| Reply::json(400, json!({"error": {"message": "bad"}}))).await;
    let model = fast_retries(
        HttpModel::openai_compatible("gpt-test")
            .base_url(&server.url)
            .stream(false),
    );
    let err = model
        .respond(ModelRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::InvalidRequest);
    assert_eq!(err.status, Some(400));
    assert_eq!(server.requests().len(), 1);

    // Persistent failure gives up after the retries, with the last error.
    let server = Server::start(|_, _| Reply::json(500, json!({}))).await;
    let model = fast_retries(
        HttpModel::openai_compatible("gpt-test")
            .base_url(&server.url)
            .stream(false),
    );
    let err = model
        .respond(ModelRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Server);
    assert_eq!(server.requests().len(), 4, "one attempt and three retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_times_out() {
    let server =
        Server::start(|_, _| Reply::json(200, json!({})).delay(Duration::from_millis(500))).await;
    let model = HttpModel::openai_compatible("gpt-test")
        .base_url(&server.url)
        .stream(false)
        .timeouts(Duration::from_millis(100), Duration::from_millis(100))
        .retries(1, Duration::from_millis(5), Duration::from_millis(5));
    let started = Instant::now();
    let err = model
        .respond(ModelRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Timeout);
    assert!(started.elapsed() < Duration::from_millis(450));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_loops_over_http_stops_at_the_step_limit() {
    let server = Server::start(|req, n| {
        if req.body["tool_choice"] == "none" {
            Reply::sse(openai_sse("I looked three times: 21°C.", &[]), 13)
        } else {
            let id = format!("call_{n}");
            Reply::sse(
                openai_sse(
                    "",
                    &[(id.as_str(), "get_weather", json!({"city": "Paris"}))],
                ),
                13,
            )
        }
    })
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let model = HttpModel::openai_compatible("gpt-test").base_url(&server.url);
    let agent = Agent::new(engine(runs.clone()), Arc::new(model)).options(AgentOptions {
        limits: AgentLimits {
            max_steps: 3,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut state = AgentState::new("weather?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::StepLimit
        }
    );
    assert_eq!(out.answer, "I looked three times: 21°C.");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[3].body["tool_choice"], "none");
    assert!(reqs[3].body["messages"].as_array().unwrap().iter().any(
        |m| m["role"] == "system" && m["content"].as_str().unwrap_or("").contains("step limit")
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_then_the_answer_over_http() {
    let server = Server::start(|req, _| {
        let msgs = req.body["messages"].as_array().unwrap();
        let last_user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone();
        let asked_already = msgs.iter().any(|m| m["role"] == "tool");
        if req.body["tool_choice"] == "none" {
            return Reply::sse(openai_sse("How long should the meeting be?", &[]), 11);
        }
        if last_user == "30 minutes" && msgs.last().unwrap()["role"] == "tool" {
            return Reply::sse(openai_sse("Booked 30 minutes with Aviad.", &[]), 11);
        }
        let args = if last_user == "30 minutes" {
            json!({"counterpart": "Aviad", "durationMins": 30})
        } else {
            json!({"counterpart": "Aviad"})
        };
        let id = if asked_already { "call_2" } else { "call_1" };
        Reply::sse(openai_sse("", &[(id, "schedule_meeting", args)]), 11)
    })
    .await;
    let e = Engine::new();
    e.register(Tool::from_fn(
        "schedule_meeting",
        "Schedules a meeting.",
        json!({"type": "object", "properties": {"counterpart": {"type": "string"}, "durationMins": {"type": "integer"}}, "required": ["counterpart", "durationMins"]}),
        |a: Value, _| async move { Ok(json!({"with": a["counterpart"], "mins": a["durationMins"]})) },
    ))
    .unwrap();
    let model = HttpModel::openai_compatible("gpt-test").base_url(&server.url);
    let agent = Agent::new(Arc::new(e), Arc::new(model));
    let mut state = AgentState::new("Book a meeting with Aviad");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(out.answer, "How long should the meeting be?");
    assert!(matches!(out.status, RunStatus::NeedsInput { .. }));
    let out = agent
        .send(&mut state, "30 minutes", &Caller::default(), None)
        .await;
    assert_eq!(out.answer, "Booked 30 minutes with Aviad.");
    assert_eq!(out.counters.tool_successes, 1);
    assert_eq!(out.counters.needs_loops, 1);
    // The second turn's request holds the needs result and the question before the answer.
    let reqs = server.requests();
    let msgs = reqs[2].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert_eq!(
        msgs[2]["content"],
        "{\"ok\":false,\"needs\":{\"durationMins\":true}}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_and_responses_endpoints_run_a_round_trip() {
    // Gemini: the model is in the path, the key in `x-goog-api-key`, calls arrive whole.
    let server = Server::start(|req, n| {
        let body = if n == 0 {
            assert!(req.body["tools"][0]["functionDeclarations"].is_array());
            json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Bonn"}}}]}, "finishReason": "STOP"}]})
        } else {
            let parts = &req.body["contents"][2]["parts"];
            assert_eq!(parts[0]["functionResponse"]["response"]["ok"], true);
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Bonn: 21°C."}]}, "finishReason": "STOP"}]})
        };
        Reply::sse(format!("data: {body}\r\n\r\n"), 7)
    })
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let model = HttpModel::gemini("gemini-test")
        .base_url(&server.url)
        .api_key("g-key");
    let agent = Agent::new(engine(runs.clone()), Arc::new(model));
    let mut state = AgentState::new("Weather in Bonn?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(out.answer, "Bonn: 21°C.");
    let reqs = server.requests();
    assert_eq!(
        reqs[0].path,
        "/models/gemini-test:streamGenerateContent?alt=sse"
    );
    assert_eq!(reqs[0].header("x-goog-api-key"), Some("g-key"));

    // Responses: typed events; the result goes back as a function_call_output item.
    let server = Server::start(|req, n| {
        let events = if n == 0 {
            vec![
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_r", "name": "get_weather", "arguments": ""}}),
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"city\":\"Nice\"}"}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_r", "name": "get_weather", "arguments": "{\"city\":\"Nice\"}", "status": "completed"}}),
                json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 5, "output_tokens": 5}}}),
            ]
        } else {
            let input = req.body["input"].as_array().unwrap();
            assert_eq!(input[1]["type"], "function_call");
            assert_eq!(input[1]["id"], "fc_1");
            assert_eq!(input[2]["type"], "function_call_output");
            assert_eq!(input[2]["call_id"], "call_r");
            vec![
                json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "Nice: 21°C."}),
                json!({"type": "response.completed", "response": {"status": "completed"}}),
            ]
        };
        let body: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect();
        Reply::sse(body, 13)
    })
    .await;
    let model = HttpModel::openai_responses("gpt-test")
        .base_url(&server.url)
        .api_key("k");
    let agent = Agent::new(engine(runs.clone()), Arc::new(model));
    let mut state = AgentState::new("Weather in Nice?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(out.answer, "Nice: 21°C.");
    assert_eq!(server.requests()[0].path, "/responses");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_to_a_streaming_request_is_read_as_json() {
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "whole"}}]}),
        )
    })
    .await;
    let model = HttpModel::openai_compatible("m").base_url(&server.url);
    let turn = model
        .respond(
            ModelRequest {
                messages: vec![Message::user("hi")],
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(turn.content, "whole");
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_headers_go_with_every_request_and_replace_the_defaults() {
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}),
        )
    })
    .await;
    let model = HttpModel::anthropic("claude-test")
        .base_url(&server.url)
        .api_key("k")
        .stream(false)
        .header("x-gateway-key", "g-1")
        .unwrap()
        .header("Anthropic-Version", "2024-01-01")
        .unwrap();
    let turn = model
        .respond(
            ModelRequest {
                messages: vec![Message::user("hi")],
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(turn.content, "hi");
    let req = &server.requests()[0];
    assert_eq!(req.header("x-gateway-key"), Some("g-1"));
    let versions: Vec<&str> = req
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("anthropic-version"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        versions,
        ["2024-01-01"],
        "the default is replaced, not doubled"
    );

    // A header no request could carry is refused when it is set, not at every attempt.
    let bad_name = HttpModel::openai_compatible("m").header("bad name", "v");
    assert_eq!(bad_name.err().unwrap().kind, ModelErrorKind::InvalidRequest);
    let bad_value = HttpModel::openai_compatible("m").header("x-a", "line\nbreak");
    assert!(bad_value.err().unwrap().message.contains("x-a"));
}
