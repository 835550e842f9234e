//! Cancelling a run from any process: the request is a record in the state store (so a
//! pass that starts later, or a process that missed the wake-up, still sees it), and a
//! wake-up on the run's cancel topic tells the process running it at once. That process's
//! lease heartbeat (`lease.rs`) reads the record, and fires the pass's cancellation: calls
//! not yet started end `cancelled`, handlers running see their context cancelled. A run
//! asked to stop while suspended is cancelled by the next resume in the same way.

use super::Durable;
use super::run_record::{RunRecord, RunState};
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use super::wakeup::cancel_topic;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};

/// A request to stop a run, under the run's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// When it was asked, ms since the epoch.
    pub at_ms: u64,
    /// Why, as the app said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Asks `run_id` to stop, in whichever process runs it. `Ok(false)` when the run had
/// already finished (nothing to stop); refused with `not_found` when there is no such run.
pub(crate) async fn request(
    durable: &Durable,
    run_id: &str,
    reason: Option<String>,
) -> Result<bool, ToolError> {
    let store = durable.store.as_ref();
    let run = get_as::<RunRecord>(store, Namespace::Run, run_id)
        .await
        .map_err(StoreError::refusal)?;
    match run {
        None => {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                format!("there is no run {run_id:?} (or it expired)"),
            )
            .with("reason", "unknown_run"));
        }
        Some((rec, _)) if rec.state == RunState::Finished => return Ok(false),
        Some(_) => {}
    }
    let asked = CancelRequest {
        at_ms: now_ms(),
        reason,
    };
    let ttl = Some(durable.run_ttl_ms);
    // Asked before: the first request stands.
    put_as(
        store,
        Namespace::RunCancel,
        run_id,
        Expect::Absent,
        &asked,
        ttl,
    )
    .await
    .map_err(StoreError::refusal)?;
    durable.wakeups.wake(cancel_topic(run_id));
    Ok(true)
}

/// The request to stop `run_id`, if anyone made one.
pub(crate) async fn requested(
    store: &dyn StateStore,
    run_id: &str,
) -> Result<Option<CancelRequest>, StoreError> {
    Ok(get_as::<CancelRequest>(store, Namespace::RunCancel, run_id)
        .await?
        .map(|(r, _)| r))
}
