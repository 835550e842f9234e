//! Durable runs: what outlives one batch and one process. Idempotency (step 7), human
//! approval and learned preferences (step 8), client-side results, runs that suspend and
//! resume, rollback by compensation, and the state store they all keep their records in.
//! See `docs/durable-runs.md`.
//!
//! This module gathers what an engine holds for them ([`Durable`]), what one call knows of
//! its run ([`CallDurable`]), and the guard that steps 7 and 8 put around one call
//! ([`before`], [`after`]); each concept's own logic is in the file named for it.

pub mod approval;
pub mod approval_record;
pub mod background_job;
pub mod cancel;
pub mod decided;
pub mod decision;
pub mod external;
pub mod idempotency;
pub(crate) mod lease;
pub mod operator_request;
pub mod preference;
pub mod rollback;
pub mod run;
pub mod run_record;
pub mod store;
pub mod wakeup;

use crate::call::{ApprovalInfo, ApprovalStatus, CallResult, CallStatus};
use crate::digest::hash_value;
use crate::envelope::{Envelope, ToolError};
use crate::guard::rate_limit::{self, RateLimiter};
use crate::handler::Handler;
use crate::job::Job;
use crate::place::Place;
use crate::policy::{ApprovalRules, EffectClass, IdempotencyMode, Policy};
use approval::{ApprovalPredicate, ApprovalQuery, ApprovalRecord};
use idempotency::{Claim, Outcome};
use preference::Preference;
use run_record::{RunCallRecord, run_call_key};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use store::{Expect, MemoryStore, Namespace, StateStore, StoreError, get_as, put_as};

/// Default of how long a client-side call waits for its result: 24 hours.
pub const DEFAULT_EXTERNAL_EXPIRY_MS: u64 = 24 * 60 * 60 * 1000;
/// Default of how long a run is kept for resume and rollback: 7 days.
pub const DEFAULT_RUN_TTL_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The engine's durable-run settings, grouped: the state store, the approval rules and
/// predicate, compensation handlers, and the wake-ups of waiting calls.
#[derive(Clone)]
pub struct Durable {
    pub(crate) store: Arc<dyn StateStore>,
    /// Set by [`Engine::with_state_store`](crate::Engine::with_state_store): every batch is
    /// then persisted as a run.
    pub(crate) explicit_store: bool,
    pub(crate) rules: ApprovalRules,
    pub(crate) predicate: Option<Arc<dyn ApprovalPredicate>>,
    pub(crate) compensations: Arc<RwLock<HashMap<String, Arc<dyn Handler>>>>,
    pub(crate) wakeups: Arc<wakeup::Wakeups>,
    pub(crate) external_expiry_ms: u64,
    pub(crate) run_ttl_ms: u64,
    /// Seals decisions when set (see `approval::seal`).
    pub(crate) seal_key: Option<crate::seal::SealKey>,
    /// How long a run's lease lasts without a heartbeat (see `lease.rs`).
    pub(crate) lease_ms: u64,
}

impl Default for Durable {
    fn default() -> Self {
        Durable {
            store: Arc::new(MemoryStore::new()),
            explicit_store: false,
            rules: ApprovalRules::default(),
            predicate: None,
            compensations: Default::default(),
            wakeups: Default::default(),
            external_expiry_ms: DEFAULT_EXTERNAL_EXPIRY_MS,
            run_ttl_ms: DEFAULT_RUN_TTL_MS,
            seal_key: None,
            lease_ms: lease::DEFAULT_LEASE_MS,
        }
    }
}

impl Durable {
    /// Registers a handler that undoes calls of `tool`; it receives
    /// `{"arguments": <the call's arguments>, "result": <its data>}`.
    pub fn add_compensation(&self, tool: String, handler: Arc<dyn Handler>) {
        let mut map = self
            .compensations
            .write()
            .unwrap_or_else(|p| p.into_inner());
        map.insert(tool, handler);
    }
}

/// What one call of a batch knows about its run.
#[derive(Clone)]
pub struct CallDurable {
    pub(crate) shared: Arc<Durable>,
    pub(crate) run_id: Arc<str>,
    pub(crate) idempotency_key: Option<String>,
    /// A decision taken while the run was suspended: run exactly its arguments.
    pub(crate) approved: Option<Box<ApprovalRecord>>,
    /// The run is durable (kept in the app's store) or resumed: each call is claimed in the
    /// run before it starts and finished there with its result, so a later pass knows which
    /// calls never started, which finished, and which a crash cut off.
    pub(crate) claims: bool,
}

impl std::fmt::Debug for CallDurable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallDurable")
            .field("run_id", &self.run_id)
            .field("claims", &self.claims)
            .finish_non_exhaustive()
    }
}

/// What the guard holds while a call runs, released by [`after`].
#[derive(Debug, Default)]
pub struct Guarded {
    /// Whether the call runs; when not, the result already says why.
    pub proceed: bool,
    idempotency: Option<Claim>,
    run_call: Option<(String, u64)>,
}

fn store_failure(result: &mut CallResult, e: StoreError) {
    result.envelope = Envelope::Error(StoreError::envelope("the call was not run"));
    result.detail = Some(e.0);
}

/// Ends the call with a durable step's refusal. A store failure's message is the backend's
/// own: it moves to the result's detail, and the model reads only that the store is down.
fn refuse(result: &mut CallResult, e: ToolError) {
    if e.code == crate::error_code::ErrorCode::Unavailable {
        store_failure(result, StoreError(e.message));
    } else {
        result.envelope = Envelope::Error(e);
    }
}

/// Steps 6 to 8 for one call: replay or join a duplicate, charge the rate limits, ask for
/// approval or apply a decision, and claim the call in its run and under its idempotency
/// key. When the returned guard does not `proceed`, the call is settled without running and
/// `result` says why; either way, hand the guard to [`after`] once the result is final.
/// While it waits for the store, the call gives its `place` up (see `place.rs`); it may
/// return without one.
///
/// The rate limits (`limiter`) are charged once per execution, where nothing but running the
/// call can answer it: after a replay could have (a replay is not charged), before a call
/// waits for a human (the approved call then runs on that charge), and once a call holds its
/// claims, which a refusal releases.
pub async fn before(
    d: &CallDurable,
    limiter: &dyn RateLimiter,
    job: &mut Job,
    result: &mut CallResult,
    place: &mut Place,
) -> Guarded {
    let mut guarded = Guarded::default();
    if nothing_to_guard(d, &job.tool.spec.policy) {
        guarded.proceed = rate_limit::charge(limiter, job, result).await.is_continue();
        return guarded;
    }
    // Boxed: the guard's future is larger than the rest of a call's together, and most
    // calls never need it.
    guarded.proceed = Box::pin(guard(d, limiter, job, result, &mut guarded, place)).await;
    guarded
}

/// Whether steps 7 and 8 have nothing to do for a call under `policy`: no idempotency key
/// to claim or replay, no approval that may be asked for or applied, no run to claim it in.
fn nothing_to_guard(d: &CallDurable, policy: &Policy) -> bool {
    policy.idempotency.mode == IdempotencyMode::Off
        && !d.claims
        && d.approved.is_none()
        && !approval::may_require(policy, &d.shared.rules, d.shared.predicate.is_some())
}

async fn guard(
    d: &CallDurable,
    limiter: &dyn RateLimiter,
    job: &mut Job,
    result: &mut CallResult,
    guarded: &mut Guarded,
    place: &mut Place,
) -> bool {
    let store = d.shared.store.as_ref();
    let tool = job.tool.clone();
    let policy = &tool.spec.policy;

    let caller = job.caller.clone();
    let key = idempotency::key_for(
        policy,
        &tool.spec.name,
        &caller,
        &job.arguments,
        d.idempotency_key.as_deref(),
    );
    let idempotent = match key {
        Ok(k) => k.map(|k| (k, hash_value(&job.arguments))),
        Err(e) => {
            result.envelope = Envelope::Error(e);
            return false;
        }
    };
    if idempotent.is_some() || d.claims {
        place.step_out();
    }
    // A replay needs no approval, so a call that may need one first looks for a finished
    // record. One that cannot goes straight to its claim, which reads the record only when
    // the key is taken: a new call (most are) then waits for one answer of the store, not two.
    let mut peeked = idempotency::Peeked::Nothing;
    let may_ask = d.approved.is_some()
        || approval::may_require(policy, &d.shared.rules, d.shared.predicate.is_some());
    if let Some((k, fingerprint)) = idempotent.as_ref().filter(|_| may_ask) {
        match idempotency::peek(store, k, fingerprint, result).await {
            Ok(idempotency::Peeked::Settled) => return false,
            Ok(seen) => peeked = seen,
            Err(e) => {
                refuse(result, e);
                return false;
            }
        }
    }

    // Step 8: approval. A decided call arrives here with the approved arguments gone
    // through every earlier step again (see `approved_input`); the decision covers it only
    // if they came out as approved under the same spec, else it is asked again.
    let mut reask = None;
    if let Some(rec) = &d.approved {
        match decision::still_covers(rec, &tool.spec, &job.arguments) {
            Ok(()) => result.approval = Some(Box::new(rec.info())),
            Err(why) => reask = Some(why),
        }
    }
    if d.approved.is_none() || reask.is_some() {
        let (needed, why) = match reask {
            Some(why) => (true, Some(why)),
            None => {
                if approval::asks_the_app(policy, d.shared.predicate.is_some()) {
                    place.step_in().await;
                }
                approval::needs_approval(
                    policy,
                    &d.shared.rules,
                    d.shared.predicate.as_ref(),
                    || ApprovalQuery {
                        tool: tool.spec.name.clone(),
                        arguments: job.arguments.clone(),
                        caller: caller.clone(),
                        risk: policy.risk,
                    },
                    job.host.clone(),
                )
                .await
            }
        };
        let preferred = if needed && d.approved.is_none() {
            Preference::find(store, &caller, &tool.spec.name, &job.arguments).await
        } else {
            Ok(None)
        };
        if needed {
            match preferred {
                Ok(Some(pref)) => {
                    result.approval = Some(Box::new(ApprovalInfo {
                        id: None,
                        status: ApprovalStatus::Approved,
                        arguments_hash: hash_value(&job.arguments),
                        risk: policy.risk,
                        requested_by: caller.principal.clone(),
                        expires_at_ms: None,
                        decided_by: Some(pref.principal.clone()),
                        decided_at_ms: Some(pref.created_at_ms),
                        reason: Some(format!(
                            "allowed without asking by {}'s preference {} (always allow {})",
                            pref.principal, pref.id, pref.tool
                        )),
                        preference_id: Some(pref.id),
                    }));
                }
                Ok(None) => {
                    // The call holds its place in the budget while a human decides: the
                    // approved call runs on this charge. A decision re-asked is not charged again.
                    if d.approved.is_none()
                        && rate_limit::charge(limiter, job, result).await.is_break()
                    {
                        return false;
                    }
                    match approval::request(
                        store,
                        &tool.spec,
                        &d.run_id,
                        &job.id,
                        &job.arguments,
                        &caller,
                    )
                    .await
                    {
                        Ok(rec) => {
                            result.status = CallStatus::PendingApproval;
                            result.envelope = approval::pending_envelope(&rec);
                            let mut info = rec.info();
                            info.reason = why;
                            result.approval = Some(Box::new(info));
                        }
                        Err(e) => store_failure(result, e),
                    }
                    return false;
                }
                Err(e) => {
                    store_failure(result, e);
                    return false;
                }
            }
        }
    }

    // The call will run: claim it in its run (a durable or resumed pass) and claim its key,
    // both at once, so the two writes share one group commit of the store. When the run's
    // claim is refused (an earlier pass finished the call, or was cut off in it), the key's
    // claim is called off: a wait for a duplicate ends, a claim won is released.
    let job: &Job = job;
    if !d.claims && idempotent.is_none() {
        return d.approved.is_some()
            || rate_limit::charge(limiter, job, result).await.is_continue();
    }
    // A token of its own only when there is a key's claim for the run's claim to call off
    // (never the batch's token: a refused claim stops its own call, not the batch).
    let call_off = (d.claims && idempotent.is_some()).then(|| job.cancel.child_token());
    let in_run = async {
        let claimed = match d.claims {
            true => Some(claim_in_run(d, job).await),
            false => None,
        };
        if let (Some(Err(_)), Some(token)) = (&claimed, &call_off) {
            token.cancel();
        }
        claimed
    };
    let by_key = async {
        match &idempotent {
            Some((k, fingerprint)) => Some(
                idempotency::begin(
                    store,
                    &d.shared.wakeups,
                    k,
                    fingerprint,
                    idempotency::lease_ms(policy),
                    policy.idempotency.ttl_ms,
                    call_off.as_ref().unwrap_or(&job.cancel),
                    peeked,
                    result,
                )
                .await,
            ),
            None => None,
        }
    };
    let (in_run, by_key) = tokio::join!(in_run, by_key);
    match in_run {
        Some(Err(not_claimed)) => {
            if let Some(Ok(Outcome::Run(claim))) = by_key {
                // Nobody else can finish this claim; a failure only leaves it to its lease.
                let _ = idempotency::release(store, &d.shared.wakeups, claim).await;
            }
            not_claimed.settle(result);
            return false;
        }
        Some(Ok(claim)) => {
            result.recovered |= claim.recovered;
            guarded.run_call = Some((claim.key, claim.version));
        }
        None => {}
    }
    match by_key {
        Some(Ok(Outcome::Run(claim))) => {
            result.recovered |= claim.recovered;
            guarded.idempotency = Some(claim);
        }
        Some(Ok(Outcome::Settled)) => return false,
        Some(Err(e)) => {
            refuse(result, e);
            return false;
        }
        None => {}
    }
    // The call will run: charged now, unless it was when it asked for its approval. A
    // refusal ends it here, and `after` releases its claims (`rate_limited` is retryable).
    d.approved.is_some() || rate_limit::charge(limiter, job, result).await.is_continue()
}

/// Before step 3 of a call whose approval was decided: its input becomes the approved (or
/// edited) arguments, so they pass every guard again (hidden arguments re-derived from the
/// caller who asked, resolvers, schema, access, the policy hook, rate limits) before step 8
/// lets them run. `Err` when the stored decision no longer matches its hash.
pub fn approved_input(d: &CallDurable, job: &mut Job) -> Result<(), ToolError> {
    if let Some(rec) = &d.approved {
        let place = (&*d.run_id, &*job.id);
        job.arguments =
            decision::approved_input(rec, &job.tool.spec, place, d.shared.seal_key.as_ref())?;
    }
    Ok(())
}

/// A call's claim in its run: the record to finish, and whether it took over from a pass
/// that died in the call.
struct RunClaim {
    key: String,
    version: u64,
    recovered: bool,
}

/// Why a call was not claimed in its run.
enum NotClaimed {
    /// An earlier pass claimed it: its record says how it ended, or that it was cut off.
    Earlier(Box<RunCallRecord>),
    /// The store failed, or another pass took the call over at the same moment.
    Failed(StoreError),
}

impl NotClaimed {
    /// Settles the call's result by it, whatever a concurrent step wrote there before.
    fn settle(self, result: &mut CallResult) {
        result.replayed = false;
        result.detail = None;
        match self {
            NotClaimed::Earlier(rec) => rec.settle(result),
            NotClaimed::Failed(e) => store_failure(result, e),
        }
    }
}

/// Claims the call in its run before its effect (a durable or resumed pass). Refused when
/// it must not run: an earlier pass finished it (its result), or was cut off in it and the
/// tool's effect class forbids running it again. Made after the approval step and the
/// idempotency replay, so a replayed or pending call costs no claim.
async fn claim_in_run(d: &CallDurable, job: &Job) -> Result<RunClaim, NotClaimed> {
    let store = d.shared.store.as_ref();
    let policy = &job.tool.spec.policy;
    let key = run_call_key(&d.run_id, &job.id);
    let started = RunCallRecord::started();
    let ttl = Some(d.shared.run_ttl_ms);
    let claimed = |version, recovered| RunClaim {
        key: key.clone(),
        version,
        recovered,
    };
    let put = put_as(
        store,
        Namespace::RunCall,
        &key,
        Expect::Absent,
        &started,
        ttl,
    );
    if let Some(v) = put.await.map_err(NotClaimed::Failed)? {
        return Ok(claimed(v, false));
    }
    match get_as::<RunCallRecord>(store, Namespace::RunCall, &key).await {
        // Started by a pass that died before recording a result: a tool that may run again
        // does (with the same idempotency key), under a fresh claim.
        Ok(Some((rec, version)))
            if rec.unfinished() && policy.resolved_effect_class() != EffectClass::AtMostOnce =>
        {
            let again = Expect::Version(version);
            match put_as(store, Namespace::RunCall, &key, again, &started, ttl).await {
                Ok(Some(v)) => Ok(claimed(v, true)),
                Ok(None) => Err(NotClaimed::Failed(StoreError(
                    "another pass claimed the call just now".into(),
                ))),
                Err(e) => Err(NotClaimed::Failed(e)),
            }
        }
        Ok(Some((rec, _))) => Err(NotClaimed::Earlier(Box::new(rec))),
        Ok(None) => Err(NotClaimed::Failed(StoreError(
            "the call's run record vanished".into(),
        ))),
        Err(e) => Err(NotClaimed::Failed(e)),
    }
}

/// Records what the call came to: its idempotency record, and in a resumed run, its
/// finished record (or, when it went pending, frees it for a later resume). A store failure here is kept on the result's detail: the call ran.
/// The call gives its `place` up while it waits.
#[allow(clippy::manual_async_fn)] // an `async fn` would hold `guarded` twice
pub fn after<'a>(
    d: &'a CallDurable,
    guarded: Guarded,
    result: &'a mut CallResult,
    place: &'a mut Place,
) -> impl Future<Output = ()> + Send + 'a {
    async move {
        if guarded.idempotency.is_none() && guarded.run_call.is_none() {
            return;
        }
        // Boxed, like the guard: inline, it made every call's future larger.
        Box::pin(record(d, guarded, result, place)).await
    }
}

/// [`after`] for a call with records to write.
async fn record(d: &CallDurable, mut guarded: Guarded, result: &mut CallResult, place: &mut Place) {
    place.step_out();
    let store = d.shared.store.as_ref();
    let done = &*result;
    // Both records in one group commit of the store: neither waits for the other.
    let idempotency = async {
        match guarded.idempotency.take() {
            Some(claim) => idempotency::finish(store, &d.shared.wakeups, claim, done).await,
            None => Ok(()),
        }
    };
    let run_call = async {
        let Some((key, version)) = guarded.run_call.take() else {
            return Ok(());
        };
        // A job's acceptance is final for its handler: a resume settles it, never reruns it.
        if matches!(done.status, CallStatus::Done | CallStatus::PendingJob) {
            let rec = RunCallRecord::finished(done.clone());
            put_as(
                store,
                Namespace::RunCall,
                &key,
                Expect::Version(version),
                &rec,
                Some(d.shared.run_ttl_ms),
            )
            .await
            .map(|_| ())
        } else {
            let _ = store.delete(Namespace::RunCall, &key, version).await;
            Ok(())
        }
    };
    let (idempotency, run_call) = tokio::join!(idempotency, run_call);
    for outcome in [idempotency, run_call] {
        if let Err(e) = outcome {
            note(result, e);
        }
    }
}

fn note(result: &mut CallResult, e: StoreError) {
    let line = format!(
        "the state store did not record this call's outcome: {}",
        e.0
    );
    result.detail = Some(match result.detail.take() {
        Some(d) => format!("{d}\n{line}"),
        None => line,
    });
}
