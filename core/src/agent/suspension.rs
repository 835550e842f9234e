//! Suspension: a batch with calls waiting for a human or a client ends the turn with its
//! state saved; `resume` picks it up once they are settled, and a new user message first
//! settles what was decided meanwhile, then abandons what still waits. All here, so what is
//! held while suspended is read and written in one place.

use super::context::Ctx;
use super::model::StreamSender;
use super::outcome::RunOutcome;
use super::result_events::emit_result;
use super::runner::Agent;
use super::state::{AgentState, NeedsCall, PendingCall, RunStatus, SuspendedBatch};
use super::wrap_up::{humanize, template_question};
use crate::call::{CallResult, CallStatus};
use crate::caller::Caller;
use crate::engine::BatchOptions;
use crate::envelope::{Envelope, ToolError};
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
        let mut by_id = file_results(&mut ctx, results);
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

    /// Before a new user turn on a suspended run: a decision made meanwhile is never lost.
    /// The engine's run is resumed first, so an approved call runs and a rejected one is
    /// settled as rejected, their results shown and filed; what still waits is then
    /// abandoned (`AgentState::abandon_pending`), and the engine's run cancelled, so that a
    /// decision made later does not run a call the model was told did not happen.
    pub(super) async fn settle_suspended(&self, ctx: &mut Ctx<'_>) {
        let Some(batch) = ctx.state.suspended.clone() else {
            return;
        };
        let Some(run_id) = batch.batch_run_id.as_deref() else {
            return;
        };
        let live = BatchOptions {
            host: self.host.clone(),
            ..Default::default()
        };
        match self.engine.resume_with(run_id, live).await {
            Ok(resumed) => {
                let mut by_id = file_results(ctx, resumed.results);
                ctx.state.held_results = batch
                    .call_ids
                    .iter()
                    .filter_map(|id| by_id.remove(id))
                    .collect();
            }
            Err(e) => {
                tracing::warn!(run_id, error = %e, "a suspended run could not be resumed before a new turn");
            }
        }
        let waiting = ctx
            .state
            .held_results
            .iter()
            .any(|r| r.status != CallStatus::Done);
        if waiting
            && let Err(e) = self
                .engine
                .cancel_run(run_id, Some("the conversation moved on"))
                .await
        {
            tracing::warn!(run_id, error = %e, "a suspended run could not be cancelled");
        }
    }
}

/// Files results the engine settled into the held ones, by call id: a final result replaces
/// a pending one, and is counted and shown once. Returns them all, by call id.
fn file_results(ctx: &mut Ctx<'_>, results: Vec<CallResult>) -> HashMap<String, CallResult> {
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
        emit_result(ctx, r);
    }
    by_id
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

/// The calls of a batch's results that lack information only the user has.
pub(super) fn needs_calls(results: &[CallResult]) -> Vec<NeedsCall> {
    results
        .iter()
        .filter_map(|r| match &r.envelope {
            Envelope::Needs(fields) => Some(NeedsCall {
                call_id: r.call_id.clone(),
                tool: r.tool.clone(),
                fields: fields.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Ends the turn suspended on `pending`, holding the batch's results until they are settled.
/// Calls of the batch that returned `needs` are listed beside them, with one question for
/// what they lack as the answer (the model is asked in its own words once the run goes on).
pub(super) fn suspend(
    ctx: &mut Ctx<'_>,
    results: Vec<CallResult>,
    batch: SuspendedBatch,
    pending: Vec<PendingCall>,
    needs: Vec<NeedsCall>,
) -> RunOutcome {
    ctx.state.held_results = results;
    ctx.state.suspended = Some(batch);
    ctx.state.answer = if needs.is_empty() {
        String::new()
    } else {
        let fields: Vec<String> = needs
            .iter()
            .flat_map(|n| n.fields.iter().map(|f| humanize(f)))
            .collect();
        let question = template_question(&fields);
        ctx.emit(StreamEvent::TextDelta {
            delta: question.clone(),
        });
        question
    };
    ctx.state.status = RunStatus::Suspended { pending, needs };
    ctx.emit(StreamEvent::Finish {
        finish_reason: FinishReason::ToolCalls,
    });
    RunOutcome::of(ctx.state)
}
