//! The durable-run part of the vector format (`tests/conformance/README.md`, "Durable
//! runs"): approval rules and a scripted approval predicate on the engine, and `steps`
//! that decide approvals, submit client results, resume the run and roll it back.

use super::compare;
use super::vector::{ExpectedResult, ScriptError};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;
use tooljig::{
    ApprovalQuery, ApprovalRules, BatchResult, Caller, Decision, Engine, Remember, RollbackReport,
    ToolError, approval_predicate_fn,
};

/// `engine.approval_predicate`: a call needs approval when any rule matches it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredicateScript {
    /// The rules, tried in order.
    pub require: Vec<PredicateRule>,
}

/// One rule: the tool (any when absent) and, with `pointer`, the value the final
/// arguments hold there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredicateRule {
    /// The tool it applies to.
    pub tool: Option<String>,
    /// A JSON pointer into the arguments.
    pub pointer: Option<String>,
    /// What must be there.
    pub equals: Option<Value>,
    /// The caller's principal it applies to.
    pub principal: Option<String>,
}

impl PredicateRule {
    fn matches(&self, q: &ApprovalQuery) -> bool {
        self.tool.as_ref().is_none_or(|t| t == &q.tool)
            && self
                .principal
                .as_ref()
                .is_none_or(|p| q.caller.principal.as_ref() == Some(p))
            && self.pointer.as_ref().is_none_or(|p| {
                q.arguments.pointer(p) == Some(self.equals.as_ref().unwrap_or(&Value::Null))
            })
    }
}

/// Applies the durable-run engine settings of a vector.
pub fn configure(
    mut engine: Engine,
    rules: Option<&ApprovalRules>,
    predicate: Option<&PredicateScript>,
    external_expiry_ms: Option<u64>,
) -> Engine {
    if let Some(r) = rules {
        engine = engine.with_approval_rules(r.clone());
    }
    if let Some(p) = predicate {
        let p = p.clone();
        engine = engine.with_approval_predicate(approval_predicate_fn(move |q| {
            let needed = p.require.iter().any(|r| r.matches(&q));
            async move { Ok(needed) }
        }));
    }
    if let Some(ms) = external_expiry_ms {
        engine = engine.with_external_expiry_ms(ms);
    }
    engine
}

/// One entry of `steps`: an optional wait, then at most one action.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Sleeps first (an approval or a client call expires).
    pub wait_ms: Option<u64>,
    /// Decides the approval of a call.
    pub decide: Option<DecideStep>,
    /// Submits a client-side call's result.
    pub submit: Option<SubmitStep>,
    /// `true`: resumes the run.
    pub resume: Option<bool>,
    /// Rolls the run back (or one call of it).
    pub rollback: Option<RollbackStep>,
    /// Runs another batch on the same engine; its run becomes the one later steps act on.
    pub run: Option<RunStep>,
    /// What must come out.
    #[serde(default)]
    pub expect: StepExpect,
}

/// `decide`: a decision on the approval of `call_id` (as the latest results show it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideStep {
    /// The call whose approval is decided.
    pub call_id: String,
    /// Who decides.
    pub approver: Caller,
    /// `approve`, `reject` or `edit`.
    pub decision: String,
    /// A rejection's message.
    pub message: Option<String>,
    /// An edit's arguments.
    pub arguments: Option<Value>,
    /// An approval's "always allow" wish.
    pub remember: Option<Remember>,
    /// Overrides the hash the pending result shows (a forged or stale decision).
    pub arguments_hash: Option<String>,
    /// Overrides the approval id (an unknown request).
    pub approval_id: Option<String>,
}

/// `submit`: the client's outcome for a pending client-side call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitStep {
    /// The call.
    pub call_id: String,
    /// The data it returned (exactly one of `result`, `error`).
    #[serde(default, deserialize_with = "present")]
    pub result: Option<Value>,
    /// The error it failed with.
    pub error: Option<ScriptError>,
    /// Who submits; the vector's caller when absent.
    pub caller: Option<Caller>,
}

/// `run`: another batch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStep {
    /// Who it runs for; the vector's caller when absent.
    pub caller: Option<Caller>,
    /// Batch options.
    #[serde(default)]
    pub options: tooljig::BatchOptions,
    /// The calls.
    pub calls: Vec<tooljig::Call>,
}

/// `rollback`: the whole run, or only `call_id`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackStep {
    /// Only this call.
    pub call_id: Option<String>,
}

/// What a step must produce.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepExpect {
    /// A resume's results, as `expect.results`.
    pub results: Option<Vec<ExpectedResult>>,
    /// The step is refused with this code and `reason` detail.
    pub error: Option<ExpectedError>,
    /// A rollback's entries, in order, compared on their keys.
    pub rollback: Option<Vec<Map<String, Value>>>,
}

/// An expected refusal of a step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedError {
    /// The error code.
    pub code: String,
    /// The `reason` detail.
    pub reason: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Compares a rollback report with expected entries (each on the keys it has).
pub fn check_rollback(
    want: &[Map<String, Value>],
    got: Option<&RollbackReport>,
    at: &str,
    problems: &mut Vec<String>,
) {
    let entries = got.map(|r| r.entries.clone()).unwrap_or_default();
    if entries.len() != want.len() {
        problems.push(format!(
            "{at}: expected {} rollback entries, got {}: {entries:?}",
            want.len(),
            entries.len()
        ));
        return;
    }
    for (i, (w, g)) in want.iter().zip(&entries).enumerate() {
        let g = serde_json::to_value(g).unwrap_or(Value::Null);
        for (k, v) in w {
            if g.get(k) != Some(v) {
                problems.push(format!(
                    "{at}: rollback[{i}].{k} is {}, expected {v}",
                    g.get(k).unwrap_or(&Value::Null)
                ));
            }
        }
    }
}

fn check_error(
    outcome: Result<(), ToolError>,
    want: Option<&ExpectedError>,
    at: &str,
    problems: &mut Vec<String>,
) {
    match (outcome, want) {
        (Ok(()), None) => {}
        (Ok(()), Some(w)) => problems.push(format!(
            "{at}: should have been refused with {}, but it was accepted",
            w.code
        )),
        (Err(e), None) => problems.push(format!("{at}: refused unexpectedly: {e}")),
        (Err(e), Some(w)) => {
            let reason = e.details.get("reason").and_then(Value::as_str);
            if e.code.as_str() != w.code || (w.reason.is_some() && reason != w.reason.as_deref()) {
                problems.push(format!(
                    "{at}: refused with {} (reason {reason:?}), expected {} (reason {:?})",
                    e.code, w.code, w.reason
                ));
            }
        }
    }
}

/// Runs the `steps` of a vector against the run of its first batch.
pub async fn run_steps(
    engine: &Engine,
    caller: &Caller,
    first: &BatchResult,
    steps: Vec<Step>,
    problems: &mut Vec<String>,
) {
    let mut latest = first.results.clone();
    let mut run_id = first.run_id.clone().unwrap_or_default();
    for (n, step) in steps.into_iter().enumerate() {
        let at = format!("steps[{n}]");
        if let Some(ms) = step.wait_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let actions = [
            step.decide.is_some(),
            step.submit.is_some(),
            step.resume.is_some(),
            step.rollback.is_some(),
            step.run.is_some(),
        ];
        if actions.iter().filter(|a| **a).count() > 1 {
            problems.push(format!(
                "{at}: a step has at most one of decide, submit, resume, rollback, run"
            ));
            continue;
        }
        if let Some(r) = step.run {
            let who = r.caller.unwrap_or_else(|| caller.clone());
            let out = engine.run(r.calls, who, r.options).await;
            if let Some(want) = &step.expect.results {
                let mut found = Vec::new();
                compare::results(want, &out.results, &mut found);
                problems.extend(found.into_iter().map(|p| format!("{at}: {p}")));
            }
            if let Some(want) = &step.expect.rollback {
                check_rollback(want, out.rollback.as_ref(), &at, problems);
            }
            run_id = out.run_id.clone().unwrap_or_default();
            latest = out.results;
            continue;
        }
        if let Some(d) = step.decide {
            let pending = latest.iter().find(|r| r.call_id == d.call_id);
            let info = pending.and_then(|r| r.approval.clone());
            let id = d
                .approval_id
                .clone()
                .or_else(|| info.as_ref().and_then(|i| i.id.clone()))
                .unwrap_or_default();
            let hash = d
                .arguments_hash
                .clone()
                .or_else(|| info.as_ref().map(|i| i.arguments_hash.clone()))
                .unwrap_or_default();
            let decision = match d.decision.as_str() {
                "approve" => Decision::Approve {
                    arguments_hash: hash,
                    remember: d.remember,
                },
                "reject" => Decision::Reject {
                    arguments_hash: hash,
                    message: d.message,
                },
                "edit" => Decision::Edit {
                    arguments_hash: hash,
                    arguments: d.arguments.unwrap_or(Value::Null),
                },
                other => {
                    problems.push(format!("{at}: unknown decision {other:?}"));
                    continue;
                }
            };
            let outcome = engine.decide(&id, decision, &d.approver).await.map(|_| ());
            check_error(outcome, step.expect.error.as_ref(), &at, problems);
        } else if let Some(s) = step.submit {
            let outcome = match (s.result, s.error) {
                (Some(v), None) => Ok(v),
                (None, Some(e)) => {
                    let mut err = ToolError::new(e.code, e.message);
                    if let Some(r) = e.retryable {
                        err = err.retryable(r);
                    }
                    Err(err)
                }
                _ => {
                    problems.push(format!("{at}: submit holds exactly one of result, error"));
                    continue;
                }
            };
            let done = engine
                .submit_result(
                    &run_id,
                    &s.call_id,
                    s.caller.as_ref().unwrap_or(caller),
                    outcome,
                )
                .await
                .map(|_| ());
            check_error(done, step.expect.error.as_ref(), &at, problems);
        } else if step.resume == Some(true) {
            match engine.resume(&run_id).await {
                Ok(out) => {
                    check_error(Ok(()), step.expect.error.as_ref(), &at, problems);
                    if let Some(want) = &step.expect.results {
                        let mut found = Vec::new();
                        compare::results(want, &out.results, &mut found);
                        problems.extend(found.into_iter().map(|p| format!("{at}: {p}")));
                    }
                    if let Some(want) = &step.expect.rollback {
                        check_rollback(want, out.rollback.as_ref(), &at, problems);
                    }
                    latest = out.results;
                }
                Err(e) => check_error(Err(e), step.expect.error.as_ref(), &at, problems),
            }
        } else if let Some(r) = step.rollback {
            match engine.rollback(&run_id, r.call_id.as_deref()).await {
                Ok(report) => {
                    check_error(Ok(()), step.expect.error.as_ref(), &at, problems);
                    if let Some(want) = &step.expect.rollback {
                        check_rollback(want, Some(&report), &at, problems);
                    }
                }
                Err(e) => check_error(Err(e), step.expect.error.as_ref(), &at, problems),
            }
        }
    }
}
