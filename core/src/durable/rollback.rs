//! Rollback by compensation (compensating actions, two-phase bookings). A tool may name a
//! compensation: another tool (`policy.compensation`) or a handler given to
//! [`Engine::compensate_with`](crate::Engine::compensate_with); it receives
//! `{"arguments", "result"}` of the call it undoes. [`rollback`] runs them in reverse order
//! of completion, each
//! at most once, and reports calls without one as not reversible (an email cannot be
//! unsent). An atomic batch that fails is rolled back the same way, automatically.

use super::Durable;
use super::run_record::{RunRecord, RunStep, run_call_key};
use super::store::{Expect, Namespace, StoreError, get_as, now_ms, put_as};
pub use crate::batch::{RollbackEntry, RollbackOutcome, RollbackReport};
use crate::call::CallResult;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::handler::{HandlerError, HostData, ToolContext, UNEXPECTED_MESSAGE};
use crate::policy::Effect;
use crate::registry::Snapshot;
use crate::spec::ToolSpec;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Whether calls of this tool can be compensated.
pub fn has_compensation(durable: &Durable, spec: &ToolSpec) -> bool {
    spec.policy.compensation.is_some()
        || durable
            .compensations
            .read()
            .map(|m| m.contains_key(&spec.name))
            .unwrap_or(false)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Claim {
    state: String,
    at_ms: u64,
}

/// Undoes the completed calls of a run (or only `call_id`), latest first, and records what
/// it did in the run; `tools` hold the compensation tools, `host` goes to the compensations
/// as [`ToolContext::host`]. Refused when the run is unknown or the call did not complete
/// in it.
pub async fn rollback(
    durable: &Durable,
    tools: &Snapshot,
    run_id: &str,
    call_id: Option<&str>,
    host: Option<HostData>,
) -> Result<RollbackReport, ToolError> {
    let store = durable.store.as_ref();
    let refusal = StoreError::refusal;
    let Some((mut record, _)) = get_as::<RunRecord>(store, Namespace::Run, run_id)
        .await
        .map_err(refusal)?
    else {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("there is no run {run_id:?} (or it expired)"),
        )
        .with("reason", "unknown_run"));
    };
    if let Some(id) = call_id
        && !record.completed.iter().any(|c| c == id)
    {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("call {id:?} did not complete in run {run_id}; there is nothing to undo"),
        )
        .with("reason", "unknown_call"));
    }
    let report = compensate(durable, tools, &mut record, call_id, host).await;
    // The compensations themselves are claimed one by one in the store; appending the
    // report to the run is best effort against concurrent writers, so retry on races.
    for _ in 0..8 {
        let Some((mut fresh, version)) = get_as::<RunRecord>(store, Namespace::Run, run_id)
            .await
            .map_err(refusal)?
        else {
            break;
        };
        fresh.rollback.extend(report.entries.iter().cloned());
        fresh.steps.extend(steps_for(fresh.passes, &report));
        let wrote = put_as(
            store,
            Namespace::Run,
            run_id,
            Expect::Version(version),
            &fresh,
            Some(durable.run_ttl_ms),
        )
        .await
        .map_err(refusal)?;
        if wrote.is_some() {
            break;
        }
    }
    Ok(report)
}

fn steps_for(pass: u32, report: &RollbackReport) -> Vec<RunStep> {
    report
        .entries
        .iter()
        .map(|e| RunStep {
            at_ms: e.at_ms,
            pass,
            what: serde_json::to_value(e.outcome)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            call_id: Some(e.call_id.clone()),
            detail: json!({"compensation": e.compensation, "message": e.message}),
        })
        .collect()
}

/// Runs the compensations of `record`'s completed calls (or only `only`), latest first.
/// Appends the report to the record (the caller persists it).
pub(crate) async fn compensate(
    durable: &Durable,
    tools: &Snapshot,
    record: &mut RunRecord,
    only: Option<&str>,
    host: Option<HostData>,
) -> RollbackReport {
    let mut entries = Vec::new();
    for call_id in record.completed.clone().iter().rev() {
        if only.is_some_and(|o| o != call_id) {
            continue;
        }
        let Some(result) = record
            .results
            .iter()
            .find(|r| &r.call_id == call_id)
            .cloned()
        else {
            continue;
        };
        entries.push(undo(durable, tools, record, &result, host.clone()).await);
    }
    let report = RollbackReport {
        run_id: record.id.clone(),
        entries,
    };
    if only.is_none() || !report.entries.is_empty() {
        record.steps.extend(steps_for(record.passes, &report));
        record.rollback.extend(report.entries.iter().cloned());
    }
    report
}

async fn undo(
    durable: &Durable,
    tools: &Snapshot,
    record: &RunRecord,
    result: &CallResult,
    host: Option<HostData>,
) -> RollbackEntry {
    let store = durable.store.as_ref();
    let entry = |outcome, compensation: Option<String>, envelope, message: String| RollbackEntry {
        call_id: result.call_id.clone(),
        tool: result.tool.clone(),
        outcome,
        compensation,
        envelope,
        message,
        at_ms: now_ms(),
    };
    let snapshot = tools;
    let registered = durable
        .compensations
        .read()
        .ok()
        .and_then(|m| m.get(&result.tool).cloned());
    let named = snapshot
        .get(&result.tool)
        .and_then(|t| t.spec.policy.compensation.clone());
    let (label, handler, timeout) = match (registered, named) {
        (Some(h), _) => {
            let timeout = snapshot
                .get(&result.tool)
                .and_then(|t| t.spec.policy.timeout_duration());
            ("handler".to_string(), h, timeout)
        }
        (None, Some(name)) => match snapshot
            .get(&name)
            .and_then(|t| Some((t.handler.clone()?, t)))
        {
            Some((h, t)) => (name, h, t.spec.policy.timeout_duration()),
            None => {
                return entry(
                    RollbackOutcome::Failed,
                    Some(name.clone()),
                    None,
                    format!("its compensation tool {name:?} is not registered with a handler here"),
                );
            }
        },
        (None, None)
            if snapshot
                .get(&result.tool)
                .is_some_and(|t| t.spec.policy.effect == Effect::Read) =>
        {
            return entry(
                RollbackOutcome::NothingToUndo,
                None,
                None,
                format!(
                    "tool {:?} only reads: it changed nothing to undo",
                    result.tool
                ),
            );
        }
        (None, None) => {
            return entry(
                RollbackOutcome::NotReversible,
                None,
                None,
                format!(
                    "tool {:?} has no compensation: its effect cannot be undone and stays",
                    result.tool
                ),
            );
        }
    };

    // Claim the compensation so it runs once, even with rollbacks racing in two processes.
    let key = run_call_key(&record.id, &result.call_id);
    let claim = Claim {
        state: "started".into(),
        at_ms: now_ms(),
    };
    let claimed = match get_as::<Claim>(store, Namespace::Compensation, &key).await {
        Ok(None) => {
            put_as(
                store,
                Namespace::Compensation,
                &key,
                Expect::Absent,
                &claim,
                None,
            )
            .await
        }
        Ok(Some((c, v))) if c.state == "failed" => {
            put_as(
                store,
                Namespace::Compensation,
                &key,
                Expect::Version(v),
                &claim,
                None,
            )
            .await
        }
        Ok(Some((c, _))) if c.state == "done" => {
            return entry(
                RollbackOutcome::AlreadyRolledBack,
                Some(label),
                None,
                "an earlier rollback already compensated this call".into(),
            );
        }
        Ok(Some(_)) => Ok(None),
        Err(e) => Err(e),
    };
    let version = match claimed {
        Ok(Some(v)) => v,
        Ok(None) => {
            return entry(
                RollbackOutcome::Failed,
                Some(label),
                None,
                "another rollback is compensating this call (or stopped while doing so)".into(),
            );
        }
        Err(e) => {
            return entry(
                RollbackOutcome::Failed,
                Some(label),
                None,
                format!("the state store is unavailable: {}", e.0),
            );
        }
    };

    let input = json!({
        "arguments": result.arguments.clone().unwrap_or(Value::Null),
        "result": result.envelope.data().cloned().unwrap_or(Value::Null),
    });
    let cancel = CancellationToken::new();
    let ctx = ToolContext {
        call_id: Arc::from(format!("{}:compensation", result.call_id)),
        tool: Arc::from(label.as_str()),
        attempt: 1,
        caller: Arc::new(record.caller.clone()),
        cancel: cancel.clone(),
        host,
        run_id: Arc::from(record.id.as_str()),
        app_key: None,
        progress: Default::default(),
        tools: None,
    };
    let run = AssertUnwindSafe(handler.call(input, ctx)).catch_unwind();
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(done) => done,
            Err(_) => {
                cancel.cancel();
                Ok(Err(HandlerError::tool(
                    ErrorCode::Timeout,
                    format!(
                        "the compensation did not finish within {} ms",
                        limit.as_millis()
                    ),
                )))
            }
        },
        None => run.await,
    };
    let envelope = match outcome {
        Ok(Ok(data)) => Envelope::Ok(data),
        Ok(Err(HandlerError::Tool(e))) => Envelope::Error(e),
        Ok(Err(HandlerError::Needs(f))) => Envelope::Needs(f),
        Ok(Err(HandlerError::Unexpected { .. } | HandlerError::Accepted { .. })) | Err(_) => {
            Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE)
        }
    };
    let ok = envelope.is_ok();
    let done = Claim {
        state: if ok { "done" } else { "failed" }.into(),
        at_ms: now_ms(),
    };
    let _ = put_as(
        store,
        Namespace::Compensation,
        &key,
        Expect::Version(version),
        &done,
        None,
    )
    .await;
    if ok {
        entry(
            RollbackOutcome::Compensated,
            Some(label),
            Some(envelope),
            "compensated".into(),
        )
    } else {
        entry(
            RollbackOutcome::Failed,
            Some(label),
            Some(envelope),
            "the compensation failed; the effect may remain, and a later rollback will try again"
                .into(),
        )
    }
}
