//! Suspend and resume. A batch whose calls wait for approvals or client results is a run,
//! persisted in the state store under an id (`persist`). [`Engine::resume`](crate::Engine::resume) continues it in this
//! process or any other that opens the same store: finished calls keep their stored
//! results, decided approvals and submitted results settle their calls, and the calls that
//! waited on them run.
//!
//! With a store the app gave, a run is written before its first call starts (`start`),
//! under a lease its pass renews (`lease.rs`), and each call is claimed in the store before
//! it starts and finished there with its result. So a pass cut off by a crash — the first
//! one too — is resumable by any process once its lease lapses: calls that never started
//! run, finished ones keep their result, and one that started and never finished is decided
//! by its tool's effect class (`durable/mod.rs`).

use super::approval::{self, ApprovalRecord};
use super::lease::{self, Lease};
use super::run_record::{call_step, step};
use super::store::{Expect, Namespace, StateStore, StoreError, get_as, put_as};
use super::{CallDurable, Durable, external, rollback};
use crate::batch::{BatchOptions, BatchResult};
use crate::call::{ApprovalStatus, Call, CallResult, CallStatus};
use crate::caller::Caller;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::registry::Snapshot;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde_json::Value;
use std::sync::Arc;

pub use super::run_record::{RunCallRecord, RunLease, RunRecord, RunState, RunStep, run_call_key};

/// What a pass knows beyond its calls: its run, and what earlier passes settled.
#[derive(Clone)]
pub(crate) struct Pass {
    pub shared: Arc<Durable>,
    pub run_id: Arc<str>,
    /// Calls are claimed in the store before they start (see `CallDurable::claims`).
    pub claims: bool,
    earlier: Arc<Earlier>,
    /// The app's idempotency keys by call id; `None` when no call has one.
    keys: Option<Arc<HashMap<String, String>>>,
}

/// What earlier passes of a run settled, and what was decided since: nothing for a new batch,
/// whose passes all share one empty value rather than allocate three maps each.
#[derive(Default)]
struct Earlier {
    settled: HashMap<String, CallResult>,
    /// Of `settled`, the calls whose outcome is new in this pass (a decision or a client
    /// result arrived): they are audited and recorded; the rest were already.
    changed: HashSet<String>,
    approved: HashMap<String, ApprovalRecord>,
}

/// The [`Earlier`] of every first pass.
static NOTHING_EARLIER: std::sync::LazyLock<Arc<Earlier>> =
    std::sync::LazyLock::new(|| Arc::new(Earlier::default()));

impl Pass {
    fn new(shared: Arc<Durable>, run_id: Arc<str>, calls: &[Call], claims: bool) -> Self {
        // Looked over first: even an empty map costs a one-call batch ~1% (its hasher's seed).
        let keys = calls.iter().any(|c| c.idempotency_key.is_some()).then(|| {
            let keys = calls
                .iter()
                .filter_map(|c| Some((c.id.clone(), c.idempotency_key.clone()?)));
            Arc::new(keys.collect())
        });
        Pass {
            shared,
            run_id,
            claims,
            earlier: NOTHING_EARLIER.clone(),
            keys,
        }
    }

    /// A pass for a new batch.
    pub fn fresh(durable: &Arc<Durable>, calls: &[Call]) -> Self {
        // Written into the buffer the uuid's hex goes to, not `format!`ted (the formatting
        // machinery cost 2% of a one-call batch), and copied once, into the `Arc`.
        let mut text = [0u8; 4 + uuid::fmt::Simple::LENGTH];
        text[..4].copy_from_slice(b"run_");
        crate::random_id::uuid()
            .simple()
            .encode_lower(&mut text[4..]);
        let id = std::str::from_utf8(&text).expect("`run_` and hex digits");
        Pass::new(durable.clone(), Arc::from(id), calls, false)
    }

    /// The result an earlier pass settled for this call.
    pub fn settled(&self, call_id: &str) -> Option<CallResult> {
        self.earlier.settled.get(call_id).cloned()
    }

    /// Whether the call's result was settled and recorded by an earlier pass, so this pass
    /// neither audits nor records it again.
    pub fn carried_over(&self, call_id: &str) -> bool {
        self.earlier.settled.contains_key(call_id) && !self.earlier.changed.contains(call_id)
    }

    /// The durable side of a call about to run.
    pub fn call(&self, call_id: &str) -> CallDurable {
        CallDurable {
            shared: self.shared.clone(),
            run_id: self.run_id.clone(),
            idempotency_key: self.keys.as_ref().and_then(|k| k.get(call_id).cloned()),
            approved: self.earlier.approved.get(call_id).cloned().map(Box::new),
            claims: self.claims,
        }
    }
}

/// The token a pass's lease fires when another process took the run over: the batch's own
/// (a child of the app's, so the app's is never cancelled by it). Only a durable pass holds a
/// lease; the others keep the app's token, or get one that the batch then shares (not a
/// second made only to be dropped).
pub(crate) fn batch_token(
    options: &mut BatchOptions,
    durable: bool,
) -> tokio_util::sync::CancellationToken {
    if !durable {
        return options.cancel.get_or_insert_with(Default::default).clone();
    }
    let token = options
        .cancel
        .as_ref()
        .map(|c| c.child_token())
        .unwrap_or_default();
    options.cancel = Some(token.clone());
    token
}

/// Gives every call an id, as planning would, so stored calls and results line up.
pub(crate) fn number_calls(calls: &mut [Call]) {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{i}");
        }
    }
}

fn refusal(code: ErrorCode, reason: &str, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message).with("reason", reason)
}

fn store_refusal(e: StoreError) -> ToolError {
    e.refusal()
}

/// Where [`begin_resume`] leaves a run.
pub(crate) enum Resumed {
    /// The run had already finished: its stored results.
    Finished(BatchResult),
    /// The run is claimed for this pass: drive its calls with `pass`, then [`persist`] with
    /// `prior`.
    Claimed {
        /// The run as stored, lease taken.
        record: Box<RunRecord>,
        /// The record's version after the claim.
        version: u64,
        /// What earlier passes settled and what was decided since.
        pass: Pass,
        /// This process's lease on the run, released after [`persist`].
        lease: Lease,
    },
}

/// A first pass as it starts: for a durable run (the app gave a store), the run as written
/// before any call starts and this process's lease on it.
pub(crate) struct Started {
    /// The pass.
    pub pass: Pass,
    /// The run as written, and its version, for [`persist`].
    /// Boxed: a record is 500 bytes, and every batch's future carries this field.
    pub prior: Option<Box<(RunRecord, u64)>>,
    /// The lease, released after [`persist`].
    pub lease: Option<Lease>,
}

/// Starts the first pass of a batch. With a store the app gave, the run is written first
/// (state `running`) under a lease renewed until the pass ends, and calls are claimed as
/// they start, so a crash anywhere leaves a resumable run. `cancel` is the batch's token,
/// fired when the lease is lost. A store that fails here leaves the pass as without one (the
/// run is written at its end, if it can be).
pub(crate) async fn start(
    durable: &Arc<Durable>,
    calls: &[Call],
    caller: &Caller,
    options: &BatchOptions,
    cancel: &tokio_util::sync::CancellationToken,
) -> Started {
    let mut pass = Pass::fresh(durable, calls);
    if !durable.explicit_store {
        return Started {
            pass,
            prior: None,
            lease: None,
        };
    }
    // Boxed: inline, this path of apps with a store made every batch's future larger.
    let written = Box::pin(async {
        let record = RunRecord::first_pass(
            &pass.run_id,
            caller.clone(),
            calls.to_vec(),
            options.clone(),
        );
        // The lease and the record in one group commit of the store.
        let (lease, version) = tokio::join!(
            lease::acquire(durable, &pass.run_id, cancel.clone()),
            put_as(
                durable.store.as_ref(),
                Namespace::Run,
                &record.id,
                Expect::Absent,
                &record,
                Some(durable.run_ttl_ms),
            )
        );
        let lease = lease?.ok_or_else(|| StoreError("a fresh run id was already leased".into()))?;
        let version =
            version?.ok_or_else(|| StoreError("a fresh run id was already taken".into()))?;
        Ok::<_, StoreError>((record, version, lease))
    })
    .await;
    match written {
        Ok((record, version, lease)) => {
            pass.claims = true;
            Started {
                pass,
                prior: Some(Box::new((record, version))),
                lease: Some(lease),
            }
        }
        Err(e) => {
            tracing::error!(run_id = %pass.run_id, error = %e.0, "tooljig: the run could not be written before it started; it is written when it ends");
            Started {
                pass,
                prior: None,
                lease: None,
            }
        }
    }
}

/// Claims a suspended run for a new pass: refused when the run is unknown (or expired) or
/// another process is resuming it. Decided approvals and submitted client results are read
/// here, so the pass knows which calls settle, which run with approved arguments, and which
/// still wait.
pub(crate) async fn begin_resume(
    durable: &Arc<Durable>,
    run_id: &str,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Resumed, ToolError> {
    let store = durable.store.as_ref();
    let Some((record, version)) = get_as::<RunRecord>(store, Namespace::Run, run_id)
        .await
        .map_err(store_refusal)?
    else {
        return Err(refusal(
            ErrorCode::NotFound,
            "unknown_run",
            format!("there is no run {run_id:?} (or it expired)"),
        ));
    };
    if record.state == RunState::Finished {
        return Ok(Resumed::Finished(BatchResult {
            results: record.results,
            duration_us: 0,
            run_id: Some(record.id),
            rollback: None,
        }));
    }
    let busy = || {
        refusal(
            ErrorCode::Conflict,
            "run_busy",
            format!("run {run_id} is being run by another process right now"),
        )
    };
    let Some(lease) = lease::acquire(durable, run_id, cancel.clone())
        .await
        .map_err(store_refusal)?
    else {
        return Err(busy());
    };
    // Read again under the lease: the holder before may have finished it meanwhile.
    let (mut record, version) = match get_as::<RunRecord>(store, Namespace::Run, run_id).await {
        Ok(Some(found)) if found.1 != version => found,
        Ok(_) => (record, version),
        Err(e) => {
            lease.release().await;
            return Err(store_refusal(e));
        }
    };
    if record.state == RunState::Finished {
        lease.release().await;
        return Ok(Resumed::Finished(BatchResult {
            results: record.results,
            duration_us: 0,
            run_id: Some(record.id),
            rollback: None,
        }));
    }
    // Asked to stop while suspended: this pass starts stopped, so every call that has no
    // result yet ends `cancelled` and the run finishes.
    let stop = match super::cancel::requested(store, run_id).await {
        Ok(asked) => asked.is_some(),
        Err(e) => {
            lease.release().await;
            return Err(store_refusal(e));
        }
    };
    if stop {
        cancel.cancel();
    }
    record.resuming = None;
    record.passes += 1;
    let pass_no = record.passes;
    record
        .steps
        .push(step(pass_no, "resumed", None, Value::Null));
    let claimed = put_as(
        store,
        Namespace::Run,
        run_id,
        Expect::Version(version),
        &record,
        Some(durable.run_ttl_ms),
    )
    .await;
    let version = match claimed {
        Ok(Some(v)) => v,
        Ok(None) => {
            lease.release().await;
            return Err(busy());
        }
        Err(e) => {
            lease.release().await;
            return Err(store_refusal(e));
        }
    };

    let mut settled = HashMap::new();
    let mut changed = HashSet::new();
    let mut approved = HashMap::new();
    for r in &record.results {
        if stop && r.status != CallStatus::Done {
            // Whatever it waited for (a decision, a client result), it will not run now.
            let why = "the run was cancelled before this call ran";
            let r = ended_unrun(r, ErrorCode::Cancelled, why);
            changed.insert(r.call_id.clone());
            settled.insert(r.call_id.clone(), r);
            continue;
        }
        match r.status {
            CallStatus::Done => {
                settled.insert(r.call_id.clone(), r.clone());
            }
            CallStatus::Waiting => {}
            CallStatus::PendingApproval => {
                let id = r.approval.as_ref().and_then(|a| a.id.clone());
                let found = match &id {
                    Some(id) => approval::load(store, id).await.map_err(store_refusal)?,
                    None => None,
                };
                match found {
                    Some((rec, _))
                        if matches!(
                            rec.status,
                            ApprovalStatus::Approved | ApprovalStatus::Edited
                        ) =>
                    {
                        approved.insert(r.call_id.clone(), rec);
                    }
                    Some((rec, _)) => {
                        let mut r = r.clone();
                        r.approval = Some(Box::new(rec.info()));
                        if let Some(env) = rec.refusal() {
                            r.status = CallStatus::Done;
                            r.envelope = env;
                            changed.insert(r.call_id.clone());
                        }
                        settled.insert(r.call_id.clone(), r);
                    }
                    None => {
                        let why =
                            "the approval request of this call is gone (expired); it did not run";
                        let r = ended_unrun(r, ErrorCode::ApprovalExpired, why);
                        changed.insert(r.call_id.clone());
                        settled.insert(r.call_id.clone(), r);
                    }
                }
            }
            CallStatus::PendingExternal | CallStatus::PendingJob => {
                let r = external::settle(store, run_id, r.clone())
                    .await
                    .map_err(store_refusal)?;
                if r.status == CallStatus::Done {
                    changed.insert(r.call_id.clone());
                }
                settled.insert(r.call_id.clone(), r);
            }
        }
    }
    let pass = Pass {
        earlier: Arc::new(Earlier {
            settled,
            changed,
            approved,
        }),
        ..Pass::new(durable.clone(), Arc::from(run_id), &record.calls, true)
    };
    Ok(Resumed::Claimed {
        record: Box::new(record),
        version,
        pass,
        lease,
    })
}

/// A call's stored result, ended without running: `code`, and why.
fn ended_unrun(r: &CallResult, code: ErrorCode, why: &str) -> CallResult {
    let mut r = r.clone();
    r.status = CallStatus::Done;
    r.envelope = Envelope::error(code, why);
    r
}

/// A run as stored: its calls, latest results, steps and compensations.
pub async fn get(store: &dyn StateStore, run_id: &str) -> Result<Option<RunRecord>, ToolError> {
    get_as::<RunRecord>(store, Namespace::Run, run_id)
        .await
        .map(|r| r.map(|(rec, _)| rec))
        .map_err(store_refusal)
}

/// The stored runs, newest first, at most `limit`, of the first 100,000 stored (a run record
/// that no longer reads is skipped: listing is for operators, who can open the rest by id).
pub async fn list(store: &dyn StateStore, limit: usize) -> Result<Vec<RunRecord>, ToolError> {
    // Keys are random ids, so every run is read (up to a bound) and the newest kept.
    let rows = store
        .list(Namespace::Run, "", 100_000)
        .await
        .map_err(store_refusal)?;
    let mut runs: Vec<RunRecord> = rows
        .into_iter()
        .filter_map(|(_, row)| serde_json::from_value(row.value).ok())
        .collect();
    runs.sort_by_key(|r| std::cmp::Reverse(r.created_at_ms));
    runs.truncate(limit);
    Ok(runs)
}

/// After the first pass of a batch: see [`persist`], then the lease is given up. A store
/// failure leaves the results as they are, without a run id (the run cannot be resumed),
/// and is logged.
pub(crate) async fn finish_pass(
    tools: &Snapshot,
    started: Started,
    kept: (Vec<Call>, Arc<Caller>, BatchOptions),
    out: BatchResult,
) -> BatchResult {
    let Started { pass, prior, lease } = started;
    let (calls, caller, options) = kept;
    let (out, err) = persist(tools, &pass, Some((calls, caller)), &options, out, prior).await;
    if let Some(lease) = lease {
        // The run is final: nobody needs to wait for the lease's removal.
        tokio::spawn(lease.release());
    }
    if let Some(e) = err {
        tracing::error!(run_id = %pass.run_id, error = %e, "tooljig: the run was not persisted");
    }
    out
}

/// After a pass: roll back an atomic batch that failed, and persist the run when it must
/// outlive the call (it suspended, may be rolled back, or the app gave a store). `tools` are
/// the tools the pass ran with (what compensates them).
pub(crate) async fn persist(
    tools: &Snapshot,
    pass: &Pass,
    fresh: Option<(Vec<Call>, Arc<Caller>)>,
    options: &BatchOptions,
    out: BatchResult,
    prior: Option<Box<(RunRecord, u64)>>,
) -> (BatchResult, Option<ToolError>) {
    let durable = pass.shared.as_ref();
    // Over the results themselves: looking each id up in `out` was quadratic in the batch.
    let compensable = out.results.iter().any(|r| {
        r.status == CallStatus::Done
            && r.envelope.is_ok()
            && !r.replayed
            && !pass.carried_over(&r.call_id)
            && tools
                .get(&r.tool)
                .is_some_and(|t| rollback::has_compensation(durable, &t.spec))
    });
    let pending = out.results.iter().any(|r| r.status != CallStatus::Done);
    // A run nobody will read again is not built: the record clones every result.
    if !(durable.explicit_store || pending || compensable || options.atomic || prior.is_some()) {
        return (out, None);
    }
    // Boxed: inline, this rare path made every batch's future kilobytes larger, and a
    // future is copied whole each time it moves.
    Box::pin(record_run(tools, pass, fresh, options, out, prior, pending)).await
}

/// [`persist`] once it knows the run must be recorded: builds the record (or adds this pass
/// to the one read back), rolls back a failed atomic batch, and writes the record.
async fn record_run(
    tools: &Snapshot,
    pass: &Pass,
    fresh: Option<(Vec<Call>, Arc<Caller>)>,
    options: &BatchOptions,
    mut out: BatchResult,
    prior: Option<Box<(RunRecord, u64)>>,
    pending: bool,
) -> (BatchResult, Option<ToolError>) {
    let durable = pass.shared.as_ref();
    let mut ran: Vec<&CallResult> = out
        .results
        .iter()
        .filter(|r| !pass.carried_over(&r.call_id))
        .collect();
    ran.sort_by_key(|r| r.finished_us);
    let newly_completed: Vec<String> = ran
        .iter()
        .filter(|r| r.status == CallStatus::Done && r.envelope.is_ok() && !r.replayed)
        .map(|r| r.call_id.clone())
        .collect();
    let failed = out
        .results
        .iter()
        .any(|r| r.status == CallStatus::Done && !r.envelope.is_ok());
    let (mut record, expect) = match prior.map(|p| *p) {
        Some((rec, version)) => (rec, Expect::Version(version)),
        None => {
            let (calls, caller) = fresh.unwrap_or_default();
            (
                RunRecord::first_pass(
                    &pass.run_id,
                    Arc::unwrap_or_clone(caller),
                    calls,
                    options.clone(),
                ),
                Expect::Absent,
            )
        }
    };
    let pass_no = record.passes;
    for r in &ran {
        record.steps.push(call_step(pass_no, r));
    }
    record.completed.extend(newly_completed);
    record.results = out.results.clone();
    record.resuming = None;

    if options.atomic && failed {
        let report =
            rollback::compensate(durable, tools, &mut record, None, options.host.clone()).await;
        out.rollback = Some(report);
    }
    record.state = if pending {
        RunState::Suspended
    } else {
        RunState::Finished
    };
    record.steps.push(step(
        pass_no,
        if pending { "suspended" } else { "finished" },
        None,
        Value::Null,
    ));
    // Recorded: the reasons `persist` came here for are the reasons to keep the run.
    let wrote = put_as(
        durable.store.as_ref(),
        Namespace::Run,
        &record.id,
        expect,
        &record,
        Some(durable.run_ttl_ms),
    )
    .await;
    match wrote {
        Ok(Some(_)) => out.run_id = Some(record.id),
        Ok(None) => {
            let e = refusal(
                ErrorCode::Conflict,
                "run_busy",
                format!(
                    "run {} was changed by another process during this pass",
                    record.id
                ),
            );
            return (out, Some(e));
        }
        Err(e) => return (out, Some(store_refusal(e))),
    }
    (out, None)
}
