//! Who runs a run right now: a lease in the state store, renewed by a heartbeat while its
//! pass runs. A process that dies stops renewing, and once the lease lapses (a few seconds,
//! not the run's deadline) any process may take the run over with `resume`. A holder that
//! finds its lease taken (it stalled past the lapse, and another process took over) sees
//! the token it gave [`acquire`] fire: its pass stops starting calls. The heartbeat also
//! watches for a request to cancel the run (`cancel.rs`), and fires the same token when one
//! comes; a released lease wakes the resumes waiting for it.

use super::Durable;
use super::cancel;
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use super::wakeup::{Wakeups, cancel_topic, run_topic};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Default of how long a lease lasts without a heartbeat: 15 seconds.
pub const DEFAULT_LEASE_MS: u64 = 15_000;

/// A lease as stored, under the run's id.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Held {
    /// A random id of the holding pass.
    owner: String,
    /// The lease lapses then, ms since the epoch, unless renewed before.
    until_ms: u64,
}

/// A lease this process holds; renewed in the background until [`Lease::release`].
pub(crate) struct Lease {
    store: Arc<dyn StateStore>,
    wakeups: Arc<Wakeups>,
    run_id: String,
    owner: String,
    version: Arc<Mutex<u64>>,
    /// Ends the heartbeat.
    stop: CancellationToken,
    /// The pass's own token: fired when the lease is lost or the run is cancelled.
    stop_pass: CancellationToken,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("run_id", &self.run_id)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// Takes the lease on `run_id` for the engine's lease time, unless a live holder has it
/// (`Ok(None)`): a lease past its time is taken over, by compare-and-set, so two takers
/// never both win. `stop_pass` fires when the lease is lost or the run is cancelled.
pub(crate) async fn acquire(
    durable: &Durable,
    run_id: &str,
    stop_pass: CancellationToken,
) -> Result<Option<Lease>, StoreError> {
    let (store, lease_ms) = (&durable.store, durable.lease_ms);
    let owner = crate::random_id::uuid().simple().to_string();
    let now = now_ms();
    let held = Held {
        owner: owner.clone(),
        until_ms: now.saturating_add(lease_ms),
    };
    let keep = Some(lease_ms.saturating_mul(4));
    let put = |expect| {
        put_as(
            store.as_ref(),
            Namespace::RunLease,
            run_id,
            expect,
            &held,
            keep,
        )
    };
    // Nobody holds it, the common case (a lease is deleted when its pass ends): one write.
    let version = match put(Expect::Absent).await? {
        Some(version) => version,
        None => {
            let expect = match get_as::<Held>(store.as_ref(), Namespace::RunLease, run_id).await? {
                Some((current, _)) if current.until_ms > now => return Ok(None),
                Some((_, version)) => Expect::Version(version),
                None => Expect::Absent,
            };
            match put(expect).await? {
                Some(version) => version,
                None => return Ok(None),
            }
        }
    };
    let lease = Lease {
        store: store.clone(),
        wakeups: durable.wakeups.clone(),
        run_id: run_id.to_string(),
        owner,
        version: Arc::new(Mutex::new(version)),
        stop: CancellationToken::new(),
        stop_pass,
    };
    lease.heartbeat(lease_ms);
    Ok(Some(lease))
}

impl Lease {
    /// Renews the lease every third of its length until released, and stops the pass when
    /// the run is asked to stop (woken at once by the cancel topic; read at every beat in
    /// case the wake-up was lost).
    fn heartbeat(&self, lease_ms: u64) {
        let (store, run_id, owner) = (self.store.clone(), self.run_id.clone(), self.owner.clone());
        let (version, stop, stop_pass) = (
            self.version.clone(),
            self.stop.clone(),
            self.stop_pass.clone(),
        );
        let wakeups = self.wakeups.clone();
        let every = Duration::from_millis((lease_ms / 3).max(1));
        let topic = cancel_topic(&run_id);
        // Watched and armed before the pass starts, not when the task first runs: a wake-up
        // reaches only armed waiters, and a request made as soon as a call runs would
        // otherwise wait for the next beat.
        let mut first = Some(wakeups.armed(&topic));
        tokio::spawn(async move {
            let mut next_beat = tokio::time::Instant::now() + every;
            // A pass starts knowing whether its run was asked to stop (a fresh run cannot have
            // been; `begin_resume` reads it): read it again only once woken or at a beat.
            let mut look = false;
            loop {
                let (asked, mut woken) = first.take().unwrap_or_else(|| wakeups.armed(&topic));
                if look && !stop_pass.is_cancelled() {
                    match cancel::requested(store.as_ref(), &run_id).await {
                        Ok(Some(_)) => {
                            tracing::info!(target: "tooljig::run", run_id = %run_id, "the run was asked to stop; this pass stops");
                            stop_pass.cancel();
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(target: "tooljig::run", run_id = %run_id, error = %e.0, "reading the run's cancel request failed")
                        }
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => {
                        wakeups.forget(&topic, &asked);
                        return;
                    }
                    _ = tokio::time::sleep_until(next_beat) => {}
                    _ = woken.as_mut() => {
                        wakeups.forget(&topic, &asked);
                        look = true;
                        continue;
                    }
                }
                wakeups.forget(&topic, &asked);
                look = true;
                next_beat = tokio::time::Instant::now() + every;
                let held = Held {
                    owner: owner.clone(),
                    until_ms: now_ms().saturating_add(lease_ms),
                };
                let current = *version.lock().unwrap_or_else(|p| p.into_inner());
                let renewed = put_as(
                    store.as_ref(),
                    Namespace::RunLease,
                    &run_id,
                    Expect::Version(current),
                    &held,
                    Some(lease_ms.saturating_mul(4)),
                )
                .await;
                match renewed {
                    Ok(Some(v)) => *version.lock().unwrap_or_else(|p| p.into_inner()) = v,
                    Ok(None) => {
                        tracing::error!(target: "tooljig::run", run_id = %run_id, "the run's lease was taken over by another process; this pass stops");
                        stop_pass.cancel();
                        return;
                    }
                    // A store hiccup: try again at the next beat; the lease has two more.
                    Err(e) => {
                        tracing::warn!(target: "tooljig::run", run_id = %run_id, error = %e.0, "renewing the run's lease failed")
                    }
                }
            }
        });
    }

    /// Stops the heartbeat and gives the lease up, so the run can be resumed at once.
    pub(crate) async fn release(self) {
        self.stop.cancel();
        let version = *self.version.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self
            .store
            .delete(Namespace::RunLease, &self.run_id, version)
            .await;
        self.wakeups.wake(run_topic(&self.run_id));
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Released or not, the heartbeat ends with the holder.
        self.stop.cancel();
    }
}
