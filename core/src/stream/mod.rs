//! Streaming: provider server-sent-event streams parsed incrementally into tooljig's events,
//! and tooljig's events written out in the Vercel AI SDK UI message stream protocol.
//!
//! A [`StreamParser`] takes raw bytes as they arrive and returns [`StreamEvent`]s: text
//! deltas, tool input started, argument deltas with the arguments parsed so far, input
//! complete. When the stream ends it yields the whole [`ModelTurn`]. A tool call whose
//! arguments were cut off (the stream stopped at `max_tokens`, or the connection dropped)
//! is reported as [`StreamEvent::ToolInputIncomplete`] and marked `incomplete` in the turn,
//! and [`ModelTurn::into_batch`] refuses it instead of running it.
//!
//! The agent loop adds the rest of a run's events (steps, tool output, tool errors, approval
//! requests) to the same enum, and [`ui_message_stream`] serializes them for `useChat`.

pub mod anthropic;
pub mod gemini;
pub mod openai_chat;
pub mod openai_responses;
pub mod partial_json;
pub mod sse;
pub mod tool_input;
pub mod ui_message_stream;

use crate::envelope::ToolError;
use crate::providers::{FinishReason, ModelTurn, Provider, ProviderError, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use sse::{SseDecoder, SseEvent};

/// One thing that happened while a model answered or a run went on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A run started (the agent loop).
    Start {
        /// The run's id.
        run_id: String,
    },
    /// A step (one model call and the batch it asked for) started.
    StepStart {
        /// 1 for the first step.
        step: u32,
    },
    /// User-visible text.
    TextDelta {
        /// The new text.
        delta: String,
    },
    /// Reasoning text (Anthropic thinking), not part of the answer.
    ReasoningDelta {
        /// The new text.
        delta: String,
    },
    /// The model started a tool call.
    ToolInputStart {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
    },
    /// More of a call's arguments arrived.
    ToolInputDelta {
        /// The call's id.
        call_id: String,
        /// The new argument text.
        delta: String,
        /// The arguments received so far, closed and parsed (absent until there is something).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial: Option<Value>,
    },
    /// A call's arguments are complete.
    ToolInputAvailable {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The arguments (repaired if need be; the raw text when they do not parse at all).
        input: Value,
    },
    /// The stream ended inside a call's arguments: the call will never run.
    ToolInputIncomplete {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The argument text received.
        text: String,
        /// What the received text parses to, closed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial: Option<Value>,
        /// Why it is incomplete.
        reason: String,
    },
    /// A call ran and produced data (or `needs`): the envelope.
    ToolOutputAvailable {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The envelope the model will read.
        output: Value,
    },
    /// A running call reported progress (`ctx.progress`): how far it is, or a preliminary
    /// output before its result.
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Share of the work done, 0 to 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        /// What it is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// A preliminary output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
    },
    /// A call was refused or failed.
    ToolOutputError {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Code, message, retryable.
        error: ToolError,
    },
    /// A call waits for a human decision.
    ToolApprovalRequest {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The approval's id, to approve or reject it by.
        approval_id: String,
    },
    /// A client-side call waits for the client to run it and send the result.
    ToolOutputPending {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The arguments to run it with.
        input: Value,
    },
    /// A model call ended.
    StepFinish {
        /// The step.
        step: u32,
        /// Why the model stopped.
        finish_reason: FinishReason,
        /// Tokens used by the call.
        usage: Usage,
    },
    /// The run ended (or suspended).
    Finish {
        /// Why the last model call stopped.
        finish_reason: FinishReason,
    },
    /// Something failed; the run may go on (a fallback model) or end.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Turns one provider's server-sent events into [`StreamEvent`]s and, at the end, a turn.
pub trait StreamDecoder: Send {
    /// Handles one event; an error event from the provider is an `Err`.
    fn event(&mut self, sse: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError>;

    /// The stream ended: reports calls left incomplete and returns the turn.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> ModelTurn;
}

/// The decoder for a provider's stream.
pub fn decoder(provider: Provider) -> Box<dyn StreamDecoder> {
    match provider {
        Provider::OpenAiChat => Box::new(openai_chat::OpenAiChatDecoder::default()),
        Provider::OpenAiResponses => Box::new(openai_responses::OpenAiResponsesDecoder::default()),
        Provider::Anthropic => Box::new(anthropic::AnthropicDecoder::default()),
        Provider::Gemini => Box::new(gemini::GeminiDecoder::default()),
    }
}

/// Bytes in, events out: SSE framing plus a provider's decoder.
pub struct StreamParser {
    sse: SseDecoder,
    decoder: Box<dyn StreamDecoder>,
}

impl StreamParser {
    /// A parser for `provider`'s stream.
    pub fn new(provider: Provider) -> Self {
        StreamParser {
            sse: SseDecoder::new(),
            decoder: decoder(provider),
        }
    }

    /// Feeds bytes as they arrive (any split); returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<StreamEvent>, ProviderError> {
        let mut out = Vec::new();
        for e in self.sse.push(bytes) {
            self.decoder.event(&e, &mut out)?;
        }
        Ok(out)
    }

    /// Ends the stream: the last events (incomplete calls) and the whole turn.
    pub fn finish(mut self) -> Result<(Vec<StreamEvent>, ModelTurn), ProviderError> {
        let mut out = Vec::new();
        if let Some(e) = self.sse.finish() {
            self.decoder.event(&e, &mut out)?;
        }
        let turn = self.decoder.finish(&mut out);
        Ok((out, turn))
    }
}

/// Parses a whole recorded stream at once.
pub fn parse_stream(
    provider: Provider,
    bytes: &[u8],
) -> Result<(Vec<StreamEvent>, ModelTurn), ProviderError> {
    let mut parser = StreamParser::new(provider);
    let mut events = parser.push(bytes)?;
    let (rest, turn) = parser.finish()?;
    events.extend(rest);
    Ok((events, turn))
}

/// Parses an SSE `data` payload as JSON, with the provider named in the error.
pub(crate) fn json(provider: Provider, data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| {
        ProviderError::new(
            provider,
            format!("a stream event is not JSON ({e}): {data:.200}"),
        )
    })
}
