//! `NativeAgent`: the core's agent loop (planner → executor → responder) for JavaScript.
//!
//! A run takes the conversation state as the core's own JSON (`AgentState::to_json`, the same
//! text the Python binding stores, so a run suspended in one can resume in the other) and
//! hands back the new state beside the outcome. Its events are pulled by the JS layer's async
//! iterator from `NativeAgentRun`, a burst at a time, like a batch's.

use crate::convert::neutral::{invalid, js, parse};
use crate::convert::{keys, shape};
use crate::engine::JsEngine;
use crate::events::RunChannels;
use crate::handler::JsHandler;
use crate::model::JsModel;
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::sync::oneshot;
use tooljig::agent::{Agent, AgentOptions, AgentState, Mode};
use tooljig::stream::StreamEvent;
use tooljig::{CallResult, Caller};

/// An agent over an engine and its models.
#[napi(js_name = "NativeAgent")]
pub struct JsAgent {
    agent: Arc<Agent>,
}

/// What a run call does.
enum Action {
    Run,
    Send(String),
    Resume,
    ResumeWithResults(Vec<CallResult>),
}

#[napi]
impl JsAgent {
    /// An agent whose planner is `planner` and, when given, a different `responder`.
    /// `options`: `{system, limits: {maxSteps, maxToolCallsPerStep, maxToolCallsPerRun,
    /// deadlineMs, tokenBudget, batchDeadlineMs}, mode, responderTools, protocol, maxTokens,
    /// temperature, concurrency}`.
    /// `selector` is the index, in the engine's JS table, of the app's pick of each turn's
    /// tools (`selectTools`), called like a handler with `{message, tools}`; `reviewer` the
    /// same of its review of each turn's plan (`reviewPlan`), with `{message, calls, tools}`.
    #[napi(constructor)]
    pub fn new(
        engine: &JsEngine,
        planner: &JsModel,
        responder: Option<&JsModel>,
        options: Option<Value>,
        selector: Option<u32>,
        reviewer: Option<u32>,
    ) -> napi::Result<Self> {
        let options: AgentOptions = match options {
            None | Some(Value::Null) => AgentOptions::default(),
            Some(o) => parse("agent options", o)?,
        };
        let mut agent = Agent::new(engine.core(), planner.client.clone()).options(options);
        if let Some(r) = responder {
            agent = agent.responder(r.client.clone());
        }
        if let Some(index) = selector {
            agent = agent.select_tools(Arc::new(JsHandler::new(engine.dispatcher(), index)));
        }
        if let Some(index) = reviewer {
            agent = agent.review_plan(Arc::new(JsHandler::new(engine.dispatcher(), index)));
        }
        Ok(JsAgent {
            agent: Arc::new(agent),
        })
    }

    /// A new conversation state (core JSON text) whose first user message is `message`.
    #[napi]
    pub fn new_state(message: String) -> String {
        AgentState::new(message).to_json()
    }

    /// A state over an existing neutral conversation (camelCase or snake_case keys).
    #[napi]
    pub fn state_from_messages(messages: Value) -> napi::Result<String> {
        Ok(AgentState::from_messages(parse("messages", messages)?).to_json())
    }

    /// The state's fields for reading (camelCase keys): `runId`, `messages`, `status`,
    /// `counters`, `answer`, ...
    #[napi]
    pub fn state_view(state: String) -> napi::Result<Value> {
        let state = AgentState::from_json(&state).map_err(|e| invalid("agent state", e))?;
        Ok(js(&state))
    }

    /// Starts a run. `action`: `run`, `send` (`input`: the user's message), `resume`, or
    /// `resumeWithResults` (`input`: the results as JSON text, as `Engine.run` gives them).
    /// `state`: the core's state JSON; `options`: `{caller, mode}` as JSON text.
    #[napi]
    pub fn start(
        &self,
        action: String,
        state: String,
        input: Option<String>,
        options: Option<String>,
    ) -> napi::Result<JsAgentRun> {
        let mut state = AgentState::from_json(&state).map_err(|e| invalid("agent state", e))?;
        let action = match (action.as_str(), input) {
            ("run", _) => Action::Run,
            ("send", Some(message)) => Action::Send(message),
            ("resume", _) => Action::Resume,
            ("resumeWithResults", Some(results)) => {
                let v: Value = serde_json::from_str(&results).map_err(|e| invalid("results", e))?;
                Action::ResumeWithResults(parse("results", v)?)
            }
            (other, _) => {
                return Err(invalid(
                    "agent action",
                    format!("{other:?} (send and resumeWithResults need their input)"),
                ));
            }
        };
        let (caller, mode) = run_options(options)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = oneshot::channel();
        let agent = self.agent.clone();
        napi::bindgen_prelude::spawn(async move {
            let events = Some(tx);
            let out = match action {
                Action::Run => Ok(agent.run_with_mode(&mut state, &caller, events, mode).await),
                Action::Send(m) => {
                    state.messages.push(tooljig::providers::Message::user(m));
                    Ok(agent.run_with_mode(&mut state, &caller, events, mode).await)
                }
                Action::Resume => agent.resume(&mut state, &caller, events).await,
                Action::ResumeWithResults(r) => {
                    agent
                        .resume_with_results(&mut state, r, &caller, events)
                        .await
                }
            };
            let done = match out {
                Ok(outcome) => json!({"outcome": js(&outcome), "state": state.to_json()}),
                Err(e) => json!({"error": serde_json::to_value(&e).unwrap_or(Value::Null)}),
            };
            let _ = done_tx.send(done.to_string());
        });
        Ok(JsAgentRun {
            channels: RunChannels::new(rx, done_rx),
        })
    }
}

/// The caller and the turn's mode of a run.
fn run_options(options: Option<String>) -> napi::Result<(Caller, Option<Mode>)> {
    let Some(text) = options else {
        return Ok((Caller::default(), None));
    };
    let mut o: serde_json::Map<String, Value> =
        serde_json::from_str(&text).map_err(|e| invalid("run options", e))?;
    let caller = match o.remove("caller") {
        None | Some(Value::Null) => Caller::default(),
        Some(c) => serde_json::from_value(keys::from_js(c, shape::CALLER))
            .map_err(|e| invalid("options.caller", e))?,
    };
    let mode = match o.remove("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(
            serde_json::from_value(Value::String(keys::snake(&m)))
                .map_err(|e| invalid("options.mode", e))?,
        ),
        Some(other) => return Err(invalid("options.mode", format!("{other}"))),
    };
    if let Some(k) = o.keys().next() {
        return Err(invalid(
            "run options",
            format!("unknown option {k:?}; expected caller, mode"),
        ));
    }
    Ok((caller, mode))
}

/// The events and the end of one agent run.
#[napi(js_name = "NativeAgentRun")]
pub struct JsAgentRun {
    channels: RunChannels<StreamEvent>,
}

#[napi]
impl JsAgentRun {
    /// The next events as JSON array text (camelCase keys), or null once the run has ended.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        self.channels.next(env, shape::AGENT_EVENTS)
    }

    /// How the run ended, as JSON text: `{outcome, state}` (`state`: the core's state JSON)
    /// or `{error: {code, message}}` when a resume was refused.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn result<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        self.channels.result(env, "agent run")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::camel_json::to_camel_json;
    use tooljig::providers::{FinishReason, Usage};
    use tooljig::{ErrorCode, ToolError};

    /// The patterns give the bytes `neutral.rs`'s rule gives (every key renamed but the data's).
    #[test]
    fn agent_events_are_written_as_the_neutral_rule_renames_them() {
        let data = json!({"user_id": 1, "nested_obj": {"inner_key": [{"deep_key": null}]}});
        let mut error = ToolError::new(ErrorCode::RateLimited, "slow down");
        error.details.insert("retry_after_ms".into(), json!(20));
        let events = vec![
            StreamEvent::Start { run_id: "r".into() },
            StreamEvent::StepStart { step: 1 },
            StreamEvent::TextDelta {
                delta: "a_b".into(),
            },
            StreamEvent::ReasoningDelta { delta: "x".into() },
            StreamEvent::ToolInputStart {
                call_id: "c".into(),
                tool: "t".into(),
            },
            StreamEvent::ToolInputDelta {
                call_id: "c".into(),
                delta: "{".into(),
                partial: Some(data.clone()),
            },
            StreamEvent::ToolInputAvailable {
                call_id: "c".into(),
                tool: "t".into(),
                input: data.clone(),
            },
            StreamEvent::ToolInputIncomplete {
                call_id: "c".into(),
                tool: "t".into(),
                text: "{\"user_id\"".into(),
                partial: Some(data.clone()),
                reason: "max_tokens".into(),
            },
            StreamEvent::ToolOutputAvailable {
                call_id: "c".into(),
                tool: "t".into(),
                output: json!({"ok": true, "data": data.clone()}),
            },
            StreamEvent::ToolOutputError {
                call_id: "c".into(),
                tool: "t".into(),
                error,
            },
            StreamEvent::ToolApprovalRequest {
                call_id: "c".into(),
                tool: "t".into(),
                approval_id: "a".into(),
            },
            StreamEvent::ToolOutputPending {
                call_id: "c".into(),
                tool: "t".into(),
                input: data,
            },
            StreamEvent::StepFinish {
                step: 1,
                finish_reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                },
            },
            StreamEvent::Finish {
                finish_reason: FinishReason::Stop,
            },
            StreamEvent::Error {
                message: "m".into(),
            },
        ];
        let by_value = Value::Array(events.iter().map(js).collect()).to_string();
        assert_eq!(to_camel_json(&events, shape::AGENT_EVENTS), by_value);
    }
}
