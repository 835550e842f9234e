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
//!
//! This file holds the [`Agent`] and the calls that start a turn; each other part of the loop
//! has a sibling file of its own: `run_loop.rs` (the steps of a turn), `limits.rs` (steps,
//! calls, time, tokens), `executor.rs` (a step's batch and what its results lead to),
//! `suspension.rs` (suspend, resume, abandon), `result_events.rs` (how a result shows in the
//! stream), `context.rs` (what one pass works with), `outcome.rs` ([`RunOutcome`]).

pub use super::outcome::RunOutcome;

use super::context::Ctx;
use super::model::{ModelClient, StreamSender};
use super::options::{AgentOptions, Mode, ToolProtocol};
use super::state::AgentState;
use crate::caller::Caller;
use crate::engine::Engine;
use crate::providers::Message;
use crate::providers::json_protocol::JsonProtocol;
use crate::stream::StreamEvent;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Drives conversations: models, an engine, options.
pub struct Agent {
    pub(super) engine: Arc<Engine>,
    pub(super) planner: Arc<dyn ModelClient>,
    pub(super) responder: Option<Arc<dyn ModelClient>>,
    pub(super) options: AgentOptions,
    pub(super) host: Option<crate::handler::HostData>,
    /// The app's pick of the tools offered each turn (`tool_selection.rs`).
    pub(super) selector: Option<Arc<dyn crate::handler::Handler>>,
    /// The app's last word on each turn's plan (`plan_review.rs`).
    pub(super) reviewer: Option<Arc<dyn crate::handler::Handler>>,
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
            selector: None,
            reviewer: None,
        }
    }

    /// Hands `host` to every handler of the run's batches as [`crate::ToolContext::host`]:
    /// how a binding's handlers find the event loop of the code that started the run.
    pub fn host(mut self, host: crate::handler::HostData) -> Self {
        self.host = Some(host);
        self
    }

    /// A different model for the passes after the tools ran (e.g. a small planner, a
    /// larger responder).
    pub fn responder(mut self, model: Arc<dyn ModelClient>) -> Self {
        self.responder = Some(model);
        self
    }

    /// Lets the app pick the tools offered each turn: `hook` is called like a handler with
    /// `{"message": the user's latest message, "tools": [the specs it may offer]}` and returns
    /// the names to offer, in order (see `tool_selection.rs`).
    pub fn select_tools(mut self, hook: Arc<dyn crate::handler::Handler>) -> Self {
        self.selector = Some(hook);
        self
    }

    /// Lets the app review each turn's plan before it runs: `hook` is called like a handler
    /// with `{"message", "calls": [{"id", "name", "arguments"}], "tools": [names the caller may
    /// use]}` and returns the calls to run (`[{"id"?, "name", "arguments"?}]`): the model's,
    /// fewer, or more, such as a needed call the model skipped (see `plan_review.rs`).
    pub fn review_plan(mut self, hook: Arc<dyn crate::handler::Handler>) -> Self {
        self.reviewer = Some(hook);
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
        state.turn_steps = 0;
        state.turn_tool_calls = 0;
        state.turn_tokens = 0;
        let mode = self.resolve_mode(state, mode);
        let mut ctx = self.ctx(state, caller, events, mode, false, start);
        ctx.emit(StreamEvent::Start {
            run_id: ctx.state.run_id.clone(),
        });
        self.settle_suspended(&mut ctx).await;
        ctx.state.abandon_pending();
        let out = self.drive(&mut ctx).await;
        ctx.state.finish_timing(start);
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

    pub(super) fn ctx<'a>(
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

    pub(super) fn resolve_mode(&self, state: &AgentState, mode: Option<Mode>) -> Mode {
        match mode.unwrap_or(self.options.mode) {
            Mode::Auto => super::mode::choose_mode(state.last_user_text(), &self.engine.specs()),
            m => m,
        }
    }

    pub(super) fn json_protocol(&self) -> Option<&JsonProtocol> {
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
}
