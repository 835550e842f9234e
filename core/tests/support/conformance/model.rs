//! The model-facing part of the vector format (`tests/conformance/README.md`, "Providers and
//! the agent loop"): a batch taken from a provider's response (`model_turn`), the tool results
//! each provider gets back (`expect.tool_results`), and a whole agent run with a scripted
//! model (`agent`).

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tooljig::agent::{Agent, AgentState, ScriptedModel, Step, answer};
use tooljig::providers::Provider;
use tooljig::{BatchResult, Call, Caller, Engine};

/// `model_turn`: the batch is what this provider's response asks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTurnInput {
    /// The provider's name, as `Provider::from_name` reads it.
    pub provider: String,
    /// A non-streamed response body in that provider's shape.
    pub response: Value,
}

impl ModelTurnInput {
    /// The calls the response asks for.
    pub fn calls(&self) -> Result<Vec<Call>, String> {
        let provider = Provider::from_name(&self.provider)?;
        let turn = provider
            .format()
            .parse_response(&self.response)
            .map_err(|e| format!("model_turn.response: {e}"))?;
        let (calls, refused) = turn.into_batch();
        if !refused.is_empty() {
            return Err(format!(
                "model_turn: {} call(s) were cut off; a vector's response must be whole",
                refused.len()
            ));
        }
        Ok(calls)
    }
}

/// `agent`: one run of the agent loop over the vector's tools.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRun {
    /// The scripted model's steps: turns, strings (text answers) or `{"error": ...}`.
    pub model: Vec<Value>,
    /// The user's message that starts the run.
    pub message: String,
    /// What must come out.
    pub expect: AgentExpect,
}

/// `agent.expect`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentExpect {
    /// The run's status, exactly (`{"status": "finished", "reason": "answered"}`).
    pub status: Option<Value>,
    /// The final answer.
    pub answer: Option<String>,
    /// Counters, compared on the keys given.
    pub counters: Option<Map<String, Value>>,
    /// The whole conversation after the run, exactly (so a run that holds no random id).
    pub messages: Option<Value>,
    /// How many requests the model received.
    pub requests: Option<usize>,
}

/// The placeholders random ids are replaced by before comparing.
const APPROVAL_ID: &str = "<approval_id>";
const RUN_ID: &str = "<run_id>";

/// `value` with the batch's approval ids and run id replaced by their placeholders.
pub fn placeholders(value: &Value, out: &BatchResult) -> Value {
    let mut text = value.to_string();
    for r in &out.results {
        if let Some(id) = r.approval.as_ref().and_then(|a| a.id.as_ref()) {
            text = text.replace(id.as_str(), APPROVAL_ID);
        }
    }
    if let Some(run) = &out.run_id {
        text = text.replace(run.as_str(), RUN_ID);
    }
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Checks `expect.tool_results`: per provider, the exact messages or blocks it gets back.
pub fn check_tool_results(
    want: &BTreeMap<String, Value>,
    out: &BatchResult,
    problems: &mut Vec<String>,
) {
    for (name, expected) in want {
        let provider = match Provider::from_name(name) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("expect.tool_results: {e}"));
                continue;
            }
        };
        let got = Value::Array(provider.format().tool_results(&out.results));
        let got = placeholders(&got, out);
        if &got != expected {
            problems.push(format!(
                "expect.tool_results.{name}: got {got}, expected {expected}"
            ));
        }
    }
}

/// Runs the agent loop with a scripted model and checks `agent.expect`.
pub async fn run_agent(engine: Engine, caller: Caller, run: AgentRun, problems: &mut Vec<String>) {
    let steps: Result<Vec<Step>, String> = run
        .model
        .into_iter()
        .enumerate()
        .map(|(i, s)| answer::step_from_value(s).map_err(|e| format!("agent.model[{i}]: {e}")))
        .collect();
    let steps = match steps {
        Ok(s) => s,
        Err(e) => return problems.push(e),
    };
    let model = ScriptedModel::new("scripted", steps).shared();
    let agent = Agent::new(Arc::new(engine), model.clone());
    let mut state = AgentState::new(run.message);
    let out = agent.run(&mut state, &caller, None).await;
    let got = serde_json::to_value(&out).unwrap_or(Value::Null);
    let want = run.expect;
    if let Some(status) = &want.status
        && &got["status"] != status
    {
        problems.push(format!(
            "agent.expect.status: got {}, expected {status}",
            got["status"]
        ));
    }
    if let Some(answer) = &want.answer
        && got["answer"] != *answer
    {
        problems.push(format!(
            "agent.expect.answer: got {}, expected {answer:?}",
            got["answer"]
        ));
    }
    if let Some(counters) = &want.counters {
        for (key, expected) in counters {
            if got["counters"].get(key) != Some(expected) {
                problems.push(format!(
                    "agent.expect.counters.{key}: got {}, expected {expected}",
                    got["counters"][key]
                ));
            }
        }
    }
    if let Some(messages) = &want.messages {
        let got = serde_json::to_value(&state.messages).unwrap_or(Value::Null);
        if &got != messages {
            problems.push(format!(
                "agent.expect.messages: got {got}, expected {messages}"
            ));
        }
    }
    if let Some(n) = want.requests {
        let got = model.requests().len();
        if got != n {
            problems.push(format!(
                "agent.expect.requests: the model received {got}, expected {n}"
            ));
        }
    }
}
