//! OpenAI Responses (`POST /v1/responses`).
//!
//! Tools are flat: `{"type": "function", name, description, parameters, strict}`. The model's
//! output is a list of items; a call is a `function_call` item (`call_id`, `name`,
//! `arguments` as a JSON string), its result a `function_call_output` input item
//! (`call_id`, `output`). The conversation is a list of input items; the system prompt goes
//! in `instructions`.

use super::openai_chat::function_parameters;
use super::{
    FinishReason, Message, ModelRequest, ModelTurn, Provider, ProviderError, ProviderFormat,
    ToolCall, ToolChoice, Usage, content_text, count, push_output, system_text,
};
use crate::spec::ToolSpec;
use serde_json::{Value, json};

/// The Responses format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiResponses {
    /// Offer tools in strict mode (see [`super::strict`]).
    pub strict: bool,
    /// Send `parallel_tool_calls: false`.
    pub sequential_tool_calls: bool,
}

/// Reads `usage` (`input_tokens` / `output_tokens`).
pub(crate) fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: count(v, "input_tokens"),
        output_tokens: count(v, "output_tokens"),
    }
}

/// A `function_call` output item as a [`ToolCall`]; the item id is kept to echo it back.
pub(crate) fn function_call(item: &Value, index: usize) -> Result<ToolCall, ProviderError> {
    let name = item.get("name").and_then(Value::as_str).ok_or_else(|| {
        ProviderError::new(
            Provider::OpenAiResponses,
            format!("function_call item {index} has no `name`"),
        )
    })?;
    let call_id = item
        .get("call_id")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| format!("call_{index}"));
    let mut call = ToolCall::new(
        call_id,
        name,
        item.get("arguments").cloned().unwrap_or_else(|| json!("")),
    );
    if let Some(id) = item.get("id").and_then(Value::as_str) {
        call.provider_data = Some(json!({"id": id}));
    }
    Ok(call)
}

/// The finish reason of a whole response: its status, the incomplete reason, its calls.
pub(crate) fn finish(body: &Value, has_calls: bool) -> (FinishReason, String) {
    let status = body.get("status").and_then(Value::as_str).unwrap_or("");
    match status {
        "incomplete" => {
            let reason = body
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .unwrap_or("incomplete");
            let f = if reason == "content_filter" {
                FinishReason::ContentFilter
            } else {
                FinishReason::Length
            };
            (f, reason.to_string())
        }
        "completed" if has_calls => (FinishReason::ToolCalls, status.into()),
        "completed" => (FinishReason::Stop, status.into()),
        "" => (FinishReason::Unfinished, String::new()),
        other => (FinishReason::Other, other.into()),
    }
}

impl ProviderFormat for OpenAiResponses {
    fn provider(&self) -> Provider {
        Provider::OpenAiResponses
    }

    fn tools(&self, specs: &[ToolSpec]) -> Value {
        specs
            .iter()
            .map(|spec| {
                let (parameters, strict) = function_parameters(spec, self.strict);
                json!({
                    "type": "function",
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": parameters,
                    // Responses defaults `strict` to true; say what was meant either way.
                    "strict": strict.unwrap_or(false),
                })
            })
            .collect()
    }

    fn request(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": request.model,
            "input": self.messages(&request.messages),
        });
        if let Some(system) = system_text(&request.messages) {
            body["instructions"] = Value::String(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = self.tools(&request.tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
            };
            if self.sequential_tool_calls {
                body["parallel_tool_calls"] = Value::Bool(false);
            }
        }
        if let Some(max) = request.max_tokens {
            body["max_output_tokens"] = json!(max);
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(schema) = &request.response_schema {
            body["text"] = json!({"format": {
                "type": "json_schema", "name": "tool_calls", "schema": schema, "strict": false,
            }});
        }
        if request.stream {
            body["stream"] = Value::Bool(true);
        }
        body
    }

    fn parse_response(&self, body: &Value) -> Result<ModelTurn, ProviderError> {
        if let Some(e) = body.get("error").filter(|e| !e.is_null()) {
            return Err(ProviderError::new(
                Provider::OpenAiResponses,
                format!("the API returned an error: {e}"),
            ));
        }
        let items = body
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                ProviderError::new(
                    Provider::OpenAiResponses,
                    "no `output` array in the response",
                )
            })?;
        let mut turn = ModelTurn::default();
        for (i, item) in items.iter().enumerate() {
            match item.get("type").and_then(Value::as_str) {
                Some("message") => {
                    for part in item
                        .get("content")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                    {
                        match part.get("type").and_then(Value::as_str) {
                            Some("output_text") => turn
                                .content
                                .push_str(part.get("text").and_then(Value::as_str).unwrap_or("")),
                            Some("refusal") => {
                                turn.refusal = part
                                    .get("refusal")
                                    .and_then(Value::as_str)
                                    .map(String::from)
                            }
                            _ => {}
                        }
                    }
                }
                Some("function_call") => {
                    let mut call = function_call(item, i)?;
                    if item.get("status").and_then(Value::as_str) == Some("incomplete") {
                        call.incomplete = true;
                    }
                    turn.tool_calls.push(call);
                }
                _ => {}
            }
        }
        let (finish, raw) = finish(body, !turn.tool_calls.is_empty());
        turn.finish_reason = if turn.refusal.is_some() {
            FinishReason::Refusal
        } else {
            finish
        };
        turn.raw_finish_reason = raw;
        if turn.finish_reason == FinishReason::Length
            && let Some(last) = turn.tool_calls.last_mut()
        {
            last.incomplete = true;
        }
        turn.usage = body.get("usage").map(usage).unwrap_or_default();
        turn.model = body.get("model").and_then(Value::as_str).map(String::from);
        Ok(turn)
    }

    fn parse_messages(&self, messages: &[Value]) -> Result<Vec<Message>, ProviderError> {
        let mut out: Vec<Message> = Vec::new();
        for (i, item) in messages.iter().enumerate() {
            match item.get("type").and_then(Value::as_str) {
                Some("function_call") => {
                    let call = function_call(item, i)?;
                    match out.last_mut() {
                        Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                        _ => out.push(Message::Assistant {
                            content: String::new(),
                            tool_calls: vec![call],
                        }),
                    }
                }
                Some("function_call_output") => {
                    push_output(&mut out, item, "call_id", "output", false)
                }
                Some("message") | None => {
                    let text = content_text(item.get("content"));
                    match item.get("role").and_then(Value::as_str) {
                        Some("user") => out.push(Message::user(text)),
                        Some("system") | Some("developer") => out.push(Message::system(text)),
                        Some("assistant") => out.push(Message::assistant(text)),
                        other => {
                            return Err(ProviderError::new(
                                Provider::OpenAiResponses,
                                format!("input item {i} has an unknown role {other:?}"),
                            ));
                        }
                    }
                }
                // Reasoning and server tool items carry nothing tooljig runs.
                Some(_) => {}
            }
        }
        Ok(out)
    }

    fn messages(&self, messages: &[Message]) -> Vec<Value> {
        let mut out = Vec::new();
        for m in messages {
            match m {
                Message::System { .. } => {}
                Message::User { content } => out.push(json!({"role": "user", "content": content})),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    if !content.is_empty() {
                        out.push(json!({"role": "assistant", "content": content}));
                    }
                    for c in tool_calls {
                        let mut item = json!({
                            "type": "function_call",
                            "call_id": c.id,
                            "name": c.name,
                            "arguments": c.arguments_text(),
                        });
                        if let Some(id) = c.provider_data.as_ref().and_then(|d| d.get("id")) {
                            item["id"] = id.clone();
                        }
                        out.push(item);
                    }
                }
                Message::Tool { results } => {
                    for r in results {
                        out.push(json!({
                            "type": "function_call_output",
                            "call_id": r.call_id,
                            "output": r.content(),
                        }));
                    }
                }
            }
        }
        out
    }
}
