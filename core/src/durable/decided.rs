//! Waiting for a run's approvals to be decided, woken by the decision itself.
//!
//! An agent suspended on approvals waits for a person, in whichever process serves the inbox.
//! [`wait`] returns as soon as none of the run's requests awaits a decision (each decided, or
//! expired): a decision wakes its run's topic in the deciding process and, through the state
//! store's wake bus (PostgreSQL `LISTEN`/`NOTIFY`, Redis pub/sub), in every other; the waiter
//! also reads the store again every [`Wakeups::patience`], so a lost wake-up costs at most
//! that. Then the app resumes the run.

use super::approval;
use super::store::StateStore;
use super::wakeup::{Wakeups, decided_topic};
use crate::envelope::ToolError;
use std::time::Duration;
use tokio::time::Instant;

/// Whether none of run `run_id`'s approval requests awaits a decision.
async fn settled(store: &dyn StateStore, run_id: &str) -> Result<bool, ToolError> {
    let pending = approval::pending(store, None).await?;
    Ok(!pending.iter().any(|r| r.run_id == run_id))
}

/// Waits up to `timeout` until none of run `run_id`'s approval requests awaits a decision:
/// `true` once none does (at once when none ever did), `false` when the time ran out.
pub async fn wait(
    store: &dyn StateStore,
    wakeups: &Wakeups,
    run_id: &str,
    timeout: Duration,
) -> Result<bool, ToolError> {
    let deadline = Instant::now() + timeout;
    let decided = || async {
        match settled(store, run_id).await {
            Ok(false) => None,
            done => Some(done),
        }
    };
    wakeups
        .read_until(&decided_topic(run_id), deadline, None, decided)
        .await
        .unwrap_or(Ok(false))
}
