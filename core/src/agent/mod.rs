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
//!   seed 002's JSON).
//!
//! See `docs/agent-loop.md`.

pub mod fallback;
#[cfg(feature = "http")]
pub mod http;
pub mod mode;
pub mod model;
mod model_call;
pub mod options;
pub mod runner;
pub mod scripted;
pub mod state;
pub mod wrap_up;

pub use fallback::{BreakerState, BreakerStatus, FallbackChain};
pub use model::{ModelClient, ModelError, ModelErrorKind, StreamSender, model_fn};
pub use options::{AgentLimits, AgentOptions, Mode, ToolProtocol};
pub use runner::{Agent, RunOutcome};
pub use scripted::{ScriptedModel, Step};
pub use state::{
    AgentState, NeedsCall, PendingCall, RunCounters, RunStatus, StopReason, SuspendedBatch,
};
