//! The loop: planner → executor → responder, until the model answers or a limit ends it.
//!
//! A user turn starts with the planner, offered the tools. When it calls tools, the batch
//! runs through [`Engine::run`] with every guardrail, the results join the conversation, and
//! the responder (the planner again when there is none) takes over: it may call more tools
//! (multi-round) or answer. When the planner calls none, the responder, if it is a different
//! model, writes the answer without tools; otherwise the planner's text is the answer.
//!
//! A `needs` result ends the turn with one clarifying question; the next [`Agent::send`]
//! carries the user's answer and the loop goes on, the call made with the missing field. A
//! batch with calls waiting for approval or a client suspends the run; its [`AgentState`]
//! serializes, and [`Agent::resume`] continues it once they are settled.

use super::model::{ModelClient, ModelError, StreamSender};
use super::model_call::{Answer, CallSpec, call_model};
use super::options::{AgentOptions, Mode, ToolProtocol};
use super::state::{
    AgentState, NeedsCall, PendingCall, RunCounters, RunStatus, StopReason, SuspendedBatch,
};
use super::wrap_up;
use crate::call::{Call, CallResult, CallStatus};
use crate::caller::Caller;
use crate::engine::{BatchOptions, BatchResult, Engine};
use crate::envelope::{Envelope, ToolError};
use crate::events::Event;
use crate::providers::json_protocol::{self, JsonProtocol};
use crate::providers::{FinishReason, Message, ModelTurn, ToolCall, ToolChoice, ToolResult};
use crate::stream::StreamEvent;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a `run`, `send` or `resume` call ended with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Where the run stands.
    pub status: RunStatus,
    /// The answer, or the clarifying question (empty while suspended).
    pub answer: String,
    /// The run's counters so far.
    pub counters: RunCounters,
}

/// Drives conversations: models, an engine, options.
pub struct Agent {
    engine: Arc<Engine>,
    planner: Arc<dyn ModelClient>,
    responder: Option<Arc<dyn ModelClient>>,
    options: AgentOptions,
    host: Option<crate::handler::HostData>,
}

/// What one pass of the loop works with.
pub(crate) struct Ctx<'a> {
    pub state: &'a mut AgentState,
    pub caller: Caller,
    pub sink: Option<StreamSender>,
    pub deadline: Option<Instant>,
    pub mode: Mode,
    /// Tools ran in this user turn: text may stream now, and the responder takes over.
    pub tools_ran: bool,
}

impl Ctx<'_> {
    pub fn emit(&self, e: StreamEvent) {
        if let Some(tx) = &self.sink {
            let _ = tx.send(e);
        }
    }

    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

impl Agent {
    /// An agent whose planner (and responder) is `model`, over `engine`'s tools.
    pub fn new(engine: Arc<Engine>, model: Arc<dyn ModelClient>) -> Self {
        Agent {
            engine,
            planner: model,
            responder: None,
            options: AgentOptions::default(),
            host: None,
        }
    }

    /// Hands `host` to every handler of the run's batches as [`crate::ToolContext::host`]:
    /// how a binding's handlers find the event loop of the code that started the run.
    pub fn host(mut self, host: crate::handler::HostData) -> Self {
        self.host = Some(host);
        self
    }

    /// A different model for the passes after the tools ran (seed 000: a small planner, a
    /// larger responder).
    pub fn responder(mut self, model: Arc<dyn ModelClient>) -> Self {
        self.responder = Some(model);
        self
    }

    /// Replaces the options.
    pub fn options(mut self, options: AgentOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &AgentOptions {
        &self.options
    }

    /// Runs the conversation in `state` (which should end with a user message) until the
    /// model answers, asks a question, suspends, or a limit ends it.
    pub async fn run(
        &self,
        state: &mut AgentState,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> RunOutcome {
        self.run_with_mode(state, caller, events, None).await
    }

    /// Like [`Agent::run`], with the turn's mode chosen by the app.
    pub async fn run_with_mode(
        &self,
        state: &mut AgentState,
        caller: &Caller,
        events: Option<StreamSender>,
        mode: Option<Mode>,
    ) -> RunOutcome {
        let start = Instant::now();
        abandon_pending(state);
        state.turn_steps = 0;
        state.turn_tool_calls = 0;
        state.turn_tokens = 0;
        let mode = self.resolve_mode(state, mode);
        let mut ctx = self.ctx(state, caller, events, mode, false, start);
        ctx.emit(StreamEvent::Start {
            run_id: ctx.state.run_id.clone(),
        });
        let out = self.drive(&mut ctx).await;
        finish_timing(ctx.state, start);
        out.with_counters(ctx.state)
    }

    /// Adds the user's message (a new request, or the answer to a clarifying question) and
    /// runs.
    pub async fn send(
        &self,
        state: &mut AgentState,
        message: impl Into<String>,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> RunOutcome {
        state.messages.push(Message::user(message));
        self.run(state, caller, events).await
    }

    /// Continues a suspended run once its pending calls are settled through the engine
    /// (`Engine::decide` for approvals, `Engine::submit_result` for client-side tools): the
    /// engine's run is resumed and the loop goes on. Still-pending calls keep it suspended.
    pub async fn resume(
        &self,
        state: &mut AgentState,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> Result<RunOutcome, ToolError> {
        let Some(batch) = state.suspended.clone() else {
            return Err(ToolError::new(
                crate::error_code::ErrorCode::InvalidRequest,
                "this run is not suspended",
            ));
        };
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
            .continue_with(state, resumed.results, caller, events)
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
        if state.suspended.is_none() {
            return Err(ToolError::new(
                crate::error_code::ErrorCode::InvalidRequest,
                "this run is not suspended",
            ));
        }
        Ok(self.continue_with(state, results, caller, events).await)
    }

    async fn continue_with(
        &self,
        state: &mut AgentState,
        results: Vec<CallResult>,
        caller: &Caller,
        events: Option<StreamSender>,
    ) -> RunOutcome {
        let start = Instant::now();
        let batch = state.suspended.clone().expect("checked by the caller");
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
        finish_timing(ctx.state, start);
        out.with_counters(ctx.state)
    }

    fn ctx<'a>(
        &self,
        state: &'a mut AgentState,
        caller: &Caller,
        events: Option<StreamSender>,
        mode: Mode,
        tools_ran: bool,
        start: Instant,
    ) -> Ctx<'a> {
        Ctx {
            state,
            caller: caller.clone(),
            sink: events,
            deadline: self
                .options
                .limits
                .deadline_ms
                .map(|ms| start + Duration::from_millis(ms)),
            mode,
            tools_ran,
        }
    }

    fn resolve_mode(&self, state: &AgentState, mode: Option<Mode>) -> Mode {
        match mode.unwrap_or(self.options.mode) {
            Mode::Auto => super::mode::choose_mode(state.last_user_text(), &self.engine.specs()),
            m => m,
        }
    }

    fn json_protocol(&self) -> Option<&JsonProtocol> {
        match &self.options.protocol {
            ToolProtocol::Json(p) => Some(p),
            ToolProtocol::Native => None,
        }
    }

    pub(crate) fn engine_specs(&self, caller: &Caller) -> Vec<crate::spec::ToolSpec> {
        self.engine.specs_for(caller)
    }

    pub(crate) fn answering_model(&self) -> &Arc<dyn ModelClient> {
        self.responder.as_ref().unwrap_or(&self.planner)
    }

    /// Which limit, if any, ends the turn before the next step.
    fn limit_reached(&self, ctx: &Ctx<'_>) -> Option<StopReason> {
        let limits = &self.options.limits;
        if ctx.remaining().is_some_and(|d| d.is_zero()) {
            return Some(StopReason::Deadline);
        }
        if limits
            .token_budget
            .is_some_and(|budget| ctx.state.turn_tokens >= budget)
        {
            return Some(StopReason::TokenBudget);
        }
        if ctx.state.turn_steps >= limits.max_steps {
            return Some(StopReason::StepLimit);
        }
        if ctx.tools_ran && ctx.state.turn_tool_calls >= limits.max_tool_calls_per_run {
            return Some(StopReason::ToolCallLimit);
        }
        None
    }

    async fn drive(&self, ctx: &mut Ctx<'_>) -> RunOutcome {
        // Only the tools this caller may use, hidden parameters removed.
        let specs = self.engine.specs_for(&ctx.caller);
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
            let answer = match call_model(
                ctx,
                &model,
                spec,
                self.options.max_tokens,
                self.options.temperature,
            )
            .await
            {
                Ok(a) => a,
                Err(e) => return self.model_failed(ctx, step, e).await,
            };
            let (calls, plan_ok) = if json_step {
                json_calls(json.as_ref().expect("json step"), &answer.turn)
            } else {
                (answer.turn.tool_calls.clone(), true)
            };
            let mut turn = answer.turn.clone();
            turn.tool_calls = calls;
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
                return self.answer(ctx, answer, planning, json_step, plan_ok).await;
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

    /// After a batch: suspend on pending calls, ask on `needs`, or go on (`None`).
    async fn after_batch(
        &self,
        ctx: &mut Ctx<'_>,
        results: Vec<CallResult>,
        batch: SuspendedBatch,
    ) -> Option<RunOutcome> {
        let pending: Vec<PendingCall> = results
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
            .collect();
        if !pending.is_empty() {
            ctx.state.held_results = results;
            ctx.state.suspended = Some(batch);
            ctx.state.status = RunStatus::Suspended { pending };
            ctx.state.answer.clear();
            ctx.emit(StreamEvent::Finish {
                finish_reason: FinishReason::ToolCalls,
            });
            return Some(RunOutcome::of(ctx.state));
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
        let needs: Vec<NeedsCall> = results
            .iter()
            .filter_map(|r| match &r.envelope {
                Envelope::Needs(fields) => Some(NeedsCall {
                    call_id: r.call_id.clone(),
                    tool: r.tool.clone(),
                    fields: fields.clone(),
                }),
                _ => None,
            })
            .collect();
        if !needs.is_empty() {
            return Some(wrap_up::ask(self, ctx, needs).await);
        }
        None
    }

    /// The model answered without tool calls.
    async fn answer(
        &self,
        ctx: &mut Ctx<'_>,
        answer: Answer,
        planning: bool,
        json_step: bool,
        plan_ok: bool,
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
                    self.engine.specs_for(&ctx.caller)
                },
                tool_choice: ToolChoice::None,
                system: self.options.system.clone(),
                note: None,
                response_schema: None,
                hold_text: false,
            };
            let model = self.answering_model().clone();
            return match call_model(
                ctx,
                &model,
                spec,
                self.options.max_tokens,
                self.options.temperature,
            )
            .await
            {
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
    fn unique_ids(&self, ctx: &mut Ctx<'_>, turn: &mut ModelTurn) {
        let mut used: HashSet<String> = ctx.state.call_ids.iter().cloned().collect();
        let step = ctx.state.counters.steps;
        for c in &mut turn.tool_calls {
            if c.id.is_empty() || used.contains(&c.id) {
                let base = if c.id.is_empty() { "call" } else { &c.id };
                let mut n = 0;
                let mut id = format!("{base}_s{step}");
                while used.contains(&id) {
                    n += 1;
                    id = format!("{base}_s{step}_{n}");
                }
                c.id = id;
            }
            used.insert(c.id.clone());
            ctx.state.call_ids.push(c.id.clone());
        }
    }

    /// Runs the turn's calls; returns every result in the model's order, and the engine's
    /// run id when it persisted the batch.
    async fn execute(
        &self,
        ctx: &mut Ctx<'_>,
        turn: &ModelTurn,
    ) -> (Vec<CallResult>, Option<String>) {
        let (mut calls, refused) = turn.into_batch();
        // JSON-protocol calls carry their dependencies in the turn's provider data.
        for (call, tc) in calls
            .iter_mut()
            .zip(turn.tool_calls.iter().filter(|c| !c.incomplete))
        {
            if let Some(deps) = tc.provider_data.as_ref().and_then(|d| d.get("depends_on")) {
                call.depends_on = serde_json::from_value(deps.clone()).unwrap_or_default();
            }
        }
        let limits = &self.options.limits;
        let left = limits
            .max_tool_calls_per_run
            .saturating_sub(ctx.state.turn_tool_calls);
        let max_calls = limits.max_tool_calls_per_step.min(left);
        let deadline_ms = match (limits.batch_deadline_ms, ctx.remaining()) {
            (Some(a), Some(b)) => Some(a.min(b.as_millis() as u64)),
            (a, b) => a.or(b.map(|d| d.as_millis() as u64)),
        };
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
                ..Default::default()
            };
            let run = self.engine.run(calls, ctx.caller.clone(), options);
            let sink = ctx.sink.clone();
            let forward = async move {
                let mut shown = HashSet::new();
                while let Some(e) = rx.recv().await {
                    if let Event::CallFinished { result, .. } = e {
                        if let Some(tx) = &sink {
                            for ev in result_events(&result) {
                                let _ = tx.send(ev);
                            }
                        }
                        shown.insert(result.call_id.clone());
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
            if turn.finish_reason == FinishReason::Length {
                if let Some(last) = calls.last_mut() {
                    last.incomplete = true;
                }
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

/// A new user turn on a suspended run: the calls still waiting are settled as `cancelled`
/// (never run), so the conversation stays valid (every call has its result) and the model
/// learns they did not happen. The new message stays last.
fn abandon_pending(state: &mut AgentState) {
    let Some(batch) = state.suspended.take() else {
        return;
    };
    let mut by_id: HashMap<String, CallResult> = state
        .held_results
        .drain(..)
        .map(|r| (r.call_id.clone(), r))
        .collect();
    let results: Vec<CallResult> = batch
        .call_ids
        .iter()
        .filter_map(|id| by_id.remove(id))
        .map(|mut r| {
            if r.status != CallStatus::Done {
                r.status = CallStatus::Done;
                r.envelope = Envelope::error(
                    crate::error_code::ErrorCode::Cancelled,
                    "the conversation moved on before this call was settled; it was not run",
                );
            }
            r
        })
        .collect();
    let message = if batch.json_protocol {
        Message::user(json_protocol::format_results(&results))
    } else {
        Message::Tool {
            results: results.iter().map(ToolResult::from_result).collect(),
        }
    };
    // Before the user's new message, right after the calls it answers.
    let at = state
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .filter(|&i| i + 1 == state.messages.len())
        .unwrap_or(state.messages.len());
    state.messages.insert(at, message);
}

fn finish_timing(state: &mut AgentState, start: Instant) {
    state.counters.duration_ms += start.elapsed().as_millis() as u64;
}

/// The events that show one result.
pub(crate) fn result_events(r: &CallResult) -> Vec<StreamEvent> {
    let (call_id, tool) = (r.call_id.clone(), r.tool.clone());
    match r.status {
        CallStatus::PendingApproval => vec![StreamEvent::ToolApprovalRequest {
            call_id,
            tool,
            approval_id: r
                .approval
                .as_ref()
                .and_then(|a| a.id.clone())
                .unwrap_or_else(|| r.call_id.clone()),
        }],
        CallStatus::PendingExternal => vec![StreamEvent::ToolOutputPending {
            call_id,
            tool,
            input: r.arguments.clone().unwrap_or_default(),
        }],
        // It will start when the calls it waits on are settled; nothing to show yet.
        CallStatus::Waiting => Vec::new(),
        CallStatus::Done => match &r.envelope {
            Envelope::Error(error) => vec![StreamEvent::ToolOutputError {
                call_id,
                tool,
                error: error.clone(),
            }],
            other => vec![StreamEvent::ToolOutputAvailable {
                call_id,
                tool,
                output: other.to_value(),
            }],
        },
    }
}

fn emit_result(ctx: &Ctx<'_>, r: &CallResult) {
    for e in result_events(r) {
        ctx.emit(e);
    }
}

impl RunOutcome {
    pub(crate) fn of(state: &AgentState) -> Self {
        RunOutcome {
            status: state.status.clone(),
            answer: state.answer.clone(),
            counters: state.counters.clone(),
        }
    }

    fn with_counters(mut self, state: &AgentState) -> Self {
        self.counters = state.counters.clone();
        self
    }
}
