//! A tooljig run served as a Vercel AI SDK UI message stream, the body a `useChat` front end
//! reads. Two responses: a run with text, parallel tool calls (one reporting progress and a
//! preliminary output), a failing tool and a call cut off mid-arguments (never executed); and a run that stops on a tool needing approval.
//!
//! `cargo run -p tooljig --example ui_message_stream -- <out-dir>` writes `answer.sse` and
//! `approval.sse` there (tests/ui-stream parses them with the real `ai` package); with no
//! argument it prints the first to stdout.

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::agent::{
    Agent, AgentOptions, AgentState, FallbackChain, Mode, ModelError, ScriptedModel, model_fn,
};
use tooljig::providers::{ModelTurn, ToolCall};
use tooljig::stream::StreamEvent;
use tooljig::stream::ui_message_stream::{HEADERS, UiMessageStream};
use tooljig::{Caller, Engine, ErrorCode, HandlerError, Policy, Tool};

fn engine() -> Result<Arc<Engine>, Box<dyn std::error::Error>> {
    let e = Engine::new();
    let city =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    e.register(Tool::from_fn(
        "get_weather",
        "Weather for a city.",
        city.clone(),
        |a: Value, ctx: tooljig::ToolContext| async move {
            // What the front end shows while the tool runs: progress, then a first look.
            ctx.progress
                .report(Some(0.5), Some("asking the weather service".into()));
            ctx.progress
                .partial(json!({"city": a["city"], "status": "loading"}));
            Ok(json!({"city": a["city"], "temp_c": 21}))
        },
    ))?;
    e.register(Tool::from_fn(
        "book_table",
        "Books a table.",
        city,
        |_, _| async move {
            Err(HandlerError::tool(
                ErrorCode::ExternalApiError,
                "the booking service is down",
            ))
        },
    ))?;
    e.register(Tool::from_fn(
        "make_file",
        "Writes a file.",
        json!({"type": "object", "properties": {"filename": {"type": "string"}, "lines": {"type": "array", "items": {"type": "string"}}}, "required": ["filename"]}),
        |_, _| async move { Ok(json!("written")) },
    ))?;
    e.register(
        Tool::from_fn(
            "send_email",
            "Sends an email.",
            json!({"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "body"]}),
            |_, _| async move { Ok(json!({"sent": true})) },
        )
        .policy(Policy::default().require_approval()),
    )?;
    Ok(Arc::new(e))
}

/// Runs `agent` on `message` and returns the UI message stream body.
async fn serve(agent: &Agent, message: &str, id: &str) -> String {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<StreamEvent>();
    let mut state = AgentState::new(message);
    let writer = tokio::spawn({
        let id = id.to_string();
        async move {
            let mut ui = UiMessageStream::new(id);
            let mut body = String::new();
            while let Some(e) = rx.recv().await {
                body.push_str(&ui.encode(&e));
            }
            body.push_str(&ui.done());
            body
        }
    });
    agent
        .run(&mut state, &Caller::principal("u1"), Some(tx))
        .await;
    writer.await.unwrap_or_default()
}

/// The two response bodies: a run with an answer, and a run waiting for approval.
pub async fn streams() -> Result<(String, String), Box<dyn std::error::Error>> {
    let engine = engine()?;
    let mut first = ModelTurn::calls(vec![
        ToolCall::new("call_w", "get_weather", r#"{"city": "Paris"}"#),
        ToolCall::new("call_b", "book_table", r#"{"city": "Paris"}"#),
        ToolCall {
            incomplete: true,
            ..ToolCall::new(
                "call_f",
                "make_file",
                r##"{"filename": "notes.txt", "lines": ["# Notes", "Fir"##,
            )
        },
    ]);
    first.content = "Let me check. ".into();
    let model = ScriptedModel::new(
        "m",
        [first, ModelTurn::text("Paris is 21°C. The booking service is down, and the file was cut off, so I did not write it.")],
    )
    .streaming();
    let talk_first = AgentOptions {
        mode: Mode::TalkFirst,
        ..Default::default()
    };
    // The preferred model is down: the fallback chain moves on, and the UI is told in passing.
    let down = model_fn("primary", |_, _| async {
        Err(ModelError::from_status(503, "overloaded"))
    });
    let chain = FallbackChain::new(vec![down, Arc::new(model)]);
    let agent = Agent::new(engine.clone(), Arc::new(chain)).options(talk_first.clone());
    let answer = serve(
        &agent,
        "Weather in Paris, book a table, write notes",
        "msg_answer",
    )
    .await;

    let model = ScriptedModel::new(
        "m",
        [ModelTurn::calls(vec![ToolCall::new(
            "call_e",
            "send_email",
            r#"{"to": "ana@example.com", "body": "Hi Ana"}"#,
        )])],
    )
    .streaming();
    let agent = Agent::new(engine, Arc::new(model)).options(talk_first);
    let approval = serve(&agent, "Email Ana hi", "msg_approval").await;

    Ok((answer, approval))
}

#[tokio::main]
/// Writes the two streams to the folder given as the first argument, or prints the first.
#[allow(dead_code)] // A test includes this file for `streams` alone.
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (answer, approval) = streams().await?;
    match std::env::args().nth(1) {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(format!("{dir}/answer.sse"), &answer)?;
            std::fs::write(format!("{dir}/approval.sse"), &approval)?;
            let headers: serde_json::Map<String, Value> = HEADERS
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            std::fs::write(
                format!("{dir}/headers.json"),
                serde_json::to_string(&headers)?,
            )?;
        }
        None => print!("{answer}"),
    }
    Ok(())
}
