//! The agent loop: a model proposes tool calls, tooljig runs them with every guardrail, the
//! model answers — planner → executor → responder — until it answers in text or a limit
//! ends the run.
//!
//! - [`ModelClient`] is the seam for models: the built-in HTTP clients (feature `http`:
//!   [`http::HttpModel::openai_compatible`] for Chat Completions servers, [`http::HttpModel::anthropic`]),
//!   [`model_fn`] for a closure over the app's own SDK, [`ScriptedModel`] for tests, and
//!   [`FallbackChain`] to move between models behind circuit breakers.
//! - [`Agent`] runs a [`AgentState`]: serializable, so a run suspended on approvals or
//!   client-side tools can be stored and resumed.
//! - [`AgentOptions`] holds the limits (steps, tool calls per step and per run, a deadline,
//!   a token budget), the act-first / talk-first mode and the tool protocol (native or
//!   a JSON-structured answer).
//! - [`answer`] reads what a model written in the app's language answered (a turn, a
//!   string, a failure), so every binding defaults turns and classifies failures alike.
//!
//! See `docs/agent-loop.md`.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tooljig::agent::{Agent, AgentState, RunStatus, ScriptedModel, StopReason};
//! use tooljig::providers::{ModelTurn, ToolCall};
//! use tooljig::{Caller, Engine, Tool};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let engine = Engine::new();
//! engine.register(Tool::from_fn("get_weather", "Weather for a city.",
//!     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!     |args, _ctx| async move { Ok(json!({"city": args["city"], "temp_c": 21})) })).unwrap();
//! // A model that asks for the weather, then answers from the result.
//! let model = ScriptedModel::new("m", [
//!     ModelTurn::calls(vec![ToolCall::new("c1", "get_weather", r#"{"city": "Paris"}"#)]),
//!     ModelTurn::text("It is 21°C in Paris."),
//! ]);
//! let agent = Agent::new(Arc::new(engine), Arc::new(model));
//! let mut state = AgentState::new("Weather in Paris?");
//! let out = agent.run(&mut state, &Caller::default(), None).await;
//! assert_eq!(out.status, RunStatus::Finished { reason: StopReason::Answered });
//! assert_eq!(out.answer, "It is 21°C in Paris.");
//! assert_eq!(out.counters.tool_successes, 1);
//! # });
//! ```

pub mod answer;
mod app_hook;
mod context;
mod executor;
pub mod fallback;
#[cfg(feature = "http")]
pub mod http;
mod limits;
pub mod mode;
pub mod model;
mod model_call;
pub mod options;
mod outcome;
mod plan_review;
mod result_events;
mod run_loop;
pub mod runner;
pub mod scripted;
pub mod state;
mod suspension;
mod tool_selection;
pub mod wrap_up;

pub use executor::call_key;
pub use fallback::{BreakerState, BreakerStatus, FallbackChain};
pub use model::{ModelClient, ModelError, ModelErrorKind, StreamSender, model_fn};
pub use options::{AgentLimits, AgentOptions, Mode, ToolProtocol};
pub use runner::{Agent, RunOutcome};
pub use scripted::{ScriptedModel, Step};
pub use state::{
    AgentState, NeedsCall, PendingCall, RunCounters, RunStatus, StopReason, SuspendedBatch,
};
