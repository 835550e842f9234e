//! `Agent::review_plan`: the app's last word on a turn's plan. It adds a call the model
//! skipped (seed 002's forced fallback), keeps or drops the model's, cannot widen access, and
//! a failing reviewer leaves the model's calls.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::agent::*;
use tooljig::providers::{ModelTurn, ToolCall};
use tooljig::*;

type Ran = Arc<Mutex<Vec<(String, Value)>>>;

fn engine(ran: Ran) -> Arc<Engine> {
    let engine = Engine::new();
    for name in ["search_memories", "analyze_path_switch", "drop_tables"] {
        let ran = ran.clone();
        let mut spec = ToolSpec::new(name, name, json!({"type": "object"}));
        if name == "drop_tables" {
            spec.policy.roles = vec!["admin".into()];
        }
        let handler = handler_fn(move |args: Value, ctx: ToolContext| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push((ctx.tool.to_string(), args));
                Ok(json!("done"))
            }
        });
        engine.register(Tool::new(spec, handler)).unwrap();
    }
    Arc::new(engine)
}

/// Adds the path switch whenever the user asks to switch and the plan lacks it; tries a tool
/// the caller may not use; fails on "fail".
fn reviewer() -> Arc<dyn Handler> {
    handler_fn(|request: Value, _ctx| async move {
        let message = request["message"].as_str().unwrap_or_default().to_string();
        if message.contains("fail") {
            return Err(HandlerError::unexpected("the reviewer broke"));
        }
        let mut calls = request["calls"].as_array().cloned().unwrap_or_default();
        let planned = calls.iter().any(|c| c["name"] == "analyze_path_switch");
        if message.contains("switch") && !planned {
            calls.push(json!({"name": "analyze_path_switch", "arguments": {"message": message}}));
            calls.push(json!({"name": "drop_tables"}));
        }
        Ok(Value::Array(calls))
    })
}

#[tokio::test]
async fn the_reviewer_adds_a_skipped_call_and_cannot_widen_access() {
    let ran: Ran = Default::default();
    let planner = ScriptedModel::new(
        "planner",
        [
            // Turn 1: the model searches memories and forgets the path switch.
            ModelTurn::calls(vec![ToolCall::new(
                "c1",
                "search_memories",
                r#"{"query": "switch"}"#,
            )]),
            ModelTurn::text("Switched."),
            // Turn 2: the model answers without tools; the reviewer adds the call.
            ModelTurn::text("Sure."),
            ModelTurn::text("Switched again."),
            // Turn 3: the reviewer fails: the model's call runs as it was.
            ModelTurn::calls(vec![ToolCall::new(
                "c9",
                "search_memories",
                r#"{"query": "x"}"#,
            )]),
            ModelTurn::text("Done."),
        ],
    )
    .shared();
    let agent = Agent::new(engine(ran.clone()), planner.clone()).review_plan(reviewer());
    let ana = Caller::principal("ana");
    let mut state = AgentState::new("can we switch to self-empathy?");
    let out = agent.run(&mut state, &ana, None).await;
    assert_eq!(out.answer, "Switched.");
    // The two calls ran in parallel, in either order.
    let mut ran_now = ran.lock().unwrap().clone();
    ran_now.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(
        ran_now,
        vec![
            ("search_memories".to_string(), json!({"query": "switch"})),
            (
                "analyze_path_switch".to_string(),
                json!({"message": "can we switch to self-empathy?"})
            ),
        ],
        "the added call ran; drop_tables (admin only) was dropped"
    );
    // The responder saw both results.
    let second = &planner.requests()[1];
    let last = serde_json::to_value(second.messages.last().unwrap()).unwrap();
    assert_eq!(last["results"].as_array().unwrap().len(), 2, "{last}");

    let out = agent
        .send(&mut state, "switch back please", &ana, None)
        .await;
    assert_eq!(out.answer, "Switched again.");
    assert_eq!(
        ran.lock().unwrap().len(),
        3,
        "a text-only plan got the fallback call"
    );

    let out = agent.send(&mut state, "this will fail", &ana, None).await;
    assert_eq!(out.answer, "Done.");
    let ran_now = ran.lock().unwrap().clone();
    assert_eq!(ran_now.len(), 4);
    assert_eq!(
        ran_now[3],
        ("search_memories".to_string(), json!({"query": "x"}))
    );
}
