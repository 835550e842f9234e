//! The app's last word on a turn's plan. After the planner answered and before anything
//! runs, a reviewer (app code, called like a handler) gets the user's message, the calls the
//! model asked for and the names of the tools the caller may use, and answers the calls to
//! run. It is how an app adds a call the model skipped but the turn needs (seed 002's forced
//! fallback: the path switch checked whenever the user asks to switch, even when the planner
//! forgot) or drops one a heuristic knows is wasted.
//!
//! The answer is a list of `{"id"?, "name", "arguments"?}`: an id of one of the model's calls
//! keeps that call (its arguments replaced when given); any other entry is a new call. A call
//! of a tool the caller may not use is dropped (the reviewer cannot widen access), and every
//! call still goes through every guardrail. A reviewer that fails, times out or answers
//! something other than a list leaves the model's calls as they were (and says so in the log).

use super::Agent;
use super::context::Ctx;
use crate::providers::ToolCall;
use serde_json::{Value, json};

impl Agent {
    /// The calls to run for the planner's `calls`, after the app's reviewer, if any.
    pub(super) async fn reviewed(&self, ctx: &Ctx<'_>, calls: Vec<ToolCall>) -> Vec<ToolCall> {
        let Some(reviewer) = &self.reviewer else {
            return calls;
        };
        let usable: Vec<String> = self
            .engine
            .specs_for(&ctx.caller)
            .into_iter()
            .map(|s| s.name)
            .collect();
        let request = json!({
            "message": ctx.state.last_user_text(),
            "calls": calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": arguments_of(c)})).collect::<Vec<_>>(),
            "tools": usable,
        });
        let answer = match self
            .ask_hook(ctx, "review_plan", reviewer.as_ref(), request)
            .await
        {
            Ok(Value::Array(items)) => items,
            Ok(other) => {
                tracing::warn!(answer = %other, "review_plan answered no list of calls; running the model's");
                return calls;
            }
            Err(why) => {
                tracing::warn!(error = %why, "review_plan failed; running the model's calls");
                return calls;
            }
        };
        let mut reviewed = Vec::new();
        for (i, item) in answer.iter().enumerate() {
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                tracing::warn!(item = %item, "review_plan: a call without a name is ignored");
                continue;
            };
            if !usable.iter().any(|u| u == name) {
                tracing::warn!(
                    tool = name,
                    "review_plan: a tool the caller may not use is dropped"
                );
                continue;
            }
            let id = item.get("id").and_then(Value::as_str);
            let mut call = match calls.iter().find(|c| Some(c.id.as_str()) == id) {
                Some(original) => original.clone(),
                None => ToolCall {
                    id: id.map_or_else(|| format!("review_{i}"), str::to_string),
                    name: name.to_string(),
                    arguments: json!({}),
                    incomplete: false,
                    provider_data: None,
                },
            };
            call.name = name.to_string();
            if let Some(arguments) = item.get("arguments") {
                call.arguments = arguments.clone();
            }
            reviewed.push(call);
        }
        reviewed
    }
}

/// A call's arguments as a value: providers that send them as JSON text are parsed, so the
/// reviewer reads one shape (text that is not JSON stays text).
fn arguments_of(call: &ToolCall) -> Value {
    match &call.arguments {
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| call.arguments.clone())
        }
        other => other.clone(),
    }
}
