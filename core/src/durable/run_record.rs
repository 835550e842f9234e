//! A run as the state store keeps it: its calls, caller and options, the latest result of
//! every call, the step log, the resume lease and the rollback entries. `run.rs` drives
//! runs; `rollback.rs` undoes them; both read and write these records.

use super::store::now_ms;
use crate::batch::{BatchOptions, RollbackEntry};
use crate::call::{Call, CallResult};
use crate::caller::Caller;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// A pass is running it now, or was when its process died: `resume` takes it over once
    /// that pass's lease lapses.
    Running,
    /// Some calls wait for a decision or a client result; resume it later.
    Suspended,
    /// Every call has its final result.
    Finished,
}

/// One recorded step of a run: what happened, when, in which pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStep {
    /// When, ms since the epoch.
    pub at_ms: u64,
    /// 1 for the first pass, 2 for the first resume, ...
    pub pass: u32,
    /// `call`, `suspended`, `resumed`, `finished`, `compensated`, `not_reversible`, ...
    pub what: String,
    /// The call concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Status, error code, approval and decider, as they apply.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

/// Who held a run while resuming it, in records written before leases had a record of their
/// own (`lease.rs`); read, never written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLease {
    /// A random id of the resuming pass.
    pub owner: String,
    /// The lease ends then, ms since the epoch; a dead resumer's lease lapses.
    pub until_ms: u64,
}

/// A run as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id.
    pub id: String,
    /// Who it runs for.
    pub caller: Caller,
    /// The calls as given (ids filled in).
    pub calls: Vec<Call>,
    /// The batch options it runs with.
    pub options: BatchOptions,
    /// The latest result of every call, in call order.
    pub results: Vec<CallResult>,
    /// Where it stands.
    pub state: RunState,
    /// Calls that succeeded in this run, in completion order (rollback runs it backwards).
    pub completed: Vec<String>,
    /// Everything that happened, in order.
    pub steps: Vec<RunStep>,
    /// Passes so far.
    pub passes: u32,
    /// When the run started, ms since the epoch.
    pub created_at_ms: u64,
    /// Held while a pass resumed it, in records of earlier versions (now `lease.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resuming: Option<RunLease>,
    /// Compensations run for it.
    #[serde(default)]
    pub rollback: Vec<RollbackEntry>,
}

impl RunRecord {
    /// A run as its first pass starts it: no results yet, state `running` (the pass sets the
    /// state it ends in when it writes the run again).
    pub(crate) fn first_pass(
        id: &str,
        caller: Caller,
        calls: Vec<Call>,
        options: BatchOptions,
    ) -> Self {
        RunRecord {
            id: id.to_string(),
            caller,
            calls,
            options,
            results: Vec::new(),
            state: RunState::Running,
            completed: Vec::new(),
            steps: vec![step(1, "started", None, Value::Null)],
            passes: 1,
            created_at_ms: now_ms(),
            resuming: None,
            rollback: Vec::new(),
        }
    }
}

/// A call of a resumed pass, claimed before it starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunCallRecord {
    /// `started` until `finished`.
    state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<CallResult>,
    at_ms: u64,
}

/// The store key of one call of one run.
pub fn run_call_key(run_id: &str, call_id: &str) -> String {
    format!("{run_id}/{call_id}")
}

impl RunCallRecord {
    pub(crate) fn started() -> Self {
        RunCallRecord {
            state: "started".into(),
            result: None,
            at_ms: now_ms(),
        }
    }

    pub(crate) fn finished(result: CallResult) -> Self {
        RunCallRecord {
            state: "finished".into(),
            result: Some(result),
            at_ms: now_ms(),
        }
    }

    /// Whether the pass that claimed this call stopped before recording its result.
    pub(crate) fn unfinished(&self) -> bool {
        self.result.is_none()
    }

    /// Fills `result` for a call someone else already claimed: its recorded result, or,
    /// when the pass that started it died before recording one, `outcome_unknown`.
    pub(crate) fn settle(self, result: &mut CallResult) {
        match self.result {
            Some(done) => *result = done,
            None => {
                result.envelope = Envelope::Error(
                    ToolError::new(
                        ErrorCode::OutcomeUnknown,
                        "this call started, and the process running it stopped before its result was \
                         recorded; whether it took effect is unknown, so it was not run again",
                    )
                    .with("started_at_ms", self.at_ms)
                    .with("reason", "crashed_mid_call"),
                );
                result.detail = Some(format!(
                    "run call claimed at {} ms since the epoch and never finished; its tool is \
                     at_most_once, so it runs again only when the app or a person says so",
                    self.at_ms
                ));
            }
        }
    }
}

/// A step of pass `pass`, stamped now.
pub(crate) fn step(pass: u32, what: &str, call_id: Option<&str>, detail: Value) -> RunStep {
    RunStep {
        at_ms: now_ms(),
        pass,
        what: what.into(),
        call_id: call_id.map(String::from),
        detail,
    }
}

/// The step that records what became of a call.
pub(crate) fn call_step(pass: u32, r: &CallResult) -> RunStep {
    let mut detail = json!({"status": r.status, "ok": r.envelope.is_ok()});
    if let Some(code) = r.envelope.code() {
        detail["code"] = json!(code);
    }
    if r.replayed {
        detail["replayed"] = json!(true);
    }
    if let Some(a) = &r.approval {
        detail["approval"] = serde_json::to_value(a).unwrap_or(Value::Null);
    }
    step(pass, "call", Some(&r.call_id), detail)
}
