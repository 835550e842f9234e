//! Suspension: a batch with calls waiting for a human or a client ends the turn with its
//! state saved; `resume` picks it up once they are settled, and a new user message abandons
//! what still waits. All three here, so what is held while suspended is read and written in
//! one place.

use super::context::Ctx;
use super::model::StreamSender;
use super::outcome::RunOutcome;
use super::result_events::emit_result;
use super::runner::Agent;
use super::state::{AgentState, PendingCall, RunStatus, SuspendedBatch};
use crate::call::{CallResult, CallStatus};
use crate::caller::Caller;
use crate::engine::BatchOptions;
use crate::envelope::ToolError;
use crate::providers::FinishReason;
use crate::stream::StreamEvent;
use std::collections::HashMap;
use std::time::Instant;

impl Agent {
    /// Continues a suspended run once its pending calls are settled through the engine
    /// (`Engine::decide` for approvals, `Engine::submit_result` for client-side tools): the
    /// engine's run is resumed and the loop goes on. Still-pending calls keep it suspended.
    pub async fn resume(
        &self,
        state: &mut AgentState,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> Result<RunOutcome, ToolError> {
        let batch = suspended(state)?;
        let Some(run_id) = batch.batch_run_id.clone() else {
            return Err(ToolError::new(
                crate::error_code::ErrorCode::InvalidRequest,
                "the suspended batch was not persisted by the engine; resume it with `resume_with_results`",
            ));
        };
        let live = BatchOptions {
            host: self.host.clone(),
            ..Default::default()
        };
        let resumed = self.engine.resume_with(&run_id, live).await?;
        Ok(self
            .continue_with(state, batch, resumed.results, caller, events)
            .await)
    }

    /// Continues a suspended run with final results the app obtained itself (a client ran
    /// its tool, a human decided): each replaces the pending call with the same id.
    pub async fn resume_with_results(
        &self,
        state: &mut AgentState,
        results: Vec<CallResult>,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> Result<RunOutcome, ToolError> {
        let batch = suspended(state)?;
        Ok(self
            .continue_with(state, batch, results, caller, events)
            .await)
    }

    /// Files the settled results of the suspended batch and goes on with the loop: what
    /// `resume` and `resume_with_results` share.
    async fn continue_with(
        &self,
        state: &mut AgentState,
        batch: SuspendedBatch,
        results: Vec<CallResult>,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> RunOutcome {
        let start = Instant::now();
        let mode = self.resolve_mode(state, None);
        let mut ctx = self.ctx(state, caller, events, mode, true, start);
        ctx.emit(StreamEvent::Start {
            run_id: ctx.state.run_id.clone(),
        });
        let mut by_id: HashMap<String, CallResult> = ctx
            .state
            .held_results
            .drain(..)
            .map(|r| (r.call_id.clone(), r))
            .collect();
        let mut fresh = Vec::new();
        for r in results {
            let done = r.status == CallStatus::Done;
            let known = by_id
                .get(&r.call_id)
                .is_some_and(|old| old.status == CallStatus::Done);
            if done && !known {
                fresh.push(r.clone());
            }
            if done || !known {
                by_id.insert(r.call_id.clone(), r);
            }
        }
        for r in &fresh {
            ctx.state.counters.count_result(r);
            emit_result(&ctx, r);
        }
        let ordered: Vec<CallResult> = batch
            .call_ids
            .iter()
            .filter_map(|id| by_id.remove(id))
            .collect();
        let out = self.after_batch(&mut ctx, ordered, batch).await;
        let out = match out {
            Some(done) => done,
            None => self.drive(&mut ctx).await,
        };
        ctx.state.finish_timing(start);
        out.with_counters(ctx.state)
    }
}

/// The batch a run is suspended on, or the refusal to resume a run that is not.
fn suspended(state: &AgentState) -> Result<SuspendedBatch, ToolError> {
    state.suspended.clone().ok_or_else(|| {
        ToolError::new(
            crate::error_code::ErrorCode::InvalidRequest,
            "this run is not suspended",
        )
    })
}

/// The calls of a batch's results that still wait for a human or a client.
pub(super) fn pending_calls(results: &[CallResult]) -> Vec<PendingCall> {
    results
        .iter()
        .filter(|r| r.status != CallStatus::Done)
        .map(|r| PendingCall {
            call_id: r.call_id.clone(),
            tool: r.tool.clone(),
            status: r.status,
            arguments: r.arguments.clone().unwrap_or(serde_json::Value::Null),
            approval_id: r.approval.as_ref().and_then(|a| a.id.clone()),
            arguments_hash: r.approval.as_ref().map(|a| a.arguments_hash.clone()),
        })
        .collect()
}

/// Ends the turn suspended on `pending`, holding the batch's results until they are settled.
pub(super) fn suspend(
    ctx: &mut Ctx<'_>,
    results: Vec<CallResult>,
    batch: SuspendedBatch,
    pending: Vec<PendingCall>,
) -> RunOutcome {
    ctx.state.held_results = results;
    ctx.state.suspended = Some(batch);
    ctx.state.status = RunStatus::Suspended { pending };
    ctx.state.answer.clear();
    ctx.emit(StreamEvent::Finish {
        finish_reason: FinishReason::ToolCalls,
    });
    RunOutcome::of(ctx.state)
}
