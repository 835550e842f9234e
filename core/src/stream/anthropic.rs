//! Anthropic Messages streams: `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta` (stop reason, output tokens), `message_stop`, `ping`, `error`.
//!
//! A `tool_use` block is complete at its `content_block_stop`. A stream that stops at
//! `max_tokens` inside a block never sends that stop: the block's call is incomplete.

use super::tool_input::ToolInputs;
use super::{SseEvent, StreamDecoder, StreamEvent, json};
use crate::providers::anthropic::{finish_reason, usage};
use crate::providers::{ModelTurn, Provider, ProviderError};
use serde_json::Value;
use std::collections::HashMap;

/// Decoder state for one Anthropic message.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    turn: ModelTurn,
    tools: ToolInputs,
    /// Content block index → position in `tools`, for `tool_use` blocks.
    blocks: HashMap<u64, usize>,
    stopped: bool,
}

impl StreamDecoder for AnthropicDecoder {
    fn event(&mut self, sse: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let v = json(Provider::Anthropic, &sse.data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&sse.event);
        let index = v.get("index").and_then(Value::as_u64);
        match kind {
            "message_start" => {
                if let Some(m) = v.get("message") {
                    self.turn.model = m.get("model").and_then(Value::as_str).map(String::from);
                    if let Some(u) = m.get("usage") {
                        self.turn.usage = usage(u);
                    }
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str) {
                            self.text(t, out);
                        }
                    }
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                        let pos = self.tools.start(id, name, None, out);
                        // Inputs normally stream as deltas; a non-empty one here is whole.
                        if let Some(input) = block
                            .get("input")
                            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            self.tools.delta(pos, &input.to_string(), out);
                        }
                        if let Some(i) = index {
                            self.blocks.insert(i, pos);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let t = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text(t, out);
                    }
                    Some("input_json_delta") => {
                        if let Some(&pos) = index.and_then(|i| self.blocks.get(&i)) {
                            let part = delta
                                .get("partial_json")
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            self.tools.delta(pos, part, out);
                        }
                    }
                    Some("thinking_delta") => {
                        let t = delta.get("thinking").and_then(Value::as_str).unwrap_or("");
                        if !t.is_empty() {
                            out.push(StreamEvent::ReasoningDelta {
                                delta: t.to_string(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(&pos) = index.and_then(|i| self.blocks.get(&i)) {
                    self.tools.complete(pos, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.turn.raw_finish_reason = reason.to_string();
                }
                if let Some(u) = v.get("usage") {
                    // Counts here are cumulative; input appears only on some API versions.
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.turn.usage.output_tokens = o;
                    }
                    if let Some(i) = u.get("input_tokens").and_then(Value::as_u64) {
                        self.turn.usage.input_tokens = i;
                    }
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = v.get("error").unwrap_or(&v);
                return Err(ProviderError::new(
                    Provider::Anthropic,
                    format!(
                        "the stream reported an error: {}",
                        e.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown")
                    ),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> ModelTurn {
        let raw = self.turn.raw_finish_reason.clone();
        let reason = if raw.is_empty() || !self.stopped {
            "the stream ended before the message did".to_string()
        } else {
            format!("the model stopped ({raw}) before the arguments were complete")
        };
        let mut turn = std::mem::take(&mut self.turn);
        turn.tool_calls = self.tools.finish(&reason, out);
        turn.finish_reason = finish_reason(if self.stopped { &raw } else { "" });
        turn
    }
}

impl AnthropicDecoder {
    fn text(&mut self, t: &str, out: &mut Vec<StreamEvent>) {
        if !t.is_empty() {
            self.turn.content.push_str(t);
            out.push(StreamEvent::TextDelta {
                delta: t.to_string(),
            });
        }
    }
}
