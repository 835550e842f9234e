//! Durable runs on `NativeEngine` (`docs/durable-runs.md`, "API for bindings"): the state
//! store and approval options, decisions, learned preferences, client-side results, resume,
//! run records, rollback and compensation handlers.
//!
//! Every async method resolves with JSON text: `{"value": ...}` on success, or `{"error":
//! {code, message, retryable, details}}` when the core refused (a forged decision, a late
//! result, a busy run...). The JS layer throws the latter as its `ToolError`, so a refusal
//! keeps the core's code and `reason` detail without a napi status in the way. Keys of the
//! binding's own records are camelCase; arguments, values, envelopes and step details pass
//! through untouched (`keys.rs`).

use crate::cancel::JsCancel;
use crate::convert::{keys, shape};
use crate::engine::{JsEngine, batch_text};
use crate::handler::JsHandler;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tooljig::approval::ApprovalRecord;
use tooljig::{
    BatchOptions, BatchResult, Caller, Decision, OperatorAction, OperatorRequest, RollbackReport,
    RunRecord, ToolError,
};

fn invalid(what: &str, e: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(Status::InvalidArg, format!("{what}: {e}"))
}

/// The answer of an async method as the JS layer reads it.
fn answer(outcome: Result<Value, ToolError>) -> String {
    match outcome {
        Ok(value) => json!({ "value": value }).to_string(),
        Err(e) => json!({
            "error": {
                "code": e.code.as_str(),
                "message": e.message,
                "retryable": e.retryable,
                "details": e.details,
            }
        })
        .to_string(),
    }
}

fn to_value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A caller from the JS layer (camelCase or snake_case keys).
fn caller_of(value: Value, what: &str) -> napi::Result<Caller> {
    serde_json::from_value(keys::from_js(value, shape::CALLER)).map_err(|e| invalid(what, e))
}

/// An approval record: its own keys, the requester's and the decision's camelCase.
pub fn approval_value(record: &ApprovalRecord) -> Value {
    keys::to_js(to_value(record), shape::APPROVAL_RECORD)
}

/// A rollback report: `{runId, entries}`, each entry's keys camelCase (envelopes untouched).
pub fn rollback_value(report: Value) -> Value {
    keys::to_js(report, shape::ROLLBACK_REPORT)
}

/// A run record: its keys, its caller's, calls', options', results', steps', lease's and
/// rollback entries' keys camelCase; arguments, envelopes and step details untouched.
fn run_value(record: &RunRecord) -> Value {
    keys::to_js(to_value(record), shape::RUN_RECORD)
}

/// An operator's request: its keys camelCase, and its result shaped as what it is (a
/// resume's batch result, a rollback's report).
fn operator_value(request: &OperatorRequest) -> Value {
    let mut value = keys::to_js(to_value(request), shape::OPERATOR_REQUEST);
    if let (Some(result), Value::Object(map)) = (&request.result, &mut value) {
        let shaped = match request.action {
            OperatorAction::Resume => keys::to_js(result.clone(), shape::BATCH),
            OperatorAction::Rollback => rollback_value(result.clone()),
        };
        map.insert("result".into(), shaped);
    }
    value
}

fn batch_value(out: &BatchResult) -> Value {
    serde_json::from_str(&batch_text(out)).unwrap_or(Value::Null)
}

/// A client's outcome for a client-side call, read by the core's one reader of them.
fn submitted(text: &str) -> napi::Result<Result<Value, ToolError>> {
    let bad = |e: &dyn std::fmt::Display| invalid("submitResult outcome", e);
    let outcome: Value = serde_json::from_str(text).map_err(|e| bad(&e))?;
    tooljig::external::outcome_from_value(outcome).map_err(|e| bad(&e))
}

#[napi]
impl JsEngine {
    /// Decides a pending approval: `decision` is `{decision: 'approve' | 'reject' | 'edit',
    /// argumentsHash, remember?, message?, arguments?}`, `approver` a caller. Resolves with
    /// `{value: approvalRecord}` or `{error}` (`docs/durable-runs.md`, "Decisions").
    #[napi(ts_return_type = "Promise<string>")]
    pub fn decide<'env>(
        &self,
        env: &'env Env,
        approval_id: String,
        decision: Value,
        approver: Value,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let decision: Decision = serde_json::from_value(keys::from_js(decision, shape::DECISION))
            .map_err(|e| invalid("decision", e))?;
        let approver = caller_of(approver, "approver")?;
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.decide(&approval_id, decision, &approver).await;
            Ok(answer(out.map(|r| approval_value(&r))))
        })
    }

    /// One approval request as stored (`{value: record | null}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn approval<'env>(
        &self,
        env: &'env Env,
        approval_id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.approval(&approval_id).await;
            Ok(answer(
                out.map(|r| r.as_ref().map_or(Value::Null, approval_value)),
            ))
        })
    }

    /// Pending approval requests, oldest first, of one tenant or every tenant.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn pending_approvals<'env>(
        &self,
        env: &'env Env,
        tenant: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.pending_approvals(tenant.as_deref()).await;
            Ok(answer(out.map(|rs| {
                Value::Array(rs.iter().map(approval_value).collect())
            })))
        })
    }

    /// Lets `caller` run `tool` without approval for calls whose top-level arguments equal
    /// `values` (an object; empty or null: every call). Resolves with the preference.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn allow_always<'env>(
        &self,
        env: &'env Env,
        caller: Value,
        tool: String,
        values: Option<Value>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let caller = caller_of(caller, "caller")?;
        let values: Map<String, Value> = match values {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(invalid(
                    "values",
                    format!("expected an object, got {other}"),
                ));
            }
        };
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.allow_always(&caller, &tool, values).await;
            Ok(answer(
                out.map(|p| keys::to_js(to_value(&p), shape::PREFERENCE)),
            ))
        })
    }

    /// `caller`'s learned preferences, every tool.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn preferences<'env>(
        &self,
        env: &'env Env,
        caller: Value,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let caller = caller_of(caller, "caller")?;
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.preferences(&caller).await;
            Ok(answer(out.map(|ps| {
                Value::Array(
                    ps.iter()
                        .map(|p| keys::to_js(to_value(p), shape::PREFERENCE))
                        .collect(),
                )
            })))
        })
    }

    /// Revokes one of `caller`'s preferences; `{value: false}` when it has none with that id.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn revoke_preference<'env>(
        &self,
        env: &'env Env,
        caller: Value,
        id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let caller = caller_of(caller, "caller")?;
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.revoke_preference(&caller, &id).await;
            Ok(answer(out.map(Value::Bool)))
        })
    }

    /// Completes a client-side call: `outcome` is `{"result": data}` or `{"error": {code,
    /// message, retryable?, details?}}` as JSON text. Resolves with the envelope the model
    /// will see.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn submit_result<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        call_id: String,
        outcome: String,
        submitter: Option<Value>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let outcome = submitted(&outcome)?;
        let submitter = match submitter {
            None | Some(Value::Null) => Caller::default(),
            Some(c) => caller_of(c, "submitter")?,
        };
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine
                .submit_result(&run_id, &call_id, &submitter, outcome)
                .await;
            Ok(answer(out.map(|e| to_value(&e))))
        })
    }

    /// Reports how the background job `job` ended: `outcome` as `submit_result` takes it.
    /// Resolves with the job's status.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn complete_job<'env>(
        &self,
        env: &'env Env,
        job: String,
        outcome: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let outcome = submitted(&outcome)?;
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.complete_job(&job, outcome).await;
            Ok(answer(
                out.map(|s| keys::to_js(to_value(&s), shape::JOB_STATUS)),
            ))
        })
    }

    /// Where the background job `job` stands (`null` when no call accepted it).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn job_status<'env>(
        &self,
        env: &'env Env,
        job: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.job_status(&job).await;
            Ok(answer(out.map(|s| match s {
                Some(s) => keys::to_js(to_value(&s), shape::JOB_STATUS),
                None => Value::Null,
            })))
        })
    }

    /// The client-side calls of a run that still await a result.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn pending_external<'env>(
        &self,
        env: &'env Env,
        run_id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.pending_external(&run_id).await;
            Ok(answer(out.map(|cs| {
                Value::Array(
                    cs.iter()
                        .map(|c| keys::to_js(to_value(c), shape::EXTERNAL_CALL))
                        .collect(),
                )
            })))
        })
    }

    /// Resumes a suspended run; resolves with every call's result, as `run` does.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn resume<'env>(
        &self,
        env: &'env Env,
        run_id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.resume(&run_id).await;
            Ok(answer(out.map(|b| batch_value(&b))))
        })
    }

    /// A run as stored (`{value: record | null}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn run_record<'env>(
        &self,
        env: &'env Env,
        run_id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.run_record(&run_id).await;
            Ok(answer(
                out.map(|r| r.as_ref().map_or(Value::Null, run_value)),
            ))
        })
    }

    /// Asks a run to stop in whichever process runs it (`{value: bool}`: false when it had
    /// already finished).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn cancel_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        reason: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.cancel_run(&run_id, reason.as_deref()).await;
            Ok(answer(out.map(Value::Bool)))
        })
    }

    /// Waits up to `timeoutMs` until none of the run's approval requests awaits a decision;
    /// resolves true once none does, false when the time ran out.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn wait_for_decisions<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        timeout_ms: u32,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let timeout = std::time::Duration::from_millis(u64::from(timeout_ms));
            let out = engine.wait_for_decisions(&run_id, timeout).await;
            Ok(answer(out.map(Value::Bool)))
        })
    }

    /// Undoes the completed calls of a run (or only `callId`), latest first; resolves with
    /// the report.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn rollback<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        call_id: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.rollback(&run_id, call_id.as_deref()).await;
            Ok(answer(
                out.map(|r: RollbackReport| rollback_value(to_value(&r))),
            ))
        })
    }

    /// Leaves an operator's request (`action`: `resume` or `rollback`) for the app's workers
    /// (`{value: request}`; `not_found` for an unknown run).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn ask_operator<'env>(
        &self,
        env: &'env Env,
        action: String,
        run_id: String,
        call_id: Option<String>,
        asked_by: Option<String>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let action: OperatorAction =
            serde_json::from_value(Value::String(action)).map_err(|e| invalid("action", e))?;
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine
                .ask_operator(action, &run_id, call_id.as_deref(), asked_by.as_deref())
                .await;
            Ok(answer(out.map(|r| operator_value(&r))))
        })
    }

    /// Waits up to `timeoutMs` for a worker's answer to request `id` (`{value: request}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn wait_operator_request<'env>(
        &self,
        env: &'env Env,
        id: String,
        timeout_ms: u32,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let timeout = Duration::from_millis(u64::from(timeout_ms));
            let out = engine.wait_operator_request(&id, timeout).await;
            Ok(answer(out.map(|r| operator_value(&r))))
        })
    }

    /// An operator's request as stored now (`{value: request | null}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn operator_request<'env>(
        &self,
        env: &'env Env,
        id: String,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        env.spawn_future(async move {
            let out = engine.operator_request(&id).await;
            Ok(answer(
                out.map(|r| r.as_ref().map_or(Value::Null, operator_value)),
            ))
        })
    }

    /// Waits up to `timeoutMs` for one operator request (or until `cancel` fires), carries it
    /// out with this engine's handlers and records the answer (`{value: request | null}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn serve_operator_request<'env>(
        &self,
        env: &'env Env,
        worker: String,
        timeout_ms: u32,
        cancel: Option<&JsCancel>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let engine = self.core();
        let live = BatchOptions {
            cancel: cancel.map(|c| c.token.clone()),
            ..BatchOptions::default()
        };
        env.spawn_future(async move {
            let timeout = Duration::from_millis(u64::from(timeout_ms));
            let out = engine.serve_operator_request(&worker, timeout, live).await;
            Ok(answer(
                out.map(|r| r.as_ref().map_or(Value::Null, operator_value)),
            ))
        })
    }

    /// Registers the JS function at `handler` (in the JS layer's handler table) as the
    /// compensation of `tool`; it receives `{arguments, result}`.
    #[napi]
    pub fn compensate_with(&self, tool: String, handler: u32) {
        self.core()
            .compensate_with(tool, Arc::new(JsHandler::new(self.dispatcher(), handler)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tooljig::ErrorCode;

    #[test]
    fn submitted_outcomes_are_read_strictly() {
        assert_eq!(
            submitted(r#"{"result": {"ok": 1}}"#).unwrap().unwrap(),
            json!({"ok": 1})
        );
        assert_eq!(
            submitted(r#"{"result": null}"#).unwrap().unwrap(),
            Value::Null
        );
        let e = submitted(
            r#"{"error": {"code": "not_found", "message": "gone", "details": {"reason": "x"}}}"#,
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
        assert_eq!(e.details["reason"], "x");
        assert!(submitted(r#"{"error": {"code": "nope", "message": "m"}}"#).is_err());
        assert!(submitted(r#"{"result": 1, "error": {}}"#).is_err());
        assert!(submitted("{}").is_err());
    }

    #[test]
    fn refusals_keep_code_and_reason() {
        let e = ToolError::new(ErrorCode::Conflict, "twice").with("reason", "already_decided");
        let v: Value = serde_json::from_str(&answer(Err(e))).unwrap();
        assert_eq!(v["error"]["code"], "conflict");
        assert_eq!(v["error"]["details"]["reason"], "already_decided");
        let v: Value = serde_json::from_str(&answer(Ok(json!(true)))).unwrap();
        assert_eq!(v, json!({"value": true}));
    }
}
