//! Long-running tools: a handler answers that it accepted the work as a background job
//! (`HandlerError::Accepted`, with the app's own reference for it). The call ends
//! `pending_job`, recorded in the state store beside client-side calls (`external.rs`, whose
//! record and expiry it shares); the app reports how the job ended from any process
//! ([`complete_job`]), and [`Engine::resume`](crate::Engine::resume) carries the run on. A job
//! not reported before its expiry (the tool's `job_expiry_ms`, else the engine's
//! `external_expiry_ms`) ends the call as a `timeout`.
//!
//! The job's reference is the key the app reports under, so it is indexed on its own: one
//! reference names one pending call, and a second call accepted under a reference still in
//! use is refused (`conflict`) rather than sharing the first one's outcome.

use super::CallDurable;
use super::external::{self, ExternalCall, ExternalStatus};
use super::run_record::run_call_key;
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use crate::call::{CallResult, CallStatus};
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::job::Job;
use crate::registry::Snapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a background job stands, as [`JobStatus::state`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Accepted; the app has not reported how it ended.
    Pending,
    /// Reported done, with data the call returns.
    Completed,
    /// Reported failed, with the error the call returns.
    Failed,
    /// Not reported before its expiry: the call ends as a `timeout`.
    Expired,
}

/// A background job's call, as [`Engine::job_status`](crate::Engine::job_status) and
/// [`Engine::complete_job`](crate::Engine::complete_job) report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    /// The job's reference, as the handler gave it.
    pub job: String,
    /// Where it stands.
    pub state: JobState,
    /// The run its call belongs to: resume it once the job ended.
    pub run_id: String,
    /// The call's id in the run.
    pub call_id: String,
    /// The tool that accepted it.
    pub tool: String,
    /// The arguments the handler ran with.
    pub arguments: Value,
    /// When it was accepted, ms since the epoch.
    pub created_at_ms: u64,
    /// After this, a report is refused and the call ends as a `timeout`, ms since the epoch.
    pub expires_at_ms: u64,
    /// When the app reported how it ended, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// What the call returns, once reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
}

impl JobStatus {
    fn of(job: String, rec: ExternalCall) -> Self {
        let state = match (&rec.status, &rec.envelope) {
            (ExternalStatus::Submitted, Some(Envelope::Error(_))) => JobState::Failed,
            (ExternalStatus::Submitted, _) => JobState::Completed,
            (ExternalStatus::Pending, _) if rec.expires_at_ms <= now_ms() => JobState::Expired,
            (ExternalStatus::Pending, _) => JobState::Pending,
        };
        JobStatus {
            job,
            state,
            run_id: rec.run_id,
            call_id: rec.call_id,
            tool: rec.tool,
            arguments: rec.arguments,
            created_at_ms: rec.created_at_ms,
            expires_at_ms: rec.expires_at_ms,
            completed_at_ms: rec.submitted_at_ms,
            envelope: rec.envelope,
        }
    }
}

/// Where a job's call is recorded, by the job's reference.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct JobIndex {
    run_id: String,
    call_id: String,
}

/// Records the call its handler accepted as the job `reference` and marks the result
/// `pending_job`; a reference already naming a pending call refuses this one.
pub async fn park(d: &CallDurable, job: &Job, reference: String, result: &mut CallResult) {
    let policy = &job.tool.spec.policy;
    let expiry_ms = policy.job_expiry_ms.unwrap_or(d.shared.external_expiry_ms);
    let store = d.shared.store.as_ref();
    let index = JobIndex {
        run_id: d.run_id.to_string(),
        call_id: job.id.to_string(),
    };
    let ttl = Some(expiry_ms.saturating_add(RETAIN_MS));
    let taken = if reference.is_empty() {
        Err("a job's reference may not be empty".to_string())
    } else {
        match put_as(
            store,
            Namespace::Job,
            &reference,
            Expect::Absent,
            &index,
            ttl,
        )
        .await
        {
            Ok(Some(version)) => Ok(version),
            Ok(None) => Err(format!(
                "job reference {reference:?} already names another call; each job needs its own"
            )),
            Err(e) => {
                store_failure(result, e);
                return;
            }
        }
    };
    let index_version = match taken {
        Ok(version) => version,
        Err(why) => {
            result.detail = Some(why);
            result.envelope = Envelope::error(
                ErrorCode::Conflict,
                "the tool accepted the work under a job reference it cannot use; the job's \
                 outcome will not reach this call",
            );
            return;
        }
    };
    let handed = external::hand_out(d, job, Some(&reference), expiry_ms).await;
    if !matches!(handed, Ok(Some(_))) {
        // The reference names no pending call after all: free it for a retry.
        let _ = store
            .delete(Namespace::Job, &reference, index_version)
            .await;
    }
    match handed {
        Ok(Some(_)) => {
            result.status = CallStatus::PendingJob;
            result.envelope = Envelope::Error(
                ToolError::new(
                    ErrorCode::PendingJob,
                    "the tool accepted the work; it runs in the background and its result has \
                     not arrived yet",
                )
                .with("job", reference),
            );
        }
        Ok(None) => {
            result.envelope = Envelope::error(
                ErrorCode::Conflict,
                "this call was already handed out in this run",
            );
        }
        Err(e) => store_failure(result, e),
    }
}

/// How long the records are kept after the job's expiry, so a late report is told it is late.
const RETAIN_MS: u64 = 7 * 24 * 60 * 60 * 1000;

fn store_failure(result: &mut CallResult, e: StoreError) {
    result.envelope = Envelope::Error(StoreError::envelope(
        "the tool's job was accepted but not recorded; its outcome will not reach this call",
    ));
    result.detail = Some(e.0);
}

/// The call of the job `reference` and its record's version.
async fn find(
    store: &dyn StateStore,
    reference: &str,
) -> Result<Option<(ExternalCall, u64)>, ToolError> {
    let Some((index, _)) = get_as::<JobIndex>(store, Namespace::Job, reference)
        .await
        .map_err(StoreError::refusal)?
    else {
        return Ok(None);
    };
    let key = run_call_key(&index.run_id, &index.call_id);
    get_as::<ExternalCall>(store, Namespace::External, &key)
        .await
        .map_err(StoreError::refusal)
}

/// Where the job `reference` stands; `None` when no call was accepted under it (or its
/// records are gone, a week after its expiry).
pub async fn status(
    store: &dyn StateStore,
    reference: &str,
) -> Result<Option<JobStatus>, ToolError> {
    Ok(find(store, reference)
        .await?
        .map(|(rec, _)| JobStatus::of(reference.to_string(), rec)))
}

/// Reports how the job `reference` ended: data (checked against the tool's output schema and
/// size limit) or an error the model will see. Returns the job as it now stands; resume its
/// run (`run_id`) to carry the run on.
///
/// Refused with `not_found` (reason `unknown_job`) when no call was accepted under the
/// reference, `conflict` (reason `duplicate` or `late`) when it was already reported or
/// expired, and `invalid_output` (reason `invalid_result`) when the data breaks the schema
/// (the job stays pending; report a corrected result).
pub async fn complete(
    store: &dyn StateStore,
    tools: &Snapshot,
    reference: &str,
    outcome: Result<Value, ToolError>,
) -> Result<JobStatus, ToolError> {
    let Some((rec, version)) = find(store, reference).await? else {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("no call was accepted as job {reference:?}"),
        )
        .with("reason", "unknown_job"));
    };
    let key = run_call_key(&rec.run_id, &rec.call_id);
    let stored = external::record_outcome(store, tools, &key, rec, version, outcome).await?;
    Ok(JobStatus::of(reference.to_string(), stored))
}
