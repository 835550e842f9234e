//! OpenAI Chat Completions (`POST /v1/chat/completions`), also spoken by Ollama, vLLM and
//! llama.cpp's server.
//!
//! Tools are `{"type": "function", "function": {name, description, parameters, strict?}}`;
//! calls come back in `choices[0].message.tool_calls` with their arguments as a JSON string;
//! each result goes back as its own `{"role": "tool", "tool_call_id", "content"}` message, the
//! envelope serialized as the content.

use super::{
    FinishReason, Message, ModelRequest, ModelTurn, Provider, ProviderError, ProviderFormat,
    ToolCall, ToolChoice, Usage, content_text, count, push_output, strict,
};
use crate::spec::ToolSpec;
use serde_json::{Value, json};

/// The Chat Completions format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiChat {
    /// Offer tools in strict mode (schemas converted by [`strict::to_strict`]; a schema strict
    /// mode cannot express is offered non-strict).
    pub strict: bool,
    /// Send `parallel_tool_calls: false` so the model makes one call at a time.
    pub sequential_tool_calls: bool,
}

impl OpenAiChat {
    /// The format in strict mode.
    pub fn strict() -> Self {
        OpenAiChat {
            strict: true,
            ..Default::default()
        }
    }
}

/// One tool definition, strict when asked and possible.
pub(crate) fn function_parameters(spec: &ToolSpec, strict_mode: bool) -> (Value, Option<bool>) {
    if !strict_mode {
        return (spec.input_schema.clone(), None);
    }
    match strict::to_strict(&spec.input_schema) {
        Ok(schema) => (schema, Some(true)),
        Err(why) => {
            tracing::warn!(tool = %spec.name, %why, "offering the tool without strict mode");
            (spec.input_schema.clone(), Some(false))
        }
    }
}

/// Maps Chat Completions' `finish_reason`.
pub(crate) fn finish_reason(raw: &str) -> FinishReason {
    match raw {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        "" => FinishReason::Unfinished,
        _ => FinishReason::Other,
    }
}

/// Reads `usage` (`prompt_tokens` / `completion_tokens`).
pub(crate) fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: count(v, "prompt_tokens"),
        output_tokens: count(v, "completion_tokens"),
    }
}

impl ProviderFormat for OpenAiChat {
    fn provider(&self) -> Provider {
        Provider::OpenAiChat
    }

    fn tools(&self, specs: &[ToolSpec]) -> Value {
        Value::Array(
            specs
                .iter()
                .map(|spec| {
                    let (parameters, strict) = function_parameters(spec, self.strict);
                    let mut function = json!({
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": parameters,
                    });
                    if let Some(strict) = strict {
                        function["strict"] = Value::Bool(strict);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect(),
        )
    }

    fn request(&self, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": request.model,
            "messages": self.messages(&request.messages),
        });
        if !request.tools.is_empty() {
            body["tools"] = self.tools(&request.tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            if self.sequential_tool_calls {
                body["parallel_tool_calls"] = Value::Bool(false);
            }
        }
        if let Some(max) = request.max_tokens {
            body["max_completion_tokens"] = json!(max);
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(schema) = &request.response_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "tool_calls", "schema": schema, "strict": false},
            });
        }
        if request.stream {
            body["stream"] = Value::Bool(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    fn parse_response(&self, body: &Value) -> Result<ModelTurn, ProviderError> {
        let err = |m: &str| ProviderError::new(Provider::OpenAiChat, m);
        if let Some(e) = body.get("error") {
            return Err(err(&format!("the API returned an error: {e}")));
        }
        let choice = body
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| err("no `choices[0]` in the response"))?;
        let message = choice
            .get("message")
            .ok_or_else(|| err("no `message` in `choices[0]`"))?;
        let mut tool_calls = Vec::new();
        for (i, tc) in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let function = tc
                .get("function")
                .ok_or_else(|| err(&format!("tool call {i} has no `function`")))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| err(&format!("tool call {i} has no function name")))?;
            let id = tc
                .get("id")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| format!("call_{i}"));
            let arguments = function
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::String(String::new()));
            tool_calls.push(ToolCall::new(id, name, arguments));
        }
        let raw = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut finish = finish_reason(&raw);
        let refusal = message
            .get("refusal")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from);
        if refusal.is_some() && finish == FinishReason::Stop {
            finish = FinishReason::Refusal;
        }
        if finish == FinishReason::Length {
            // The last call may have been cut mid-arguments; it must never run.
            if let Some(last) = tool_calls.last_mut() {
                last.incomplete = true;
            }
        }
        Ok(ModelTurn {
            content: message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            tool_calls,
            finish_reason: finish,
            raw_finish_reason: raw,
            usage: body.get("usage").map(usage).unwrap_or_default(),
            refusal,
            model: body.get("model").and_then(Value::as_str).map(String::from),
        })
    }

    fn parse_messages(&self, messages: &[Value]) -> Result<Vec<Message>, ProviderError> {
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let content = content_text(m.get("content"));
            match m.get("role").and_then(Value::as_str) {
                Some("system") | Some("developer") => out.push(Message::system(content)),
                Some("user") => out.push(Message::user(content)),
                Some("assistant") => {
                    let mut tool_calls = Vec::new();
                    for tc in m
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                    {
                        let id = tc.get("id").and_then(Value::as_str).unwrap_or_default();
                        let name = tc
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let args = tc
                            .pointer("/function/arguments")
                            .cloned()
                            .unwrap_or_else(|| Value::String(String::new()));
                        tool_calls.push(ToolCall::new(id, name, args));
                    }
                    out.push(Message::Assistant {
                        content,
                        tool_calls,
                    });
                }
                Some("tool") => push_output(&mut out, m, "tool_call_id", "content", false),
                other => {
                    return Err(ProviderError::new(
                        Provider::OpenAiChat,
                        format!("message {i} has an unknown role {other:?}"),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn messages(&self, messages: &[Message]) -> Vec<Value> {
        let mut out = Vec::new();
        for m in messages {
            match m {
                Message::System { content } => {
                    out.push(json!({"role": "system", "content": content}))
                }
                Message::User { content } => out.push(json!({"role": "user", "content": content})),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut msg = json!({"role": "assistant"});
                    msg["content"] = if content.is_empty() && !tool_calls.is_empty() {
                        Value::Null
                    } else {
                        Value::String(content.clone())
                    };
                    if !tool_calls.is_empty() {
                        msg["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| {
                                json!({
                                    "id": c.id,
                                    "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments_text()},
                                })
                            })
                            .collect();
                    }
                    out.push(msg);
                }
                Message::Tool { results } => {
                    for r in results {
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": r.call_id,
                            "content": r.content(),
                        }));
                    }
                }
            }
        }
        out
    }
}
