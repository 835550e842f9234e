//! A conversation run's state: plain serde data, so a run suspended on an approval or a
//! client-side tool can be stored anywhere and resumed later, in another process.

use crate::call::{CallResult, CallStatus};
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::providers::json_protocol;
use crate::providers::{Message, ToolResult, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::collections::HashMap;

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered in text.
    Answered,
    /// The step limit was reached; the answer is the final tool-free one.
    StepLimit,
    /// The run's tool-call budget was spent; the answer is the final tool-free one.
    ToolCallLimit,
    /// The deadline passed; the answer is tooljig's summary of what was done.
    Deadline,
    /// The token budget was spent; the answer is tooljig's summary of what was done.
    TokenBudget,
    /// Every model failed; the answer is tooljig's summary of what was done.
    ModelFailed,
    /// The model refused or a content filter stopped it.
    Refused,
}

/// Where a run stands after `run`, `send` or `resume` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// Nothing ran yet.
    Idle,
    /// The run ended with an answer.
    Finished {
        /// Why it ended.
        reason: StopReason,
    },
    /// A tool needs information only the user has; the answer is one question for it. Send
    /// the user's reply with `send` and the loop goes on.
    NeedsInput {
        /// The calls that returned `needs`, with the fields each lacks.
        needs: Vec<NeedsCall>,
    },
    /// Calls wait for a human decision or a client: store the state, `resume` with their
    /// results. When calls of the same batch also lack information only the user has,
    /// `needs` lists them and the answer is one question for it, so the app can ask while
    /// the decisions are made (once they are, `resume` asks again, in the model's words).
    Suspended {
        /// The waiting calls.
        pending: Vec<PendingCall>,
        /// The calls of the same batch that returned `needs`, with the fields each lacks.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        needs: Vec<NeedsCall>,
    },
}

/// A call that returned `needs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedsCall {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The missing fields.
    pub fields: Vec<String>,
}

/// A call the run waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Waiting for a human (`pending_approval`) or a client (`pending_external`).
    pub status: CallStatus,
    /// The final arguments, to show a human or run on the client.
    pub arguments: serde_json::Value,
    /// The approval's id, when a human must decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The hash of the exact arguments the approval is bound to; a decision names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<String>,
}

/// The batch a suspended run waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendedBatch {
    /// The engine's run id for the batch (see `Engine::resume`), when it was persisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_run_id: Option<String>,
    /// The model's calls, in its order.
    pub call_ids: Vec<String>,
    /// Whether the results go back as one JSON-protocol message.
    #[serde(default)]
    pub json_protocol: bool,
}

/// What a run did: the counters an app reports as telemetry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunCounters {
    /// Model calls that could ask for tools.
    pub steps: u32,
    /// All model calls, final answers and questions included.
    pub model_calls: u32,
    /// Model calls that failed (after retries and fallbacks).
    pub model_failures: u32,
    /// Tool calls proposed and handled (run or refused).
    pub tool_calls: u32,
    /// Tool calls whose envelope was `ok`.
    pub tool_successes: u32,
    /// Times a `needs` became a question to the user.
    pub needs_loops: u32,
    /// Refusals and failures, by error code.
    pub failures_by_code: BTreeMap<String, u32>,
    /// Tokens used by every model call.
    pub usage: Usage,
    /// Wall time spent in `run`, `send` and `resume`, in milliseconds.
    pub duration_ms: u64,
    /// Wall time spent waiting for models, in milliseconds.
    pub model_ms: u64,
    /// Wall time spent running tool batches, in milliseconds.
    pub tools_ms: u64,
}

impl RunCounters {
    /// Counts the outcome of one call.
    pub fn count_result(&mut self, r: &CallResult) {
        self.tool_calls += 1;
        if r.envelope.is_ok() {
            self.tool_successes += 1;
        } else if let Some(code) = r.envelope.code() {
            *self
                .failures_by_code
                .entry(code.as_str().to_string())
                .or_default() += 1;
        } else {
            *self.failures_by_code.entry("needs".into()).or_default() += 1;
        }
    }
}

/// The state of one conversation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// The run's id.
    pub run_id: String,
    /// The conversation, provider-neutral (the system prompt is added per request).
    pub messages: Vec<Message>,
    /// Where the run stands.
    pub status: RunStatus,
    /// What it did so far.
    pub counters: RunCounters,
    /// Steps taken in the current user turn (the step limit is per turn).
    pub turn_steps: u32,
    /// Tool calls run in the current user turn.
    pub turn_tool_calls: usize,
    /// Tokens used in the current user turn.
    #[serde(default)]
    pub turn_tokens: u64,
    /// The batch a suspended run waits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<SuspendedBatch>,
    /// Results of the suspended batch that are already final, kept until the rest arrive.
    #[serde(default)]
    pub held_results: Vec<CallResult>,
    /// Every call id used, so ids stay unique across the conversation.
    #[serde(default)]
    pub call_ids: Vec<String>,
    /// The final answer or question of the last turn.
    #[serde(default)]
    pub answer: String,
}

impl AgentState {
    /// A new run whose first user message is `message`.
    pub fn new(message: impl Into<String>) -> Self {
        AgentState {
            run_id: new_run_id(),
            messages: vec![Message::user(message)],
            status: RunStatus::Idle,
            counters: RunCounters::default(),
            turn_steps: 0,
            turn_tool_calls: 0,
            turn_tokens: 0,
            suspended: None,
            held_results: Vec::new(),
            call_ids: Vec::new(),
            answer: String::new(),
        }
    }

    /// A run over an existing conversation.
    pub fn from_messages(messages: Vec<Message>) -> Self {
        let mut s = AgentState::new("");
        s.messages = messages;
        s
    }

    /// The state as JSON, to store while suspended.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A state stored with [`AgentState::to_json`].
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The last user message's text.
    pub fn last_user_text(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }

    /// A new user turn on a suspended run: the calls still waiting are settled as `cancelled`
    /// (never run), so the conversation stays valid (every call has its result) and the model
    /// learns they did not happen. The new message stays last.
    pub(crate) fn abandon_pending(&mut self) {
        let Some(batch) = self.suspended.take() else {
            return;
        };
        let mut by_id: HashMap<String, CallResult> = self
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
                        ErrorCode::Cancelled,
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
        let at = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .filter(|&i| i + 1 == self.messages.len())
            .unwrap_or(self.messages.len());
        self.messages.insert(at, message);
    }

    /// Adds the time since `start` to the run's duration.
    pub(crate) fn finish_timing(&mut self, start: std::time::Instant) {
        self.counters.duration_ms += start.elapsed().as_millis() as u64;
    }
}

fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!("run_{nanos:x}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
