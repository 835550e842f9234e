//! What an agent run may do: limits, the turn mode and how tools reach the model.

use crate::providers::json_protocol::JsonProtocol;
use serde::{Deserialize, Serialize};

/// Limits of one run. Reaching one ends the run with an answer, never an exception: at the
/// step or tool-call limit the model gives a final tool-free answer about what was done; past
/// the deadline or the token budget (no room for another model call) tooljig writes that
/// summary itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentLimits {
    /// Most model calls that may ask for tools (steps) in one run.
    pub max_steps: u32,
    /// Most tool calls run in one step; later ones are refused as `too_many_calls`.
    pub max_tool_calls_per_step: usize,
    /// Most tool calls run in the whole run.
    pub max_tool_calls_per_run: usize,
    /// Wall-time budget of one `run`/`send`/`resume` call, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Most tokens (input plus output, all model calls) the run may use.
    pub token_budget: Option<u64>,
    /// Per-tool-call timeout and overall batch deadline still come from each tool's policy;
    /// this caps a batch's wall time too, in milliseconds.
    pub batch_deadline_ms: Option<u64>,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_steps: 8,
            max_tool_calls_per_step: 8,
            max_tool_calls_per_run: 32,
            deadline_ms: None,
            token_budget: None,
            batch_deadline_ms: None,
        }
    }
}

/// When user-visible text streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Hold text until the tools of the turn have run, then stream the summary. Text a model
    /// writes beside its tool calls stays in the conversation but is not streamed.
    ActFirst,
    /// Stream text as soon as it arrives.
    TalkFirst,
    /// Decide per turn with [`super::mode::choose_mode`].
    Auto,
}

/// How the model is offered tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    /// The provider's own tool calling.
    #[default]
    Native,
    /// The JSON-structured protocol: the tools are described in the system prompt, the
    /// model answers with JSON, and all results go back in one message.
    Json(JsonProtocol),
}

/// Everything an [`Agent`](super::Agent) is configured with besides its models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentOptions {
    /// The system prompt.
    pub system: Option<String>,
    /// Limits of a run.
    pub limits: AgentLimits,
    /// Act-first, talk-first, or decided per turn.
    pub mode: Mode,
    /// Whether the responder may call more tools (multi-round) or only answers.
    pub responder_tools: bool,
    /// How tools reach the model.
    pub protocol: ToolProtocol,
    /// `max_tokens` of each model call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature of each model call.
    pub temperature: Option<f32>,
    /// Most tool calls running at once in a batch.
    pub concurrency: Option<usize>,
    /// Offer the model at most this many tools a turn: those that best match the user's
    /// latest message (`Engine::search_tools`), plus `search_tools` when it is registered,
    /// so the model can find the rest. `None` offers every tool the caller may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer_tools: Option<usize>,
    /// Each batch the model asks for is atomic ([`crate::BatchOptions::atomic`]): once a call
    /// fails no further call starts, and the completed ones are compensated, also when the
    /// batch failed only after a suspension (an approval) and a resume. A multi-step action
    /// is then all or nothing, except what cannot be undone (reported `not_reversible`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system: None,
            limits: AgentLimits::default(),
            mode: Mode::Auto,
            responder_tools: true,
            protocol: ToolProtocol::Native,
            atomic: false,
            max_tokens: None,
            temperature: None,
            concurrency: None,
            offer_tools: None,
        }
    }
}
