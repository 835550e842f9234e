//! OpenAI Chat Completions streams: `chat.completion.chunk` events, then `data: [DONE]`.
//!
//! Tool calls arrive as `delta.tool_calls[{index, id?, function: {name?, arguments?}}]`; a
//! call is complete once a later one starts or the choice finishes. With `finish_reason:
//! "length"` the last call may be cut mid-arguments: it is incomplete. Only choice 0 is
//! followed (tooljig asks for one choice); the usage chunk (`choices: []`) is read.

use super::tool_input::ToolInputs;
use super::{SseEvent, StreamDecoder, StreamEvent, json};
use crate::providers::openai_chat::{finish_reason, usage};
use crate::providers::{FinishReason, ModelTurn, Provider, ProviderError};
use serde_json::Value;
use std::collections::HashMap;

/// Decoder state for one Chat Completions stream.
#[derive(Debug, Default)]
pub struct OpenAiChatDecoder {
    turn: ModelTurn,
    tools: ToolInputs,
    /// `tool_calls[].index` → position in `tools`.
    by_index: HashMap<u64, usize>,
    finished: bool,
    refusal: String,
}

impl StreamDecoder for OpenAiChatDecoder {
    fn event(&mut self, sse: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if sse.data.trim() == "[DONE]" {
            return Ok(());
        }
        let v = json(Provider::OpenAiChat, &sse.data)?;
        if let Some(e) = v.get("error") {
            return Err(ProviderError::new(
                Provider::OpenAiChat,
                format!(
                    "the stream reported an error: {}",
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                ),
            ));
        }
        if self.turn.model.is_none() {
            self.turn.model = v.get("model").and_then(Value::as_str).map(String::from);
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.turn.usage = usage(u);
        }
        let Some(choice) = v.get("choices").and_then(Value::as_array).and_then(|cs| {
            cs.iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        }) else {
            return Ok(());
        };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        if let Some(t) = delta.get("content").and_then(Value::as_str)
            && !t.is_empty()
        {
            self.turn.content.push_str(t);
            out.push(StreamEvent::TextDelta {
                delta: t.to_string(),
            });
        }
        if let Some(t) = delta.get("refusal").and_then(Value::as_str)
            && !t.is_empty()
        {
            self.refusal.push_str(t);
            out.push(StreamEvent::TextDelta {
                delta: t.to_string(),
            });
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            // Some compatible servers omit `index`: a delta with an id or a name starts a
            // call, one without continues the last.
            let starts = tc.get("id").is_some() || tc.pointer("/function/name").is_some();
            let index = match tc.get("index").and_then(Value::as_u64) {
                Some(i) => i,
                None if starts || self.by_index.is_empty() => self.by_index.len() as u64,
                None => self.by_index.len() as u64 - 1,
            };
            let pos = match self.by_index.get(&index) {
                Some(&p) => p,
                None => {
                    let id = tc
                        .get("id")
                        .and_then(Value::as_str)
                        .map(String::from)
                        .unwrap_or_else(|| format!("call_{index}"));
                    let name = tc
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    // A new call means the earlier ones are whole.
                    let next = self.tools.len();
                    self.tools.complete_before(next, out);
                    let p = self.tools.start(id, name, None, out);
                    self.by_index.insert(index, p);
                    p
                }
            };
            if let Some(args) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                self.tools.delta(pos, args, out);
            }
        }
        if let Some(raw) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finished = true;
            self.turn.raw_finish_reason = raw.to_string();
            let n = self.tools.len();
            if raw == "length" {
                // Everything but the last call is whole; the last may be cut.
                self.tools.complete_before(n.saturating_sub(1), out);
            } else {
                self.tools.complete_all(out);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> ModelTurn {
        let mut turn = std::mem::take(&mut self.turn);
        let reason = if self.finished {
            "the model hit its output token limit inside the arguments".to_string()
        } else {
            "the stream ended before the model finished".to_string()
        };
        turn.tool_calls = self.tools.finish(&reason, out);
        turn.finish_reason = finish_reason(&turn.raw_finish_reason);
        if !self.refusal.is_empty() {
            turn.refusal = Some(std::mem::take(&mut self.refusal));
            if turn.finish_reason == FinishReason::Stop {
                turn.finish_reason = FinishReason::Refusal;
            }
        }
        turn
    }
}
