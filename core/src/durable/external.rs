//! Client-side tools: a tool registered without a handler is run by someone else. Its calls
//! end `pending_external`, recorded in the state store with everything the client needs;
//! [`submit_result`] completes one (validated against the tool's output schema), and
//! [`Engine::resume`](crate::Engine::resume) carries the run on. A submission for an unknown
//! call, a second one, or one after the call's expiry is refused, never silently dropped.

use super::CallDurable;
use super::run_record::run_call_key;
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use crate::call::{CallResult, CallStatus};
use crate::caller::Caller;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::job::Job;
use crate::output::check_output;
use crate::registry::Snapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a client submitted for a client-side call, as data: `{"result": data}`, or
/// `{"error": {code, message, retryable?, details?}}` for a failure the model should see.
/// Every binding hands its client's outcome to this one reader.
pub fn outcome_from_value(value: Value) -> Result<Result<Value, ToolError>, String> {
    /// The failure a client reports.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Failure {
        code: ErrorCode,
        message: String,
        #[serde(default)]
        retryable: Option<bool>,
        #[serde(default)]
        details: serde_json::Map<String, Value>,
    }
    const SHAPE: &str = "expected {\"result\": data} or {\"error\": {\"code\", \"message\"}}";
    let Value::Object(mut outcome) = value else {
        return Err(SHAPE.into());
    };
    match (
        outcome.remove("result"),
        outcome.remove("error"),
        outcome.is_empty(),
    ) {
        (Some(data), None, true) => Ok(Ok(data)),
        (None, Some(e), true) => {
            let f: Failure = serde_json::from_value(e).map_err(|e| format!("error: {e}"))?;
            let mut err = ToolError::new(f.code, f.message);
            if let Some(retryable) = f.retryable {
                err = err.retryable(retryable);
            }
            err.details = f.details;
            Ok(Err(err))
        }
        _ => Err(SHAPE.into()),
    }
}

/// Where a client-side call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExternalStatus {
    /// Waiting for the client's result.
    Pending,
    /// The client submitted a result (or an error).
    Submitted,
}

/// A client-side call as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalCall {
    /// The run it belongs to.
    pub run_id: String,
    /// The call's id in the run.
    pub call_id: String,
    /// The tool to run.
    pub tool: String,
    /// The final arguments to run it with.
    pub arguments: Value,
    /// When it was handed out, ms since the epoch.
    pub created_at_ms: u64,
    /// After this, submissions are refused as late, ms since the epoch.
    pub expires_at_ms: u64,
    /// Where it stands.
    pub status: ExternalStatus,
    /// The submitted outcome, as the model will see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
    /// When it was submitted, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_at_ms: Option<u64>,
    /// The principal the run was started for: only they may submit the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Their tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The background job its handler accepted the call as (`background_job.rs`); `None` for
    /// a client-side call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// How long a record is kept after its expiry, so a late submission is told it is late.
const RETAIN_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Records a call of a handler-less tool as handed to the client and marks the result
/// `pending_external`.
pub async fn park(d: &CallDurable, job: &Job, result: &mut CallResult) {
    match hand_out(d, job, None, d.shared.external_expiry_ms).await {
        Ok(Some(_)) => {
            result.status = CallStatus::PendingExternal;
            result.envelope = Envelope::error(
                ErrorCode::PendingExternal,
                "this tool runs on the client; its result has not arrived yet",
            );
        }
        Ok(None) => {
            result.envelope = Envelope::error(
                ErrorCode::Conflict,
                "this client-side call was already handed out in this run",
            );
        }
        Err(e) => {
            result.envelope = Envelope::Error(StoreError::envelope(
                "the client-side call was not handed out",
            ));
            result.detail = Some(e.0);
        }
    }
}

/// Stores the record of a call whose result comes from outside the batch (a client, or the
/// background job `background`), expiring in `expiry_ms`. `None` when one exists already.
pub(crate) async fn hand_out(
    d: &CallDurable,
    job: &Job,
    background: Option<&str>,
    expiry_ms: u64,
) -> Result<Option<u64>, StoreError> {
    let now = now_ms();
    let rec = ExternalCall {
        run_id: d.run_id.to_string(),
        call_id: job.id.to_string(),
        tool: job.tool.spec.name.clone(),
        arguments: job.arguments.clone(),
        created_at_ms: now,
        expires_at_ms: now.saturating_add(expiry_ms),
        status: ExternalStatus::Pending,
        envelope: None,
        submitted_at_ms: None,
        principal: job.caller.principal.clone(),
        tenant: job.caller.tenant.clone(),
        job: background.map(String::from),
    };
    let key = run_call_key(&d.run_id, &job.id);
    let ttl = Some(expiry_ms.saturating_add(RETAIN_MS));
    put_as(
        d.shared.store.as_ref(),
        Namespace::External,
        &key,
        Expect::Absent,
        &rec,
        ttl,
    )
    .await
}

/// The result of a pending client-side call on resume: the submitted outcome, a timeout
/// when it expired, or still pending.
pub async fn settle(
    store: &dyn StateStore,
    run_id: &str,
    mut r: CallResult,
) -> Result<CallResult, StoreError> {
    let key = run_call_key(run_id, &r.call_id);
    match get_as::<ExternalCall>(store, Namespace::External, &key).await? {
        Some((rec, _)) if rec.status == ExternalStatus::Submitted => {
            r.status = CallStatus::Done;
            r.envelope = rec.envelope.unwrap_or(Envelope::Ok(Value::Null));
        }
        Some((rec, _)) if rec.expires_at_ms > now_ms() => {}
        found => {
            r.status = CallStatus::Done;
            r.envelope = Envelope::error(
                ErrorCode::Timeout,
                match found.and_then(|(rec, _)| rec.job) {
                    Some(_) => "the background job did not complete before the call expired",
                    None => "the client did not submit this call's result before it expired",
                },
            );
        }
    }
    Ok(r)
}

fn refuse(code: ErrorCode, reason: &str, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message).with("reason", reason)
}

/// Completes a client-side call of a suspended run with the client's outcome: data
/// (checked against the tool's output schema and size limit) or an error the model will
/// see. Returns the envelope as stored; [`Engine::resume`](crate::Engine::resume) then
/// continues the run.
///
/// Refused with `not_found` (reason `unknown_call`) when no such call awaits a result,
/// `conflict` (reason `duplicate` or `late`) when it was already submitted or expired,
/// and `invalid_output` (reason `invalid_result`) when the data breaks the schema (the
/// call stays pending; submit a corrected result).
pub async fn submit_result(
    store: &dyn StateStore,
    tools: &Snapshot,
    run_id: &str,
    call_id: &str,
    submitter: &Caller,
    outcome: Result<Value, ToolError>,
) -> Result<Envelope, ToolError> {
    let key = run_call_key(run_id, call_id);
    let found = get_as::<ExternalCall>(store, Namespace::External, &key)
        .await
        .map_err(StoreError::refusal)?;
    let Some((rec, version)) = found else {
        return Err(refuse(
            ErrorCode::NotFound,
            "unknown_call",
            format!("no client-side call {call_id:?} of run {run_id:?} awaits a result"),
        ));
    };
    // A run started for someone takes results from them alone: holding the run and call ids
    // is not enough. A run started for nobody has no one to bind to (its id is unguessable).
    if rec.principal.is_some()
        && (submitter.principal != rec.principal || submitter.tenant != rec.tenant)
    {
        return Err(refuse(
            ErrorCode::PermissionDenied,
            "not_the_caller",
            format!(
                "only the caller the run was started for may submit the result of call {call_id:?}"
            ),
        ));
    }
    let stored = record_outcome(store, tools, &key, rec, version, outcome).await?;
    Ok(stored.envelope.unwrap_or(Envelope::Ok(Value::Null)))
}

/// Records the outcome of a pending call (a client's result, or how a background job
/// ended), once, before the call's expiry. Returns the record as stored.
pub(crate) async fn record_outcome(
    store: &dyn StateStore,
    tools: &Snapshot,
    key: &str,
    mut rec: ExternalCall,
    version: u64,
    outcome: Result<Value, ToolError>,
) -> Result<ExternalCall, ToolError> {
    let call_id = rec.call_id.clone();
    if rec.status == ExternalStatus::Submitted {
        return Err(refuse(
            ErrorCode::Conflict,
            "duplicate",
            format!("the result of call {call_id:?} was already submitted; a result counts once"),
        ));
    }
    if now_ms() >= rec.expires_at_ms {
        return Err(refuse(
            ErrorCode::Conflict,
            "late",
            format!("call {call_id:?} expired before its result arrived; it ended as a timeout"),
        ));
    }
    let envelope = match outcome {
        Ok(data) => match tools.get(&rec.tool) {
            Some(tool) => match check_output(tool, data) {
                Envelope::Error(e) if e.code == ErrorCode::InvalidOutput => {
                    return Err(e.with("reason", "invalid_result"));
                }
                checked => checked,
            },
            None => {
                return Err(refuse(
                    ErrorCode::UnknownTool,
                    "unknown_tool",
                    format!(
                        "tool {:?} is not registered here; cannot check the result",
                        rec.tool
                    ),
                ));
            }
        },
        Err(e) => match crate::output::bounded_error(e) {
            (_, Some(why)) => {
                return Err(refuse(
                    ErrorCode::InvalidRequest,
                    "invalid_result",
                    format!(
                        "the submitted error is refused: {why}; submit it with flatter details"
                    ),
                ));
            }
            (e, None) => Envelope::Error(e),
        },
    };
    rec.status = ExternalStatus::Submitted;
    rec.envelope = Some(envelope);
    rec.submitted_at_ms = Some(now_ms());
    let won = put_as(
        store,
        Namespace::External,
        key,
        Expect::Version(version),
        &rec,
        Some(RETAIN_MS),
    )
    .await
    .map_err(StoreError::refusal)?;
    if won.is_none() {
        return Err(refuse(
            ErrorCode::Conflict,
            "duplicate",
            format!("another result for call {call_id:?} arrived at the same moment and counted"),
        ));
    }
    Ok(rec)
}

/// The client-side calls of a run that still await a result.
pub async fn pending(store: &dyn StateStore, run_id: &str) -> Result<Vec<ExternalCall>, ToolError> {
    let rows = store
        .list(Namespace::External, &format!("{run_id}/"), usize::MAX)
        .await
        .map_err(StoreError::refusal)?;
    let now = now_ms();
    Ok(rows
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_value::<ExternalCall>(v.value).ok())
        .filter(|c| c.job.is_none() && c.status == ExternalStatus::Pending && c.expires_at_ms > now)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_are_read_strictly() {
        assert_eq!(
            outcome_from_value(json!({"result": {"ok": 1}})),
            Ok(Ok(json!({"ok": 1})))
        );
        assert_eq!(
            outcome_from_value(json!({"result": null})),
            Ok(Ok(Value::Null))
        );
        let e = outcome_from_value(json!({"error": {"code": "not_found", "message": "gone",
            "retryable": true, "details": {"id": 3}}}))
        .unwrap()
        .unwrap_err();
        assert_eq!((e.code, e.retryable), (ErrorCode::NotFound, true));
        assert_eq!(e.details["id"], 3);
        for bad in [
            json!({"error": {"code": "nope", "message": "m"}}),
            json!({"error": {"code": "not_found", "message": "m", "id": 3}}),
            json!({"error": {"code": "not_found"}}),
            json!({"result": 1, "error": {}}),
            json!({"result": 1, "extra": 2}),
            json!({}),
            json!([1]),
        ] {
            assert!(outcome_from_value(bad.clone()).is_err(), "{bad}");
        }
    }
}
