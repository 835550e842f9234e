//! OpenAI Responses streams: typed events (`response.output_item.added`,
//! `response.function_call_arguments.delta` / `.done`, `response.output_text.delta`,
//! `response.output_item.done`, `response.completed` / `.incomplete` / `.failed`, `error`).
//! There is no `[DONE]`: the stream ends with the response's final status.

use super::tool_input::ToolInputs;
use super::{SseEvent, StreamDecoder, StreamEvent, json};
use crate::providers::openai_responses::{finish, usage};
use crate::providers::{FinishReason, ModelTurn, Provider, ProviderError};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Decoder state for one Responses stream.
#[derive(Debug, Default)]
pub struct OpenAiResponsesDecoder {
    turn: ModelTurn,
    tools: ToolInputs,
    /// Item id (`fc_...`) and output index → position in `tools`.
    by_item: HashMap<String, usize>,
    by_output: HashMap<u64, usize>,
    final_status: Option<(FinishReason, String)>,
}

impl OpenAiResponsesDecoder {
    fn position(&self, v: &Value) -> Option<usize> {
        v.get("item_id")
            .and_then(Value::as_str)
            .and_then(|id| self.by_item.get(id))
            .or_else(|| {
                v.get("output_index")
                    .and_then(Value::as_u64)
                    .and_then(|i| self.by_output.get(&i))
            })
            .copied()
    }
}

impl StreamDecoder for OpenAiResponsesDecoder {
    fn event(&mut self, sse: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let v = self::json(Provider::OpenAiResponses, &sse.data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(&sse.event);
        match kind {
            "response.created" | "response.in_progress" => {
                self.turn.model = v
                    .pointer("/response/model")
                    .and_then(Value::as_str)
                    .map(String::from);
            }
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                    let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                    let item_id = item.get("id").and_then(Value::as_str).map(String::from);
                    let data = item_id.as_ref().map(|id| json!({"id": id}));
                    let pos = self.tools.start(call_id, name, data, out);
                    if let Some(args) = item.get("arguments").and_then(Value::as_str) {
                        self.tools.delta(pos, args, out);
                    }
                    if let Some(id) = item_id {
                        self.by_item.insert(id, pos);
                    }
                    if let Some(i) = v.get("output_index").and_then(Value::as_u64) {
                        self.by_output.insert(i, pos);
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(pos) = self.position(&v) {
                    let d = v.get("delta").and_then(Value::as_str).unwrap_or("");
                    self.tools.delta(pos, d, out);
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(pos) = self.position(&v) {
                    if let Some(args) = v.get("arguments").and_then(Value::as_str) {
                        self.tools.set_text(pos, args);
                    }
                    self.tools.complete(pos, out);
                }
            }
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let pos = item
                        .get("id")
                        .and_then(Value::as_str)
                        .and_then(|id| self.by_item.get(id).copied())
                        .or_else(|| self.position(&v));
                    if let Some(pos) = pos
                        && item.get("status").and_then(Value::as_str) != Some("incomplete")
                    {
                        if let Some(args) = item.get("arguments").and_then(Value::as_str) {
                            self.tools.set_text(pos, args);
                        }
                        self.tools.complete(pos, out);
                    }
                }
            }
            "response.output_text.delta" => {
                let d = v.get("delta").and_then(Value::as_str).unwrap_or("");
                if !d.is_empty() {
                    self.turn.content.push_str(d);
                    out.push(StreamEvent::TextDelta {
                        delta: d.to_string(),
                    });
                }
            }
            "response.refusal.delta" => {
                let d = v.get("delta").and_then(Value::as_str).unwrap_or("");
                self.turn
                    .refusal
                    .get_or_insert_with(String::new)
                    .push_str(d);
                if !d.is_empty() {
                    out.push(StreamEvent::TextDelta {
                        delta: d.to_string(),
                    });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d = v.get("delta").and_then(Value::as_str).unwrap_or("");
                if !d.is_empty() {
                    out.push(StreamEvent::ReasoningDelta {
                        delta: d.to_string(),
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = v.get("response").cloned().unwrap_or(Value::Null);
                if let Some(u) = response.get("usage").filter(|u| !u.is_null()) {
                    self.turn.usage = usage(u);
                }
                self.final_status = Some(finish(&response, !self.tools.is_empty()));
            }
            "response.failed" | "error" => {
                let e = v
                    .pointer("/response/error")
                    .or_else(|| v.get("error"))
                    .unwrap_or(&v);
                return Err(ProviderError::new(
                    Provider::OpenAiResponses,
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
        let mut turn = std::mem::take(&mut self.turn);
        let (reason, raw) = self
            .final_status
            .clone()
            .unwrap_or((FinishReason::Unfinished, String::new()));
        let why = match reason {
            FinishReason::Unfinished => "the stream ended before the response did".to_string(),
            _ => format!("the response ended ({raw}) before the arguments were complete"),
        };
        turn.tool_calls = self.tools.finish(&why, out);
        turn.finish_reason = if turn.refusal.is_some() && reason == FinishReason::Stop {
            FinishReason::Refusal
        } else {
            reason
        };
        turn.raw_finish_reason = raw;
        turn
    }
}
