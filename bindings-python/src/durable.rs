//! Durable runs from Python: the operations on runs (decide, submit a client result, resume, roll back, ...).
//!
//! Every operation is one native entry point, `Engine.durable(op, args)`: JSON in, a future on
//! the caller's event loop out, resolved with JSON (or a `BatchResult` for `resume`) or failed
//! with `tooljig.ToolError` carrying the core's refusal (`code`, `reason`). Each operation gets
//! a [`BatchHost`] like a batch does, so the Python handlers a resume runs, and the
//! compensations a rollback runs, find the caller's loop (`Engine::resume_with`,
//! `Engine::rollback_with`). The Pythonic methods are in `python/tooljig/engine.py`.

use crate::convert;
use crate::error;
use crate::host::{BatchHost, Msg};
use crate::runtime;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tooljig::{BatchOptions, Caller, Decision, Engine, ErrorCode, OperatorAction, ToolError};

/// One operation on durable runs, as the package sends it.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Op {
    Decide {
        approval_id: String,
        decision: Decision,
        approver: Caller,
    },
    Approval {
        approval_id: String,
    },
    PendingApprovals {
        tenant: Option<String>,
    },
    AllowAlways {
        caller: Caller,
        tool: String,
        #[serde(default)]
        values: Map<String, Value>,
    },
    Preferences {
        caller: Caller,
    },
    RevokePreference {
        caller: Caller,
        id: String,
    },
    SubmitResult {
        run_id: String,
        call_id: String,
        /// `{"result": data}` or `{"error": {code, message, retryable?, details?}}`.
        outcome: Value,
        /// Who submits (the run's caller, when it was started for one).
        #[serde(default)]
        caller: Caller,
    },
    PendingExternal {
        run_id: String,
    },
    CompleteJob {
        job: String,
        /// `{"result": data}` or `{"error": {code, message, retryable?, details?}}`.
        outcome: Value,
    },
    JobStatus {
        job: String,
    },
    Resume {
        run_id: String,
    },
    RunRecord {
        run_id: String,
    },
    CancelRun {
        run_id: String,
        #[serde(default)]
        reason: Option<String>,
    },
    WaitForDecisions {
        run_id: String,
        timeout_ms: u64,
    },
    Rollback {
        run_id: String,
        call_id: Option<String>,
    },
    AskOperator {
        action: OperatorAction,
        run_id: String,
        #[serde(default)]
        call_id: Option<String>,
        #[serde(default)]
        asked_by: Option<String>,
    },
    WaitOperatorRequest {
        id: String,
        timeout_ms: u64,
    },
    OperatorRequest {
        id: String,
    },
    ServeOperatorRequest {
        worker: String,
        timeout_ms: u64,
    },
}

/// A client's or a job's outcome as data, read by the core's one reader.
fn outcome_of(outcome: Value) -> Result<Result<Value, ToolError>, ToolError> {
    tooljig::external::outcome_from_value(outcome).map_err(|why| {
        ToolError::new(ErrorCode::InvalidRequest, why).with("reason", "invalid_outcome")
    })
}

fn value_of(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Runs `op` on the engine; `live` carries the host and cancellation for what it runs.
async fn perform(engine: &Engine, op: Op, live: BatchOptions) -> Msg {
    let reply = |out: Result<Value, ToolError>| Msg::Reply(out);
    match op {
        Op::Decide {
            approval_id,
            decision,
            approver,
        } => reply(
            engine
                .decide(&approval_id, decision, &approver)
                .await
                .map(|r| value_of(&r)),
        ),
        Op::Approval { approval_id } => {
            reply(engine.approval(&approval_id).await.map(|r| value_of(&r)))
        }
        Op::PendingApprovals { tenant } => reply(
            engine
                .pending_approvals(tenant.as_deref())
                .await
                .map(|r| value_of(&r)),
        ),
        Op::AllowAlways {
            caller,
            tool,
            values,
        } => reply(
            engine
                .allow_always(&caller, &tool, values)
                .await
                .map(|p| value_of(&p)),
        ),
        Op::Preferences { caller } => {
            reply(engine.preferences(&caller).await.map(|p| value_of(&p)))
        }
        Op::RevokePreference { caller, id } => reply(
            engine
                .revoke_preference(&caller, &id)
                .await
                .map(Value::Bool),
        ),
        Op::SubmitResult {
            run_id,
            call_id,
            outcome,
            caller,
        } => match outcome_of(outcome) {
            Ok(outcome) => reply(
                engine
                    .submit_result(&run_id, &call_id, &caller, outcome)
                    .await
                    .map(|e| value_of(&e)),
            ),
            Err(e) => reply(Err(e)),
        },
        Op::CompleteJob { job, outcome } => match outcome_of(outcome) {
            Ok(outcome) => reply(
                engine
                    .complete_job(&job, outcome)
                    .await
                    .map(|s| value_of(&s)),
            ),
            Err(e) => reply(Err(e)),
        },
        Op::JobStatus { job } => reply(engine.job_status(&job).await.map(|s| value_of(&s))),
        Op::PendingExternal { run_id } => {
            reply(engine.pending_external(&run_id).await.map(|c| value_of(&c)))
        }
        Op::Resume { run_id } => match engine.resume_with(&run_id, live).await {
            Ok(out) => Msg::Done(out),
            Err(e) => reply(Err(e)),
        },
        Op::RunRecord { run_id } => reply(engine.run_record(&run_id).await.map(|r| value_of(&r))),
        Op::CancelRun { run_id, reason } => reply(
            engine
                .cancel_run(&run_id, reason.as_deref())
                .await
                .map(Value::Bool),
        ),
        Op::WaitForDecisions { run_id, timeout_ms } => reply(
            engine
                .wait_for_decisions(&run_id, Duration::from_millis(timeout_ms))
                .await
                .map(Value::Bool),
        ),
        Op::Rollback { run_id, call_id } => reply(
            engine
                .rollback_with(&run_id, call_id.as_deref(), live.host)
                .await
                .map(|r| value_of(&r)),
        ),
        Op::AskOperator {
            action,
            run_id,
            call_id,
            asked_by,
        } => reply(
            engine
                .ask_operator(action, &run_id, call_id.as_deref(), asked_by.as_deref())
                .await
                .map(|r| value_of(&r)),
        ),
        Op::WaitOperatorRequest { id, timeout_ms } => reply(
            engine
                .wait_operator_request(&id, Duration::from_millis(timeout_ms))
                .await
                .map(|r| value_of(&r)),
        ),
        Op::OperatorRequest { id } => {
            reply(engine.operator_request(&id).await.map(|r| value_of(&r)))
        }
        Op::ServeOperatorRequest { worker, timeout_ms } => reply(
            engine
                .serve_operator_request(&worker, Duration::from_millis(timeout_ms), live)
                .await
                .map(|r| value_of(&r)),
        ),
    }
}

/// Starts a durable-run operation on the running event loop and returns its future.
pub fn start<'py>(
    py: Python<'py>,
    engine: Arc<Engine>,
    args: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let op: Op = convert::from_py_as(args).map_err(|e| error::invalid_input(py, "durable", e))?;
    let locals = TaskLocals::with_running_loop(py)
        .map_err(|_| {
            PyRuntimeError::new_err(
                "durable-run operations start on a running event loop: `await engine.resume(...)` \
                 in async code, `engine.resume_sync(...)` elsewhere",
            )
        })?
        .copy_context(py)?;
    let (handle, cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    let future = locals
        .event_loop(py)
        .call_method0(intern!(py, "create_future"))?;
    let host = BatchHost::start(py, locals, future.clone(), false)?;
    host.cancel_with(py, &cancel)?;
    let live = BatchOptions {
        cancel: Some(cancel),
        host: Some(host.clone()),
        ..BatchOptions::default()
    };
    handle.spawn(async move {
        let msg = perform(&engine, op, live).await;
        host.post(msg);
    });
    Ok(future)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_read_strictly() {
        let op: Op = serde_json::from_value(json!({"op": "resume", "run_id": "r"})).unwrap();
        assert!(matches!(op, Op::Resume { run_id } if run_id == "r"));
        assert!(serde_json::from_value::<Op>(json!({"op": "resume", "run": "r"})).is_err());
        assert!(serde_json::from_value::<Op>(json!({"op": "explode"})).is_err());
    }
}
