//! Step 7 (idempotency half): a call with a side effect runs once per key.
//!
//! Before the handler runs, the key is recorded in the state store as in flight, under a
//! lease; afterwards the envelope is stored with a TTL. A duplicate that arrives while the
//! first runs waits for it and shares its envelope; one that arrives later gets the stored
//! envelope replayed. Both are marked `replayed`. The same explicit key with other arguments
//! is a `conflict`. A waiting duplicate is woken when the key settles, in any process that
//! shares the store (see `wakeup.rs`). When the process running the first call dies, its lease expires and the
//! next duplicate runs the call again, marked `recovered` on its result.

use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use super::wakeup::{Wakeups, key_topic};
use crate::call::{CallResult, CallStatus};
use crate::caller::Caller;
use crate::digest::hash_value;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::policy::Policy;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::policy::idempotency::{
    DEFAULT_IDEMPOTENCY_TTL_MS, IdempotencyMode, IdempotencyPolicy, lease_ms,
};

/// The store key of a call, or `None` when the tool is not idempotent. A `Key`-mode call
/// without a key is refused.
pub fn key_for(
    policy: &Policy,
    tool: &str,
    caller: &Caller,
    arguments: &Value,
    explicit: Option<&str>,
) -> Result<Option<String>, ToolError> {
    if policy.idempotency.mode == IdempotencyMode::Off {
        return Ok(None);
    }
    let scope = json!({"tool": tool, "tenant": caller.tenant, "principal": caller.principal});
    match policy.idempotency.mode {
        IdempotencyMode::Off => Ok(None),
        IdempotencyMode::Arguments => Ok(Some(format!(
            "args/{}",
            hash_value(&json!([scope, arguments]))
        ))),
        IdempotencyMode::Key => match explicit {
            Some(k) => Ok(Some(format!("key/{}", hash_value(&json!([scope, k]))))),
            None => Err(ToolError::new(
                ErrorCode::InvalidRequest,
                "this tool runs only with an idempotency key from the app, and the call has none; \
                 the app must set one",
            )),
        },
    }
}

/// A stored idempotency record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// Hash of the canonical arguments, to tell a reuse with other arguments.
    fingerprint: String,
    /// Who holds the lease (a random id per claim).
    owner: String,
    /// In flight until this time, unless `done`.
    lease_until_ms: u64,
    /// The finished call, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    done: Option<Finished>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Finished {
    envelope: Envelope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    at_ms: u64,
}

/// A lease on a key: this call runs, and must [`finish`] it.
#[derive(Debug)]
pub struct Claim {
    key: String,
    version: u64,
    owner: String,
    fingerprint: String,
    ttl_ms: u64,
    /// A dead holder's lease was taken over.
    pub recovered: bool,
}

/// What step 7 decided.
#[derive(Debug)]
pub enum Outcome {
    /// Run the call under this lease.
    Run(Claim),
    /// The call is settled: replayed, shared or refused; `result` says how.
    Settled,
}

fn store_err(e: StoreError) -> ToolError {
    e.refusal()
}

fn conflict() -> Envelope {
    Envelope::Error(
        ToolError::new(
            ErrorCode::Conflict,
            "this idempotency key was already used for a call with other arguments; \
             use a new key for a different request",
        )
        .with("reason", "key_reused"),
    )
}

fn replay(result: &mut CallResult, done: Finished) {
    result.envelope = done.envelope;
    result.detail = done.detail;
    result.replayed = true;
}

/// What [`peek`] found under a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peeked {
    /// A finished call (replayed) or a conflict: `result` says which.
    Settled,
    /// No record: [`begin`] may claim the key without reading it again.
    Nothing,
    /// A call holds the key, or held it and died: [`begin`] decides.
    InFlight,
}

/// Looks for a finished record without claiming anything: a replay needs no approval.
pub async fn peek(
    store: &dyn StateStore,
    key: &str,
    fingerprint: &str,
    result: &mut CallResult,
) -> Result<Peeked, ToolError> {
    match get_as::<Record>(store, Namespace::Idempotency, key)
        .await
        .map_err(store_err)?
    {
        None => Ok(Peeked::Nothing),
        Some((rec, _)) if rec.fingerprint != fingerprint => {
            result.envelope = conflict();
            Ok(Peeked::Settled)
        }
        Some((
            Record {
                done: Some(done), ..
            },
            _,
        )) => {
            replay(result, done);
            Ok(Peeked::Settled)
        }
        Some(_) => Ok(Peeked::InFlight),
    }
}

/// Claims `key` for this call, or settles `result` from the call that holds or held it.
/// `peeked` is what [`peek`] found: when it found nothing, the first try claims the key
/// without reading it again (the claim is a compare-and-set, so a racer that got there
/// in between only sends this call round the loop once).
#[allow(clippy::too_many_arguments)] // one call's identity, spelled out rather than bundled
pub async fn begin(
    store: &dyn StateStore,
    wakeups: &Wakeups,
    key: &str,
    fingerprint: &str,
    lease: u64,
    ttl_ms: u64,
    cancel: &CancellationToken,
    peeked: Peeked,
    result: &mut CallResult,
) -> Result<Outcome, ToolError> {
    let owner = crate::random_id::uuid().to_string();
    let mut poll = Duration::from_millis(5);
    let mut read = peeked != Peeked::Nothing;
    let topic = key_topic(key);
    loop {
        let notify = wakeups.watch(&topic);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let current = if read {
            get_as::<Record>(store, Namespace::Idempotency, key)
                .await
                .map_err(store_err)?
        } else {
            None
        };
        read = true;
        let (expect, recovered) = match current {
            None => (Expect::Absent, false),
            Some((rec, _)) if rec.fingerprint != fingerprint => {
                wakeups.forget(&topic, &notify);
                result.envelope = conflict();
                return Ok(Outcome::Settled);
            }
            Some((
                Record {
                    done: Some(done), ..
                },
                _,
            )) => {
                wakeups.forget(&topic, &notify);
                replay(result, done);
                return Ok(Outcome::Settled);
            }
            Some((rec, version)) if rec.lease_until_ms <= now_ms() => {
                (Expect::Version(version), true)
            }
            Some((rec, _)) => {
                // In flight elsewhere: wait for a wake-up, a poll tick, or the lease's end.
                let until = rec.lease_until_ms.saturating_sub(now_ms()).max(1);
                let wait = poll.min(Duration::from_millis(until));
                tokio::select! {
                    _ = &mut notified => {}
                    _ = tokio::time::sleep(wait) => {}
                    _ = cancel.cancelled() => {
                        wakeups.forget(&topic, &notify);
                        result.envelope = Envelope::error(
                            ErrorCode::Cancelled,
                            "the call was cancelled while an identical call was still running",
                        );
                        return Ok(Outcome::Settled);
                    }
                }
                poll = (poll * 2).min(wakeups.patience());
                wakeups.forget(&topic, &notify);
                continue;
            }
        };
        let rec = Record {
            fingerprint: fingerprint.to_string(),
            owner: owner.clone(),
            lease_until_ms: now_ms().saturating_add(lease),
            done: None,
        };
        let won = put_as(
            store,
            Namespace::Idempotency,
            key,
            expect,
            &rec,
            Some(ttl_ms.max(lease)),
        )
        .await
        .map_err(store_err)?;
        wakeups.forget(&topic, &notify);
        if let Some(version) = won {
            return Ok(Outcome::Run(Claim {
                key: key.to_string(),
                version,
                owner,
                fingerprint: fingerprint.to_string(),
                ttl_ms,
                recovered,
            }));
        }
    }
}

/// Gives up a claim without a result (the call will not run): the key is free again, and
/// the duplicates waiting on it are woken to claim it themselves.
pub async fn release(
    store: &dyn StateStore,
    wakeups: &Wakeups,
    claim: Claim,
) -> Result<(), StoreError> {
    let outcome = store
        .delete(Namespace::Idempotency, &claim.key, claim.version)
        .await
        .map(|_| ());
    wakeups.wake(key_topic(&claim.key));
    outcome
}

/// Stores the finished call under its key and wakes the duplicates. A retryable failure
/// releases the key instead, so a retry of the same request runs again.
pub async fn finish(
    store: &dyn StateStore,
    wakeups: &Wakeups,
    claim: Claim,
    result: &CallResult,
) -> Result<(), StoreError> {
    // Not run (pending) or worth retrying: free the key rather than pin this outcome. A job's
    // acceptance is pinned: a duplicate is told of the job rather than starting another.
    let retryable = matches!(&result.envelope, Envelope::Error(e) if e.retryable)
        || !matches!(result.status, CallStatus::Done | CallStatus::PendingJob);
    if retryable {
        return release(store, wakeups, claim).await;
    }
    let rec = Record {
        fingerprint: claim.fingerprint,
        owner: claim.owner,
        lease_until_ms: now_ms(),
        done: Some(Finished {
            envelope: result.envelope.clone(),
            detail: result.detail.clone(),
            at_ms: now_ms(),
        }),
    };
    let at = Expect::Version(claim.version);
    let ttl = Some(claim.ttl_ms);
    let outcome = put_as(store, Namespace::Idempotency, &claim.key, at, &rec, ttl)
        .await
        .map(|_| ());
    wakeups.wake(key_topic(&claim.key));
    outcome
}
