//! The steps of a turn: which model is asked, with which tools, and what its answer leads
//! to, until it answers in text, asks, suspends, or a limit ends the turn.

use super::context::Ctx;
use super::model::ModelError;
use super::model_call::{Answer, CallSpec, call_model};
use super::options::Mode;
use super::outcome::RunOutcome;
use super::runner::Agent;
use super::state::{StopReason, SuspendedBatch};
use super::wrap_up;
use crate::call::Call;
use crate::providers::json_protocol::JsonProtocol;
use crate::providers::{FinishReason, Message, ModelTurn, ToolCall, ToolChoice};
use crate::stream::StreamEvent;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

impl Agent {
    /// Steps until the turn ends: each step asks a model, runs the batch it asked for, and
    /// goes round again until an answer, a question, a suspension or a limit.
    pub(super) async fn drive(&self, ctx: &mut Ctx<'_>) -> RunOutcome {
        // Only the tools this caller may use, hidden parameters removed.
        let specs = self.offered(ctx).await;
        loop {
            if let Some(reason) = self.limit_reached(ctx) {
                return wrap_up::final_answer(self, ctx, reason, &specs).await;
            }
            ctx.state.turn_steps += 1;
            ctx.state.counters.steps += 1;
            let step = ctx.state.counters.steps;
            ctx.emit(StreamEvent::StepStart { step });
            let planning = !ctx.tools_ran;
            let model = if planning {
                self.planner.clone()
            } else {
                self.answering_model().clone()
            };
            let json = self.json_protocol().cloned();
            // With the JSON protocol the plan is made once; after its results the responder
            // only answers.
            let offer_tools = planning || (self.options.responder_tools && json.is_none());
            let spec = match (&json, offer_tools) {
                (Some(p), true) => CallSpec {
                    tools: Vec::new(),
                    tool_choice: ToolChoice::Auto,
                    system: Some(join(self.options.system.as_deref(), &p.prompt(&specs))),
                    note: None,
                    response_schema: Some(p.response_schema(&specs)),
                    hold_text: true,
                },
                (Some(_), false) => CallSpec {
                    tools: Vec::new(),
                    tool_choice: ToolChoice::None,
                    system: self.options.system.clone(),
                    note: None,
                    response_schema: None,
                    hold_text: false,
                },
                (None, _) => CallSpec {
                    tools: specs.clone(),
                    tool_choice: if offer_tools {
                        ToolChoice::Auto
                    } else {
                        ToolChoice::None
                    },
                    system: self.options.system.clone(),
                    note: None,
                    response_schema: None,
                    hold_text: offer_tools && ctx.mode == Mode::ActFirst && !ctx.tools_ran,
                },
            };
            let json_step = json.is_some() && offer_tools;
            let held = spec.hold_text;
            let answer = match call_model(ctx, &model, spec, &self.options).await {
                Ok(a) => a,
                Err(e) => return self.model_failed(ctx, step, e).await,
            };
            let (calls, plan_ok) = match json.as_ref().filter(|_| json_step) {
                Some(protocol) => json_calls(protocol, &answer.turn),
                None => (answer.turn.tool_calls.clone(), true),
            };
            let mut turn = answer.turn.clone();
            // The app's last word on the plan (a refused model turn stays refused).
            let refused = matches!(
                turn.finish_reason,
                FinishReason::Refusal | FinishReason::ContentFilter
            );
            turn.tool_calls = if planning && !refused {
                self.reviewed(ctx, calls).await
            } else {
                calls
            };
            self.unique_ids(ctx, &mut turn);
            let answer = Answer { turn, ..answer };
            // A JSON plan is never shown: it is for tooljig, not the user.
            // Text beside tool calls is shown unless it was held back (act-first).
            answer.complete_events(
                ctx,
                !json_step && (answer.turn.tool_calls.is_empty() || !held),
            );
            let step_finish = StreamEvent::StepFinish {
                step,
                finish_reason: answer.turn.finish_reason,
                usage: answer.turn.usage,
            };
            if answer.turn.tool_calls.is_empty() {
                ctx.emit(step_finish);
                return self
                    .answer(ctx, answer, (planning, json_step, plan_ok), &specs)
                    .await;
            }
            // The model's message, then the batch.
            ctx.state.messages.push(if json_step {
                Message::assistant(answer.turn.content.clone())
            } else {
                answer.turn.message()
            });
            let results = self.execute(ctx, &answer.turn).await;
            // A step is the model call and the batch it asked for, as the AI SDK counts it.
            ctx.emit(step_finish);
            ctx.tools_ran = true;
            let call_ids = answer
                .turn
                .tool_calls
                .iter()
                .map(|c| c.id.clone())
                .collect();
            let batch = SuspendedBatch {
                batch_run_id: results.1,
                call_ids,
                json_protocol: json_step,
            };
            if let Some(done) = self.after_batch(ctx, results.0, batch).await {
                return done;
            }
        }
    }

    /// The model answered without tool calls.
    async fn answer(
        &self,
        ctx: &mut Ctx<'_>,
        answer: Answer,
        (planning, json_step, plan_ok): (bool, bool, bool),
        offered: &[crate::spec::ToolSpec],
    ) -> RunOutcome {
        let refused = matches!(
            answer.turn.finish_reason,
            FinishReason::Refusal | FinishReason::ContentFilter
        );
        let distinct_responder = self
            .responder
            .as_ref()
            .is_some_and(|r| !Arc::ptr_eq(r, &self.planner));
        // The responder writes the answer when the planner's text is not meant for the
        // user: a JSON plan, or a small planner's reply when a larger responder exists.
        if !refused && (json_step || (planning && distinct_responder)) {
            if json_step && !plan_ok {
                tracing::warn!("the JSON plan did not parse; answering without tools");
            }
            let spec = CallSpec {
                tools: if json_step {
                    Vec::new()
                } else {
                    offered.to_vec()
                },
                tool_choice: ToolChoice::None,
                system: self.options.system.clone(),
                note: None,
                response_schema: None,
                hold_text: false,
            };
            let model = self.answering_model().clone();
            return match call_model(ctx, &model, spec, &self.options).await {
                Ok(a) => {
                    a.complete_events(ctx, true);
                    let text = a.turn.content.clone();
                    wrap_up::finish(ctx, StopReason::Answered, text, a.turn.finish_reason)
                }
                Err(e) => {
                    ctx.state.counters.model_failures += 1;
                    ctx.emit(StreamEvent::Error {
                        message: e.to_string(),
                    });
                    wrap_up::summary_finish(ctx, StopReason::ModelFailed)
                }
            };
        }
        let reason = if refused {
            StopReason::Refused
        } else {
            StopReason::Answered
        };
        let mut text = answer.turn.content.clone();
        if text.is_empty() {
            text = answer.turn.refusal.clone().unwrap_or_default();
        }
        wrap_up::finish(ctx, reason, text, answer.turn.finish_reason)
    }

    async fn model_failed(&self, ctx: &mut Ctx<'_>, step: u32, e: ModelError) -> RunOutcome {
        ctx.state.counters.model_failures += 1;
        ctx.emit(StreamEvent::Error {
            message: format!("the model failed: {e}"),
        });
        ctx.emit(StreamEvent::StepFinish {
            step,
            finish_reason: FinishReason::Unfinished,
            usage: Default::default(),
        });
        wrap_up::summary_finish(ctx, StopReason::ModelFailed)
    }

    /// Gives calls whose id was already used in the conversation a fresh one, so results
    /// never answer the wrong call.
    /// A JSON plan's references to a renamed call (`dependsOn`, `$from`) follow the rename.
    fn unique_ids(&self, ctx: &mut Ctx<'_>, turn: &mut ModelTurn) {
        let mut used: HashSet<String> = ctx.state.call_ids.iter().cloned().collect();
        let step = ctx.state.counters.steps;
        let mut renamed: HashMap<String, String> = HashMap::new();
        for c in &mut turn.tool_calls {
            if c.id.is_empty() || used.contains(&c.id) {
                let base = if c.id.is_empty() { "call" } else { &c.id };
                let mut n = 0;
                let mut id = format!("{base}_s{step}");
                while used.contains(&id) {
                    n += 1;
                    id = format!("{base}_s{step}_{n}");
                }
                if !c.id.is_empty() {
                    renamed.entry(c.id.clone()).or_insert_with(|| id.clone());
                }
                c.id = id;
            }
            used.insert(c.id.clone());
            ctx.state.call_ids.push(c.id.clone());
        }
        if !renamed.is_empty() {
            for c in &mut turn.tool_calls {
                follow_renames(c, &renamed);
            }
        }
    }
}

/// Points `call`'s references to other calls of its turn (`depends_on` in its provider data,
/// `{"$from": id}` in its arguments) at their new ids.
fn follow_renames(call: &mut ToolCall, renamed: &HashMap<String, String>) {
    if let Some(Value::Array(ids)) = call
        .provider_data
        .as_mut()
        .and_then(|d| d.get_mut("depends_on"))
    {
        for id in ids.iter_mut() {
            if let Some(new) = id.as_str().and_then(|old| renamed.get(old)) {
                *id = Value::String(new.clone());
            }
        }
    }
    match &mut call.arguments {
        Value::String(text) => {
            if let Ok(mut parsed) = serde_json::from_str::<Value>(text)
                && rename_from(&mut parsed, renamed)
            {
                *text = parsed.to_string();
            }
        }
        other => {
            rename_from(other, renamed);
        }
    }
}

/// Renames the targets of `$from` references in `value`; whether any changed.
fn rename_from(value: &mut Value, renamed: &HashMap<String, String>) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            if let Some(Value::String(target)) = map.get_mut("$from")
                && let Some(new) = renamed.get(target.as_str())
            {
                *target = new.clone();
                changed = true;
            }
            for v in map.values_mut() {
                changed |= rename_from(v, renamed);
            }
            changed
        }
        Value::Array(items) => {
            // Every item, not only up to the first change.
            let mut changed = false;
            for v in items {
                changed |= rename_from(v, renamed);
            }
            changed
        }
        _ => false,
    }
}

/// The calls of a JSON-protocol answer, with their dependencies; `false` when it did not
/// parse (the turn then has no calls).
fn json_calls(protocol: &JsonProtocol, turn: &ModelTurn) -> (Vec<ToolCall>, bool) {
    match protocol.parse(&turn.content) {
        Ok(plan) => {
            let mut calls: Vec<ToolCall> = plan
                .calls
                .into_iter()
                .map(|c: Call| {
                    let mut tc = ToolCall::new(c.id, c.tool, c.arguments);
                    if !c.depends_on.is_empty() {
                        tc.provider_data = Some(serde_json::json!({"depends_on": c.depends_on}));
                    }
                    tc
                })
                .collect();
            // An answer cut at the token limit was closed by the repair; its last call may
            // be missing parameters it was about to get, so it never runs.
            if turn.finish_reason == FinishReason::Length
                && let Some(last) = calls.last_mut()
            {
                last.incomplete = true;
            }
            (calls, true)
        }
        Err(_) => (Vec::new(), false),
    }
}

fn join(a: Option<&str>, b: &str) -> String {
    match a {
        Some(a) if !a.is_empty() => format!("{a}\n\n{b}"),
        _ => b.to_string(),
    }
}
