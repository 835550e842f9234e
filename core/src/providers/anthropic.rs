//! Anthropic Messages (`POST /v1/messages`).
//!
//! Tools are `{name, description, input_schema}`; calls come back as `tool_use` content blocks
//! with their input as an object; all results of a batch go back in one user message as
//! `tool_result` blocks (`tool_use_id`, the envelope as text, `is_error` when not ok).

use super::{
    FinishReason, Message, ModelRequest, ModelTurn, Provider, ProviderError, ProviderFormat,
    ToolCall, ToolChoice, Usage, count, push_output, system_text,
};
use crate::spec::ToolSpec;
use serde_json::{Value, json};

/// Default `max_tokens`: Anthropic requires the field.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Messages format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anthropic {
    /// Send `disable_parallel_tool_use: true` so the model makes one call at a time.
    pub sequential_tool_calls: bool,
}

/// Maps Anthropic's `stop_reason`.
pub(crate) fn finish_reason(raw: &str) -> FinishReason {
    match raw {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::Refusal,
        "" => FinishReason::Unfinished,
        _ => FinishReason::Other,
    }
}

/// Reads `usage` (`input_tokens` / `output_tokens`).
pub(crate) fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: count(v, "input_tokens"),
        output_tokens: count(v, "output_tokens"),
    }
}

impl ProviderFormat for Anthropic {
    fn provider(&self) -> Provider {
        Provider::Anthropic
    }

    fn tools(&self, specs: &[ToolSpec]) -> Value {
        specs
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "input_schema": s.input_schema,
                })
            })
            .collect()
    }

    fn request(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": self.messages(&request.messages),
        });
        if let Some(system) = system_text(&request.messages) {
            body["system"] = Value::String(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = self.tools(&request.tools);
            let mut choice = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            if self.sequential_tool_calls && request.tool_choice != ToolChoice::None {
                choice["disable_parallel_tool_use"] = Value::Bool(true);
            }
            body["tool_choice"] = choice;
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if request.stream {
            body["stream"] = Value::Bool(true);
        }
        body
    }

    fn parse_response(&self, body: &Value) -> Result<ModelTurn, ProviderError> {
        let err = |m: String| ProviderError::new(Provider::Anthropic, m);
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(err(format!(
                "the API returned an error: {}",
                body.get("error").unwrap_or(body)
            )));
        }
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| err("no `content` array in the response".into()))?;
        let mut turn = ModelTurn::default();
        for (i, block) in blocks.iter().enumerate() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    turn.content
                        .push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
                }
                Some("tool_use") => {
                    let field = |k: &str| {
                        block
                            .get(k)
                            .and_then(Value::as_str)
                            .map(String::from)
                            .ok_or_else(|| err(format!("tool_use block {i} has no `{k}`")))
                    };
                    turn.tool_calls.push(ToolCall::new(
                        field("id")?,
                        field("name")?,
                        block.get("input").cloned().unwrap_or_else(|| json!({})),
                    ));
                }
                // Thinking, server tools, citations...: not tooljig's business.
                _ => {}
            }
        }
        turn.raw_finish_reason = body
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        turn.finish_reason = finish_reason(&turn.raw_finish_reason);
        turn.usage = body.get("usage").map(usage).unwrap_or_default();
        turn.model = body.get("model").and_then(Value::as_str).map(String::from);
        Ok(turn)
    }

    fn parse_messages(&self, messages: &[Value]) -> Result<Vec<Message>, ProviderError> {
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str);
            let blocks: Vec<Value> = match m.get("content") {
                Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
                Some(Value::Array(b)) => b.clone(),
                _ => Vec::new(),
            };
            let text: String = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            match role {
                Some("assistant") => {
                    let tool_calls = blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                        .map(|b| {
                            ToolCall::new(
                                b.get("id").and_then(Value::as_str).unwrap_or_default(),
                                b.get("name").and_then(Value::as_str).unwrap_or_default(),
                                b.get("input").cloned().unwrap_or_else(|| json!({})),
                            )
                        })
                        .collect();
                    out.push(Message::Assistant {
                        content: text,
                        tool_calls,
                    });
                }
                Some("user") => {
                    for b in &blocks {
                        if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                            continue;
                        }
                        let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                        push_output(&mut out, b, "tool_use_id", "content", is_error);
                    }
                    if !text.is_empty() {
                        out.push(Message::user(text));
                    }
                }
                other => {
                    return Err(ProviderError::new(
                        Provider::Anthropic,
                        format!("message {i} has an unknown role {other:?}"),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn messages(&self, messages: &[Message]) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for m in messages {
            match m {
                Message::System { .. } => {}
                Message::User { content } => out.push(json!({"role": "user", "content": content})),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut blocks = Vec::new();
                    if !content.is_empty() {
                        blocks.push(json!({"type": "text", "text": content}));
                    }
                    for c in tool_calls {
                        blocks.push(json!({
                            "type": "tool_use",
                            "id": c.id,
                            "name": c.name,
                            "input": c.arguments_object(),
                        }));
                    }
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
                Message::Tool { results } => {
                    let blocks: Vec<Value> = results
                        .iter()
                        .map(|r| {
                            let mut block = json!({
                                "type": "tool_result",
                                "tool_use_id": r.call_id,
                                "content": r.content(),
                            });
                            if r.is_error() {
                                block["is_error"] = Value::Bool(true);
                            }
                            block
                        })
                        .collect();
                    out.push(json!({"role": "user", "content": blocks}));
                }
            }
        }
        out
    }
}
