//! The executor's part of a step: the model's calls run as one engine batch with every
//! guardrail, their results streamed as they finish, then filed in the conversation, or the
//! run suspended on pending calls, or a question asked for `needs`.

use super::context::Ctx;
use super::limits::BatchLimits;
use super::outcome::RunOutcome;
use super::result_events::{emit_result, result_events};
use super::runner::Agent;
use super::state::SuspendedBatch;
use super::suspension::{needs_calls, pending_calls, suspend};
use super::wrap_up;
use crate::call::{CallResult, CallStatus};
use crate::engine::{BatchOptions, BatchResult};
use crate::events::Event;
use crate::providers::json_protocol;
use crate::providers::{Message, ModelTurn, ToolResult};
use crate::stream::StreamEvent;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

impl Agent {
    /// After a batch: suspend on pending calls, ask on `needs`, or go on (`None`).
    pub(super) async fn after_batch(
        &self,
        ctx: &mut Ctx<'_>,
        results: Vec<CallResult>,
        batch: SuspendedBatch,
    ) -> Option<RunOutcome> {
        let pending = pending_calls(&results);
        let needs = needs_calls(&results);
        if !pending.is_empty() {
            return Some(suspend(ctx, results, batch, pending, needs));
        }
        ctx.state.suspended = None;
        ctx.state.held_results.clear();
        ctx.state.messages.push(if batch.json_protocol {
            Message::user(json_protocol::format_results(&results))
        } else {
            Message::Tool {
                results: results.iter().map(ToolResult::from_result).collect(),
            }
        });
        if !needs.is_empty() {
            return Some(wrap_up::ask(self, ctx, needs).await);
        }
        None
    }

    /// Runs the turn's calls; returns every result in the model's order, and the engine's
    /// run id when it persisted the batch.
    pub(super) async fn execute(
        &self,
        ctx: &mut Ctx<'_>,
        turn: &ModelTurn,
    ) -> (Vec<CallResult>, Option<String>) {
        let (mut calls, refused) = turn.into_batch();
        for (call, tc) in calls
            .iter_mut()
            .zip(turn.tool_calls.iter().filter(|c| !c.incomplete))
        {
            // The same every time this call is run (a retry, a resume, a reloaded state):
            // the conversation's run id and the call's id, unique within it (`unique_ids`).
            call.idempotency_key = Some(call_key(&ctx.state.run_id, &call.id));
            // JSON-protocol calls carry their dependencies in the turn's provider data.
            if let Some(deps) = tc.provider_data.as_ref().and_then(|d| d.get("depends_on")) {
                call.depends_on = serde_json::from_value(deps.clone()).unwrap_or_default();
            }
        }
        let BatchLimits {
            max_calls,
            deadline_ms,
        } = self.batch_limits(ctx);
        ctx.state.turn_tool_calls += calls.len().min(max_calls) + refused.len();
        for r in &refused {
            ctx.state.counters.count_result(r);
            emit_result(ctx, r);
        }
        let started = Instant::now();
        let batch = if calls.is_empty() {
            BatchResult {
                results: Vec::new(),
                duration_us: 0,
                run_id: None,
                rollback: None,
            }
        } else {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
            let options = BatchOptions {
                concurrency: self.options.concurrency,
                deadline_ms,
                max_calls: Some(max_calls),
                events: Some(tx),
                host: self.host.clone(),
                atomic: self.options.atomic,
                ..Default::default()
            };
            let run = self.engine.run(calls, ctx.caller.clone(), options);
            let sink = ctx.sink.clone();
            let forward = async move {
                let mut shown = HashSet::new();
                while let Some(e) = rx.recv().await {
                    match e {
                        Event::CallFinished { result, .. } => {
                            if let Some(tx) = &sink {
                                for ev in result_events(&result) {
                                    let _ = tx.send(ev);
                                }
                            }
                            shown.insert(result.call_id.clone());
                        }
                        Event::CallProgress {
                            call_id,
                            tool,
                            fraction,
                            message,
                            output,
                            ..
                        } => {
                            if let Some(tx) = &sink {
                                let _ = tx.send(StreamEvent::ToolProgress {
                                    call_id,
                                    tool,
                                    fraction,
                                    message,
                                    output,
                                });
                            }
                        }
                        _ => {}
                    }
                }
                shown
            };
            let (batch, shown) = tokio::join!(run, forward);
            for r in batch.results.iter().filter(|r| !shown.contains(&r.call_id)) {
                emit_result(ctx, r);
            }
            batch
        };
        ctx.state.counters.tools_ms += started.elapsed().as_millis() as u64;
        for r in batch
            .results
            .iter()
            .filter(|r| r.status == CallStatus::Done)
        {
            ctx.state.counters.count_result(r);
        }
        let mut by_id: HashMap<String, CallResult> = batch
            .results
            .into_iter()
            .chain(refused)
            .map(|r| (r.call_id.clone(), r))
            .collect();
        let ordered = turn
            .tool_calls
            .iter()
            .filter_map(|c| by_id.remove(&c.id))
            .collect();
        (ordered, batch.run_id)
    }
}

/// The idempotency key the loop gives a model's call: tools keyed on the app's key
/// (`idempotency: {mode: "key"}`) run once per call of the conversation, and a handler's
/// `ctx.idempotency_key` is the same in every pass and process that runs it.
pub fn call_key(run_id: &str, call_id: &str) -> String {
    format!("{run_id}/{call_id}")
}
