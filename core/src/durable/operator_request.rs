//! Resuming and rolling back a run on an operator's word, from a process that has no
//! handlers (`tooljig resume RUN`, `tooljig rollback RUN`).
//!
//! Handlers live in the app's processes and languages, so the operator's command does not run
//! them: it leaves a request in the state store and wakes the app's workers (topic
//! [`OPERATOR_TOPIC`]). A worker serving operator requests ([`serve_one`]) takes the oldest
//! one with a compare-and-set, so exactly one worker carries it out, holds it under a lease
//! renewed while it works (a worker that dies loses it when the lease lapses, and another
//! takes it again: a resume and a rollback are both safe to repeat), and writes the answer
//! back, waking the asker (topic [`answered_topic`]). An asker that stops waiting withdraws
//! a request nobody took, so it never runs later by surprise.
//!
//! Open requests are kept under `q/ID` and answered ones under `a/ID`, so the queue a worker
//! scans holds only open ones, however many answers are kept.

use super::Durable;
use super::run_record::RunRecord;
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The topic woken when an operator asks for something.
pub(crate) const OPERATOR_TOPIC: &str = "operator";

/// The topic woken when request `id` is answered.
pub(crate) fn answered_topic(id: &str) -> String {
    format!("operator/{id}")
}

/// How long a worker holds a request without renewing it; it renews every third of this.
pub const OPERATOR_LEASE_MS: u64 = 30_000;

/// How many open requests a worker looks at in one go.
const SCAN: usize = 64;

/// Where an open request is kept.
fn open_key(id: &str) -> String {
    format!("q/{id}")
}

/// Where an answered request is kept.
fn answered_key(id: &str) -> String {
    format!("a/{id}")
}

/// What an operator asks of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAction {
    /// Continue it ([`Engine::resume`](crate::Engine::resume)).
    Resume,
    /// Undo its completed calls ([`Engine::rollback`](crate::Engine::rollback)).
    Rollback,
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestState {
    /// Waiting for a worker.
    Queued,
    /// A worker is carrying it out (until `lease_until_ms`, unless renewed).
    Taken,
    /// Carried out: `result` says how it went, or `error` why it was refused.
    Answered,
}

/// An operator's request, as stored under its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorRequest {
    /// Its id; ids sort in the order requests were made.
    pub id: String,
    /// What is asked.
    pub action: OperatorAction,
    /// Of which run.
    pub run_id: String,
    /// For a rollback: only this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The operator who asked, as they named themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
    /// When, in ms since the Unix epoch.
    pub asked_at_ms: u64,
    /// Where it stands.
    pub state: RequestState,
    /// The worker that took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// Until when the worker holds it, unless it renews.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<u64>,
    /// When it was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at_ms: Option<u64>,
    /// A resume's `BatchResult`, a rollback's `RollbackReport`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the engine refused it (an unknown run, a run another pass holds, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl OperatorRequest {
    /// Whether a worker may take it now: queued, or taken by one whose lease lapsed.
    fn takeable(&self, now: u64) -> bool {
        match self.state {
            RequestState::Queued => true,
            RequestState::Taken => self.lease_until_ms.is_none_or(|t| t <= now),
            RequestState::Answered => false,
        }
    }
}

/// Leaves a request for `action` on `run_id` for the app's workers and wakes them. Refused
/// with `not_found` when there is no such run.
pub(crate) async fn ask(
    durable: &Durable,
    action: OperatorAction,
    run_id: &str,
    call_id: Option<String>,
    asked_by: Option<String>,
) -> Result<OperatorRequest, ToolError> {
    let store = durable.store.as_ref();
    let run = get_as::<RunRecord>(store, Namespace::Run, run_id)
        .await
        .map_err(StoreError::refusal)?;
    if run.is_none() {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("there is no run {run_id:?} (or it expired)"),
        )
        .with("reason", "unknown_run"));
    }
    let at = now_ms();
    let request = OperatorRequest {
        // Time first, so the store's key order is the order requests were made.
        id: format!("{at:013}-{}", crate::random_id::uuid().simple()),
        action,
        run_id: run_id.to_string(),
        call_id,
        asked_by,
        asked_at_ms: at,
        state: RequestState::Queued,
        worker: None,
        lease_until_ms: None,
        answered_at_ms: None,
        result: None,
        error: None,
    };
    put_as(
        store,
        Namespace::OperatorRequest,
        &open_key(&request.id),
        Expect::Absent,
        &request,
        Some(durable.run_ttl_ms),
    )
    .await
    .map_err(StoreError::refusal)?;
    durable.wakeups.wake(OPERATOR_TOPIC.to_string());
    Ok(request)
}

/// A request as stored now: answered, or still open (with the version of its open record).
async fn find(
    store: &dyn StateStore,
    id: &str,
) -> Result<Option<(OperatorRequest, Option<u64>)>, StoreError> {
    let ns = Namespace::OperatorRequest;
    if let Some((answered, _)) = get_as::<OperatorRequest>(store, ns, &answered_key(id)).await? {
        return Ok(Some((answered, None)));
    }
    match get_as::<OperatorRequest>(store, ns, &open_key(id)).await? {
        Some((open, version)) => Ok(Some((open, Some(version)))),
        // Answered between the two reads: the answer is written before the open record goes.
        None => Ok(get_as::<OperatorRequest>(store, ns, &answered_key(id))
            .await?
            .map(|(answered, _)| (answered, None))),
    }
}

/// A request as stored now.
pub(crate) async fn get(
    store: &dyn StateStore,
    id: &str,
) -> Result<Option<OperatorRequest>, ToolError> {
    Ok(find(store, id)
        .await
        .map_err(StoreError::refusal)?
        .map(|(r, _)| r))
}

/// Waits up to `timeout` for request `id` to be answered. When the time runs out and no
/// worker took it, withdraws it (it will not run later) and returns it still `queued`; a
/// request a worker holds is returned `taken` and goes on.
pub(crate) async fn wait(
    durable: &Durable,
    id: &str,
    timeout: Duration,
) -> Result<OperatorRequest, ToolError> {
    let store = durable.store.as_ref();
    let deadline = Instant::now() + timeout;
    let answered = || async {
        match find(store, id).await {
            Ok(Some((request, _))) if request.state != RequestState::Answered => None,
            Ok(found) => Some(Ok(found)),
            Err(e) => Some(Err(e)),
        }
    };
    let topic = answered_topic(id);
    let found = match durable
        .wakeups
        .read_until(&topic, deadline, None, answered)
        .await
    {
        Some(found) => found,
        None => find(store, id).await,
    };
    let (request, version) = found.map_err(StoreError::refusal)?.ok_or_else(|| {
        ToolError::new(
            ErrorCode::NotFound,
            format!("there is no operator request {id:?} (or it expired)"),
        )
        .with("reason", "unknown_request")
    })?;
    if let (RequestState::Queued, Some(version)) = (request.state, version) {
        // The time ran out and no worker took it: withdrawn, unless one took it this very
        // moment.
        let gone = store
            .delete(Namespace::OperatorRequest, &open_key(id), version)
            .await
            .map_err(StoreError::refusal)?;
        if !gone && let Some(now) = get(store, id).await? {
            return Ok(now);
        }
    }
    Ok(request)
}

/// Takes the oldest request a worker may take, marking it `taken` by `worker`; `None` when
/// there is none (or others took each one first).
async fn take(
    store: &dyn StateStore,
    worker: &str,
    ttl_ms: u64,
) -> Result<Option<(OperatorRequest, u64)>, StoreError> {
    let now = now_ms();
    for (_, found) in store.list(Namespace::OperatorRequest, "q/", SCAN).await? {
        let Ok(mut request) = serde_json::from_value::<OperatorRequest>(found.value) else {
            continue;
        };
        if !request.takeable(now) {
            continue;
        }
        request.state = RequestState::Taken;
        request.worker = Some(worker.to_string());
        request.lease_until_ms = Some(now + OPERATOR_LEASE_MS);
        let to = Expect::Version(found.version);
        let key = open_key(&request.id);
        if let Some(v) = put_as(
            store,
            Namespace::OperatorRequest,
            &key,
            to,
            &request,
            Some(ttl_ms),
        )
        .await?
        {
            return Ok(Some((request, v)));
        }
    }
    Ok(None)
}

/// Waits up to `timeout` for an operator request (or until `stop`), takes it, carries it
/// out with `perform` while renewing its lease, and records the answer: the answered
/// request, or `None` when none came in time. `stop` ends the wait, not work taken.
pub(crate) async fn serve_one<F, Fut>(
    durable: &Durable,
    worker: &str,
    timeout: Duration,
    stop: Option<&CancellationToken>,
    perform: F,
) -> Result<Option<OperatorRequest>, ToolError>
where
    F: FnOnce(OperatorRequest) -> Fut,
    Fut: Future<Output = Result<Value, ToolError>>,
{
    let store = durable.store.as_ref();
    let ttl = durable.run_ttl_ms;
    let deadline = Instant::now() + timeout;
    let taken = || async { take(store, worker, ttl).await.transpose() };
    let (mut request, mut version) = match durable
        .wakeups
        .read_until(OPERATOR_TOPIC, deadline, stop, taken)
        .await
    {
        Some(taken) => taken.map_err(StoreError::refusal)?,
        None => return Ok(None),
    };

    let work = perform(request.clone());
    tokio::pin!(work);
    let renew_every = Duration::from_millis(OPERATOR_LEASE_MS / 3);
    let outcome = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = tokio::time::sleep(renew_every) => {
                request.lease_until_ms = Some(now_ms() + OPERATOR_LEASE_MS);
                let to = Expect::Version(version);
                // Renewal lost (store down, or the lease lapsed and another took it): the
                // work goes on; repeating a resume or rollback is safe.
                let key = open_key(&request.id);
                if let Ok(Some(v)) = put_as(store, Namespace::OperatorRequest, &key, to, &request, Some(ttl)).await {
                    version = v;
                }
            }
        }
    };
    request.state = RequestState::Answered;
    request.lease_until_ms = None;
    request.answered_at_ms = Some(now_ms());
    match outcome {
        Ok(result) => request.result = Some(result),
        Err(e) => request.error = Some(e),
    }
    let id = request.id.clone();
    let ns = Namespace::OperatorRequest;
    // The answer first, then the open record goes: a reader in between finds the answer.
    // Another worker that took the request over after this one's lease lapsed may have
    // answered too; the later answer stands.
    let to = match get_as::<OperatorRequest>(store, ns, &answered_key(&id))
        .await
        .map_err(StoreError::refusal)?
    {
        Some((_, v)) => Expect::Version(v),
        None => Expect::Absent,
    };
    put_as(store, ns, &answered_key(&id), to, &request, Some(ttl))
        .await
        .map_err(StoreError::refusal)?;
    if let Some((_, v)) = get_as::<OperatorRequest>(store, ns, &open_key(&id))
        .await
        .map_err(StoreError::refusal)?
    {
        // Gone already, or changed by a worker that took it over: that one removes it.
        let _ = store.delete(ns, &open_key(&id), v).await;
    }
    durable.wakeups.wake(answered_topic(&id));
    Ok(Some(request))
}
