//! The durable runs' side of an engine the app talks to (docs/durable-runs.md): decisions on
//! approvals, learned preferences, client-side results, resuming and rolling back runs. Each
//! method hands its `durable/` function the store and the tools it needs.

use super::Engine;
use super::batch::Batch;
use crate::batch::{BatchOptions, BatchResult, RollbackReport};
use crate::caller::Caller;
use crate::durable::approval::{self, ApprovalRecord, Decision};
use crate::durable::background_job::{self, JobStatus};
use crate::durable::external::{self, ExternalCall};
use crate::durable::preference::{self, Preference, Remember};
use crate::durable::rollback;
use crate::durable::run::{self, Resumed, RunRecord};
use crate::durable::store::StateStore;
use crate::envelope::{Envelope, ToolError};
use crate::guard::audit::{AuditEntry, AuditRecord};
use crate::handler::{Handler, HostData};
use serde_json::{Map, Value};
use std::sync::Arc;

impl Engine {
    /// The state store.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.durable.store
    }

    /// Records a human decision on a pending approval request. Refused (with a
    /// [`ToolError`] whose `reason` detail names why) when the request is unknown, already
    /// decided (a replayed decision), expired, bound to other arguments than the decision
    /// names, decided by a caller not allowed to, or edited into invalid arguments.
    /// Continue the run with [`Engine::resume`].
    pub async fn decide(
        &self,
        approval_id: &str,
        decision: Decision,
        approver: &Caller,
    ) -> Result<ApprovalRecord, ToolError> {
        let tools = self.registry.snapshot();
        let record = approval::decide(
            self.durable.store.as_ref(),
            &tools,
            self.durable.seal_key.as_ref(),
            approval_id,
            decision,
            approver,
        )
        .await?;
        // Whoever waits for the run's decisions, here or in another process.
        self.durable
            .wakeups
            .wake(crate::durable::wakeup::decided_topic(&record.run_id));
        Ok(record)
    }

    /// Waits up to `timeout` until none of run `run_id`'s approval requests awaits a
    /// decision (each decided, from any process sharing the store, or expired): `true` once
    /// none does, `false` when the time ran out. Woken by the decision itself through the
    /// store's wake bus, so an agent suspended on approvals resumes as soon as the inbox
    /// decides; then [`Engine::resume`] the run. See `durable/decided.rs`.
    pub async fn wait_for_decisions(
        &self,
        run_id: &str,
        timeout: std::time::Duration,
    ) -> Result<bool, ToolError> {
        crate::durable::decided::wait(
            self.durable.store.as_ref(),
            &self.durable.wakeups,
            run_id,
            timeout,
        )
        .await
    }

    /// Approves a pending request as asked: [`Engine::decide`] with [`Decision::Approve`].
    /// `remember` also allows later calls of the tool for the asking principal.
    pub async fn approve(
        &self,
        approval_id: &str,
        arguments_hash: &str,
        approver: &Caller,
        remember: Option<Remember>,
    ) -> Result<ApprovalRecord, ToolError> {
        let decision = Decision::Approve {
            arguments_hash: arguments_hash.into(),
            remember,
        };
        self.decide(approval_id, decision, approver).await
    }

    /// Rejects a pending request; the model sees `message`: [`Decision::Reject`].
    pub async fn reject(
        &self,
        approval_id: &str,
        arguments_hash: &str,
        approver: &Caller,
        message: Option<String>,
    ) -> Result<ApprovalRecord, ToolError> {
        let decision = Decision::Reject {
            arguments_hash: arguments_hash.into(),
            message,
        };
        self.decide(approval_id, decision, approver).await
    }

    /// Approves a pending request with other arguments, which are checked again and run
    /// exactly: [`Decision::Edit`].
    pub async fn edit(
        &self,
        approval_id: &str,
        arguments_hash: &str,
        approver: &Caller,
        arguments: Value,
    ) -> Result<ApprovalRecord, ToolError> {
        let decision = Decision::Edit {
            arguments_hash: arguments_hash.into(),
            arguments,
        };
        self.decide(approval_id, decision, approver).await
    }

    /// The approval inbox: pending requests, oldest first (of `tenant` when given). The same
    /// as [`Engine::pending_approvals`], under the name every binding uses.
    pub async fn pending(&self, tenant: Option<&str>) -> Result<Vec<ApprovalRecord>, ToolError> {
        self.pending_approvals(tenant).await
    }

    /// One approval request, as stored (expired ones marked so).
    pub async fn approval(&self, approval_id: &str) -> Result<Option<ApprovalRecord>, ToolError> {
        approval::get(self.durable.store.as_ref(), approval_id).await
    }

    /// Pending approval requests, oldest first: the approval inbox. `tenant` filters by the
    /// asking caller's tenant.
    pub async fn pending_approvals(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<ApprovalRecord>, ToolError> {
        approval::pending(self.durable.store.as_ref(), tenant).await
    }

    /// Decided requests, newest decision first, at most `limit` (of `tenant` when given).
    pub async fn decided_approvals(
        &self,
        tenant: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ApprovalRecord>, ToolError> {
        approval::decided(self.durable.store.as_ref(), tenant, limit).await
    }

    /// Lets `caller` run `tool` without approval from now on, for calls whose top-level
    /// arguments equal `values` (empty: every call).
    pub async fn allow_always(
        &self,
        caller: &Caller,
        tool: &str,
        values: Map<String, Value>,
    ) -> Result<Preference, ToolError> {
        preference::allow_always(self.durable.store.as_ref(), caller, tool, values).await
    }

    /// `caller`'s preferences, every tool.
    pub async fn preferences(&self, caller: &Caller) -> Result<Vec<Preference>, ToolError> {
        preference::list(self.durable.store.as_ref(), caller).await
    }

    /// Every principal's preferences (of `tenant` when given): what an operator reviews.
    pub async fn every_preference(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<Preference>, ToolError> {
        preference::list_every(self.durable.store.as_ref(), tenant).await
    }

    /// Revokes one of `caller`'s preferences; `false` when it has none with that id.
    pub async fn revoke_preference(&self, caller: &Caller, id: &str) -> Result<bool, ToolError> {
        preference::revoke(self.durable.store.as_ref(), caller, id).await
    }

    /// Completes a client-side call of a suspended run with the client's outcome: data
    /// (checked against the tool's output schema and size limit) or an error the model will
    /// see. Returns the envelope as stored; [`Engine::resume`] then continues the run.
    ///
    /// `submitter` is who submits: when the run was started for a principal, only that
    /// principal (in the same tenant) may complete its calls.
    ///
    /// Refused with `not_found` (reason `unknown_call`) when no such call awaits a result,
    /// `permission_denied` (reason `not_the_caller`) when someone else submits,
    /// `conflict` (reason `duplicate` or `late`) when it was already submitted or expired,
    /// and `invalid_output` (reason `invalid_result`) when the data breaks the schema (the
    /// call stays pending; submit a corrected result).
    pub async fn submit_result(
        &self,
        run_id: &str,
        call_id: &str,
        submitter: &Caller,
        outcome: Result<Value, ToolError>,
    ) -> Result<Envelope, ToolError> {
        let tools = self.registry.snapshot();
        external::submit_result(
            self.durable.store.as_ref(),
            &tools,
            run_id,
            call_id,
            submitter,
            outcome,
        )
        .await
    }

    /// Reports how the background job `job` ended (a handler accepted its call with
    /// `HandlerError::accepted(job)`): data, checked against the tool's output schema and size
    /// limit, or an error the model will see. Any process sharing the state store may report;
    /// the job's reference is the key, so hand it only to the app's own workers. Returns the
    /// job as it now stands: [`Engine::resume`] its `run_id` to carry the run on.
    ///
    /// Refused with `not_found` (reason `unknown_job`), `conflict` (reason `duplicate` or
    /// `late`), and `invalid_output` (reason `invalid_result`; the job stays pending).
    pub async fn complete_job(
        &self,
        job: &str,
        outcome: Result<Value, ToolError>,
    ) -> Result<JobStatus, ToolError> {
        let tools = self.registry.snapshot();
        background_job::complete(self.durable.store.as_ref(), &tools, job, outcome).await
    }

    /// Where the background job `job` stands, `None` when no call was accepted under it.
    pub async fn job_status(&self, job: &str) -> Result<Option<JobStatus>, ToolError> {
        background_job::status(self.durable.store.as_ref(), job).await
    }

    /// The client-side calls of a run that still await a result.
    pub async fn pending_external(&self, run_id: &str) -> Result<Vec<ExternalCall>, ToolError> {
        external::pending(self.durable.store.as_ref(), run_id).await
    }

    /// Continues a suspended run: calls whose approval was decided or whose client result
    /// was submitted settle, approved calls run with exactly the approved arguments, and
    /// calls that waited on them run. Finished calls are never run again. Returns every
    /// call's result; the run stays suspended while any call still waits.
    ///
    /// Another process running the run at the same moment is waited for (see
    /// [`Engine::resume_with`]'s `deadline_ms`): one pass runs each call, and both return
    /// its results. Refused when the run is unknown (or expired).
    pub async fn resume(&self, run_id: &str) -> Result<BatchResult, ToolError> {
        self.resume_with(run_id, BatchOptions::default()).await
    }

    /// [`Engine::resume`] with the live options of this pass: `cancel`, `events` and `host`
    /// (a binding's event loop, for its handlers and compensations). The run's stored
    /// options (concurrency, deadline, atomic) still apply; the others given here are ignored.
    pub async fn resume_with(
        &self,
        run_id: &str,
        live: BatchOptions,
    ) -> Result<BatchResult, ToolError> {
        // A pass that took over a crashed one may find decisions made on its predecessor's
        // requests; they settle in the next pass, at once (a few passes at most).
        let mut out = self.resume_pass(run_id, live.clone()).await?;
        for _ in 0..3 {
            let decided = out.results.iter().any(|r| {
                r.status == crate::call::CallStatus::PendingApproval
                    && r.approval
                        .as_ref()
                        .is_some_and(|a| a.status != crate::call::ApprovalStatus::Pending)
            });
            if !decided {
                break;
            }
            out = self.resume_pass(run_id, live.clone()).await?;
        }
        Ok(out)
    }

    /// One pass of [`Engine::resume_with`].
    async fn resume_pass(
        &self,
        run_id: &str,
        live: BatchOptions,
    ) -> Result<BatchResult, ToolError> {
        let mut live = live;
        let cancel = run::batch_token(&mut live, true);
        let (record, version, pass, lease) = match self.claim_run(run_id, &live, &cancel).await? {
            Resumed::Finished(out) => return Ok(out),
            Resumed::Claimed {
                record,
                version,
                pass,
                lease,
            } => (*record, version, pass, lease),
        };
        let mut options = record.options.clone();
        options.cancel = live.cancel;
        options.events = live.events;
        options.progress = live.progress;
        options.host = live.host;
        // The run's own trace when it has one, else the resumer's.
        options.traceparent = options.traceparent.or(live.traceparent);
        let (calls, caller) = (&record.calls, Arc::new(record.caller.clone()));
        let started_by = options.atomic.then(|| caller.clone());
        let tools = self.registry.snapshot();
        let pass_batch =
            |door| Batch::new(self, &tools, calls, &caller, &options, pass.clone(), door).drive();
        // Boxed: only the passes of tools that call tools carry what serving them takes.
        let out = if tools.calling() {
            Box::pin(self.serving(pass_batch)).await
        } else {
            pass_batch(None).await
        };
        let prior = Some(Box::new((record, version)));
        let (out, refused) = run::persist(&tools, &pass, None, &options, out, prior).await;
        lease.release().await;
        if let (Some(report), Some(caller)) = (&out.rollback, &started_by) {
            self.audit_rollback(report, caller, None);
        }
        self.guards.flush().await;
        match refused {
            None => Ok(out),
            Some(e) => Err(e),
        }
    }

    /// Claims a run for a pass, waiting while another process runs it: when that pass ends,
    /// its results are what this resume returns (or, if the run is still suspended, this
    /// pass goes on from them); when that process died, its lease lapses and this pass takes
    /// over. Waits at most the live `deadline_ms` (five minutes without one), or until the
    /// live `cancel` fires; then refused with `run_busy`.
    async fn claim_run(
        &self,
        run_id: &str,
        live: &BatchOptions,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Resumed, ToolError> {
        let patience = std::time::Duration::from_millis(live.deadline_ms.unwrap_or(5 * 60 * 1000));
        let give_up = tokio::time::Instant::now() + patience;
        let mut wait = std::time::Duration::from_millis(20);
        let wakeups = &self.durable.wakeups;
        let topic = crate::durable::wakeup::run_topic(run_id);
        loop {
            // Woken when the pass holding the run lets it go, here or in another process.
            let released = wakeups.watch(&topic);
            let woken = released.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let tried = run::begin_resume(&self.durable, run_id, cancel).await;
            let busy =
                matches!(&tried, Err(e) if e.details.get("reason") == Some(&"run_busy".into()));
            if !busy || tokio::time::Instant::now() >= give_up || cancel.is_cancelled() {
                wakeups.forget(&topic, &released);
                return tried;
            }
            let left = give_up.saturating_duration_since(tokio::time::Instant::now());
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep(wait.min(left)) => {}
                _ = cancel.cancelled() => {}
            }
            wakeups.forget(&topic, &released);
            wait = (wait * 2).min(wakeups.patience());
        }
    }

    /// Asks a run to stop, in whichever process runs it (one that shares this engine's
    /// store): calls not yet started end `cancelled`, running handlers see their context
    /// cancelled, and a suspended run is cancelled by its next resume. The process running
    /// it hears at once through the store's wake-ups (PostgreSQL, Redis), else at its next
    /// lease heartbeat (a third of the lease, 5 s by default). `Ok(false)` when the run had
    /// already finished; refused with `not_found` when there is no such run.
    pub async fn cancel_run(&self, run_id: &str, reason: Option<&str>) -> Result<bool, ToolError> {
        crate::durable::cancel::request(&self.durable, run_id, reason.map(str::to_string)).await
    }

    /// A run as stored: its calls, latest results, steps and compensations.
    pub async fn run_record(&self, run_id: &str) -> Result<Option<RunRecord>, ToolError> {
        run::get(self.durable.store.as_ref(), run_id).await
    }

    /// The stored runs, newest first, at most `limit`: the operator's list.
    pub async fn runs(&self, limit: usize) -> Result<Vec<RunRecord>, ToolError> {
        run::list(self.durable.store.as_ref(), limit).await
    }

    /// Registers a handler that undoes calls of `tool`; it receives
    /// `{"arguments": <the call's arguments>, "result": <its data>}`.
    pub fn compensate_with(&self, tool: impl Into<String>, handler: Arc<dyn Handler>) {
        self.durable.add_compensation(tool.into(), handler);
    }

    /// Undoes the completed calls of a run (or only `call_id`), latest first, and records
    /// what it did in the run. Refused when the run is unknown or the call did not complete
    /// in it.
    pub async fn rollback(
        &self,
        run_id: &str,
        call_id: Option<&str>,
    ) -> Result<RollbackReport, ToolError> {
        self.rollback_with(run_id, call_id, None).await
    }

    /// [`Engine::rollback`], handing `host` to the compensation handlers as
    /// [`ToolContext::host`](crate::ToolContext) (a binding's event loop, as
    /// [`BatchOptions::host`] does for a batch's handlers).
    pub async fn rollback_with(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        host: Option<HostData>,
    ) -> Result<RollbackReport, ToolError> {
        let tools = self.registry.snapshot();
        let report = rollback::rollback(&self.durable, &tools, run_id, call_id, host).await?;
        if self.guards.audits()
            && let Ok(Some(record)) = self.run_record(run_id).await
        {
            self.audit_rollback(&report, &record.caller, None);
            self.guards.flush().await;
        }
        Ok(report)
    }

    /// Hands the audit log what a rollback did, one record per call it undid or could not
    /// (`rolled_back`, `not_reversible`, `rollback_failed`), as `caller` (who started the run)
    /// and, for a batch a handler made, under its `parent` call.
    pub(super) fn audit_rollback(
        &self,
        report: &RollbackReport,
        caller: &Caller,
        parent: Option<&crate::call::ParentCall>,
    ) {
        if !self.guards.audits() {
            return;
        }
        let records = report
            .entries
            .iter()
            .filter_map(|e| AuditRecord::of_rollback(e, caller, &report.run_id))
            .map(|mut r| {
                r.parent = parent.cloned();
                AuditEntry::from(r)
            })
            .collect();
        self.guards.hand_over(records);
    }
}
