//! Scheduling a meeting: "Set a meeting with Aviad tomorrow between 12:00 and 14:00 Israel time."
//!
//! A small planner proposes `network_schedule_meeting`; the duration is missing, so the tool
//! answers `needs`, which becomes one clarifying question from a larger responder; the user
//! answers "30 minutes", the loop goes on and the call is made. The model only ever names
//! the counterpart: the server resolves "Aviad" to the connection and user ids itself
//! (hidden parameters filled by a resolver), so no id comes from the model.
//!
//! Both models are scripted, so it runs offline: `cargo run -p tooljig --example schedule_meeting`

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::agent::{Agent, AgentOptions, AgentState, Mode, RunStatus, ScriptedModel};
use tooljig::providers::{Message, ModelTurn, ToolCall};
use tooljig::stream::StreamEvent;
use tooljig::{Caller, Engine, HandlerError, HiddenParam, Policy, Resolution, Tool, resolver_fn};

/// The app's contacts: who the user may schedule with, by name or email.
fn contacts() -> Vec<Value> {
    vec![
        json!({"name": "Aviad", "email": "aviad@example.com", "connectionId": "conn_17", "userId": "user_42"}),
        json!({"name": "Noa", "email": "noa@example.com", "connectionId": "conn_23", "userId": "user_77"}),
    ]
}

fn engine() -> Result<Arc<Engine>, Box<dyn std::error::Error>> {
    // Server-side resolution of the human reference the model passes.
    let lookup = |field: &'static str| {
        resolver_fn(move |req| async move {
            let wanted = req.value.as_str().unwrap_or("").to_lowercase();
            let hits: Vec<Value> = contacts()
                .into_iter()
                .filter(|c| {
                    c["name"].as_str().unwrap_or("").to_lowercase() == wanted
                        || c["email"] == wanted.as_str()
                })
                .collect();
            Ok(match hits.as_slice() {
                [one] => Resolution::Found {
                    value: one[field].clone(),
                },
                [] => Resolution::NotFound,
                many => Resolution::Ambiguous {
                    candidates: many.iter().map(|c| c["name"].clone()).collect(),
                },
            })
        })
    };
    let engine = Engine::new()
        .with_resolver("connection", lookup("connectionId"))
        .with_resolver("counterpart_user", lookup("userId"));
    let schema = json!({
        "type": "object",
        "properties": {
            "counterpart": {"type": "string", "description": "Human name or email mentioned by the user (e.g., 'Aviad')."},
            "durationMins": {"type": "integer", "minimum": 5, "maximum": 240},
            "startWindow": {"type": "string", "description": "ISO start of candidate window (optional)."},
            "endWindow": {"type": "string", "description": "ISO end of candidate window (optional)."},
            "tzHint": {"type": "string", "description": "IANA timezone when user mentions 'Israel time' etc. (optional)."},
            "connectionId": {"type": "string"},
            "counterpartUserId": {"type": "string"}
        },
        "required": ["counterpart"]
    });
    engine.register(
        Tool::from_fn(
            "network_schedule_meeting",
            "Start a negotiation session and propose slots to a counterpart.",
            schema,
            |args: Value, _ctx| async move {
                // The seed's rule: no duration, no proposals; ask for it.
                let Some(mins) = args["durationMins"].as_u64() else {
                    return Err(HandlerError::needs(["durationMins"]));
                };
                Ok(json!({
                    "sessionId": "sess_9f2",
                    "connectionId": args["connectionId"],
                    "counterpartUserId": args["counterpartUserId"],
                    "durationMins": mins,
                    "proposals": [
                        {"start": "2026-11-23T12:00:00+02:00", "end": format!("2026-11-23T12:{mins:02}:00+02:00")},
                        {"start": "2026-11-23T13:00:00+02:00", "end": format!("2026-11-23T13:{mins:02}:00+02:00")}
                    ]
                }))
            },
        )
        .policy(
            Policy::default()
                .hidden("connectionId", HiddenParam::Resolver { resolver: "connection".into(), input: "counterpart".into() })
                .hidden("counterpartUserId", HiddenParam::Resolver { resolver: "counterpart_user".into(), input: "counterpart".into() }),
        ),
    )?;
    Ok(Arc::new(engine))
}

/// The small planner: proposes the call from what the conversation holds.
fn planner() -> Arc<ScriptedModel> {
    let m = ScriptedModel::new("small-planner", Vec::<ModelTurn>::new()).streaming();
    let args = |extra: Value| {
        let mut a = json!({"counterpart": "Aviad", "startWindow": "2026-11-23T12:00:00+02:00",
                           "endWindow": "2026-11-23T14:00:00+02:00", "tzHint": "Asia/Jerusalem"});
        if let (Some(a), Some(e)) = (a.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        a.to_string()
    };
    m.push_with(move |req| {
        // The model sees only model-facing parameters: the ids are not offered.
        assert!(
            req.tools[0].input_schema["properties"]
                .get("connectionId")
                .is_none()
        );
        Ok(ModelTurn::calls(vec![ToolCall::new(
            "call_1",
            "network_schedule_meeting",
            args(json!({})),
        )]))
    });
    m.push_with(move |req| {
        // The user's answer is the last user message: read the number of minutes from it.
        let answer = req.messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        });
        let mins: u64 = answer
            .unwrap_or_default()
            .split(|c: char| !c.is_ascii_digit())
            .find_map(|w| w.parse().ok())
            .unwrap_or(30);
        Ok(ModelTurn::calls(vec![ToolCall::new(
            "call_2",
            "network_schedule_meeting",
            args(json!({"durationMins": mins})),
        )]))
    });
    Arc::new(m)
}

/// The larger responder: the clarifying question, then the summary.
fn responder() -> Arc<ScriptedModel> {
    let m = ScriptedModel::new("large-responder", Vec::<ModelTurn>::new()).streaming();
    m.push_with(|_| {
        Ok(ModelTurn::text(
            "How long should the meeting with Aviad be?",
        ))
    });
    m.push_with(|req| {
        let data = req
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Tool { results } => results[0].envelope.data().cloned(),
                _ => None,
            })
            .unwrap_or_default();
        Ok(ModelTurn::text(format!(
            "Done: I started session {} with Aviad and proposed {} slots of {} minutes tomorrow (Israel time). \
             Aviad has been notified; I'll tell you when a slot is confirmed.",
            data["sessionId"].as_str().unwrap_or("?"),
            data["proposals"].as_array().map_or(0, Vec::len),
            data["durationMins"]
        )))
    });
    Arc::new(m)
}

/// Prints what a front end would show as it happens.
fn show(mut rx: tokio::sync::mpsc::UnboundedReceiver<StreamEvent>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            match e {
                StreamEvent::TextDelta { delta } => print!("{delta}"),
                StreamEvent::ToolInputAvailable { tool, input, .. } => {
                    println!("  [calling {tool} {input}]")
                }
                StreamEvent::ToolOutputAvailable { tool, output, .. } => {
                    println!("  [{tool} → {output}]")
                }
                StreamEvent::ToolOutputError { tool, error, .. } => {
                    println!("  [{tool} failed: {error}]")
                }
                StreamEvent::Finish { .. } => println!(),
                _ => {}
            }
        }
    })
}

#[tokio::main]
/// Runs the scenario: the question, the stored run, the answer, the meeting.
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::new(engine()?, planner())
        .responder(responder())
        .options(AgentOptions {
            system: Some(
                "You are Perin. Prefer tools for actionable intents; never invent ids.".into(),
            ),
            mode: Mode::Auto,
            ..Default::default()
        });
    let user = Caller::principal("user_1");

    let first = "Can you set a meeting with Aviad tomorrow between 12:00 and 14:00 Israel time?";
    println!("user: {first}\nperin: ");
    let mut state = AgentState::new(first);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let printer = show(rx);
    let out = agent.run(&mut state, &user, Some(tx)).await;
    printer.await?;
    let RunStatus::NeedsInput { needs } = &out.status else {
        return Err(format!("expected a question, got {:?}", out.status).into());
    };
    println!(
        "(needs {:?}; the run is stored as {} bytes of JSON)",
        needs[0].fields,
        state.to_json().len()
    );

    // Later, maybe in another process: the stored state and the user's answer.
    let mut state = AgentState::from_json(&state.to_json())?;
    println!("\nuser: 30 minutes\nperin: ");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let printer = show(rx);
    let out = agent.send(&mut state, "30 minutes", &user, Some(tx)).await;
    printer.await?;
    assert!(
        matches!(out.status, RunStatus::Finished { .. }),
        "{:?}",
        out.status
    );
    assert!(out.answer.contains("sess_9f2"));

    let c = &out.counters;
    println!(
        "counters: steps {}, model calls {}, tool calls {} ({} ok), needs loops {}, failures {:?}",
        c.steps, c.model_calls, c.tool_calls, c.tool_successes, c.needs_loops, c.failures_by_code
    );
    Ok(())
}
