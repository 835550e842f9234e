//! Google Gemini (`models/{model}:generateContent`, `:streamGenerateContent?alt=sse`).
//!
//! Tools are `[{"functionDeclarations": [{name, description, parametersJsonSchema}]}]` (or
//! `parameters` in Gemini's OpenAPI subset, when asked). Calls come back as `functionCall`
//! parts with `args` as an object; results go back in one `user` content as
//! `functionResponse` parts (`name`, `response`: the envelope). Gemini gives calls an `id`
//! only sometimes: tooljig then makes one up (`gemini_call_N`) and never sends it back.

use super::{
    FinishReason, Message, ModelRequest, ModelTurn, Provider, ProviderError, ProviderFormat,
    ToolCall, ToolChoice, ToolResult, Usage, count, envelope_from_content, push_result,
    system_text,
};
use crate::spec::ToolSpec;
use serde_json::{Map, Value, json};

/// Prefix of the ids tooljig makes up for Gemini calls that came without one.
pub const GENERATED_ID_PREFIX: &str = "gemini_call_";

/// A new id for a call Gemini gave none; unique in the process, so calls of later turns
/// never collide with earlier ones.
pub fn generated_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{GENERATED_ID_PREFIX}{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The Gemini format.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gemini {
    /// Declare parameters in Gemini's OpenAPI subset (`parameters`) instead of full JSON
    /// Schema (`parametersJsonSchema`), for older models and endpoints.
    pub openapi_schema: bool,
}

/// Maps Gemini's `finishReason`.
pub(crate) fn finish_reason(raw: &str, has_calls: bool) -> FinishReason {
    match raw {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            FinishReason::ContentFilter
        }
        "" => FinishReason::Unfinished,
        _ => FinishReason::Other,
    }
}

/// Reads `usageMetadata`.
pub(crate) fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: count(v, "promptTokenCount"),
        output_tokens: count(v, "candidatesTokenCount") + count(v, "thoughtsTokenCount"),
    }
}

/// Adds the text and calls of one candidate's parts to a turn.
pub(crate) fn read_parts(parts: &[Value], turn: &mut ModelTurn) {
    for part in parts {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            turn.content.push_str(text);
        }
        if let Some(fc) = part.get("functionCall") {
            let name = fc.get("name").and_then(Value::as_str).unwrap_or("");
            let given = fc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let id = given.map(String::from).unwrap_or_else(generated_id);
            let mut call = ToolCall::new(
                id,
                name,
                fc.get("args").cloned().unwrap_or_else(|| json!({})),
            );
            if let Some(sig) = part.get("thoughtSignature") {
                call.provider_data = Some(json!({"thoughtSignature": sig}));
            }
            turn.tool_calls.push(call);
        }
    }
}

/// Converts JSON Schema to Gemini's OpenAPI subset: `$ref`s inlined, `["t", "null"]` to
/// `nullable`, `const` to a one-value `enum`, `oneOf` to `anyOf`, unsupported keys dropped.
pub fn openapi_schema(schema: &Value) -> Value {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    convert(schema, &defs, 0)
}

const OPENAPI_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

fn convert(schema: &Value, defs: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return json!({});
    };
    // Recursive schemas cannot be inlined forever; Gemini's subset has no references.
    if depth > 16 {
        return json!({"type": "object"});
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or("");
        let target = defs.get(name).cloned().unwrap_or_else(|| json!({}));
        let mut merged = convert(&target, defs, depth + 1);
        if let (Some(m), Some(d)) = (merged.as_object_mut(), obj.get("description")) {
            m.insert("description".into(), d.clone());
        }
        return merged;
    }
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "type" => match v {
                Value::Array(types) => {
                    let real: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if real.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    if let Some(t) = real.first() {
                        out.insert("type".into(), (*t).clone());
                    }
                }
                _ => {
                    out.insert("type".into(), v.clone());
                }
            },
            "const" => {
                out.insert("enum".into(), json!([v]));
            }
            "properties" => {
                let props: Map<String, Value> = v
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(name, s)| (name.clone(), convert(s, defs, depth + 1)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), convert(v, defs, depth + 1));
            }
            "anyOf" | "oneOf" => {
                let branches: Vec<Value> = v
                    .as_array()
                    .map(|a| a.iter().map(|s| convert(s, defs, depth + 1)).collect())
                    .unwrap_or_default();
                out.insert("anyOf".into(), Value::Array(branches));
            }
            key if OPENAPI_KEYS.contains(&key) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

impl ProviderFormat for Gemini {
    fn provider(&self) -> Provider {
        Provider::Gemini
    }

    fn tools(&self, specs: &[ToolSpec]) -> Value {
        let declarations: Vec<Value> = specs
            .iter()
            .map(|s| {
                let mut d = json!({"name": s.name, "description": s.description});
                if self.openapi_schema {
                    d["parameters"] = openapi_schema(&s.input_schema);
                } else {
                    d["parametersJsonSchema"] = s.input_schema.clone();
                }
                d
            })
            .collect();
        json!([{"functionDeclarations": declarations}])
    }

    fn request(&self, request: &ModelRequest) -> Value {
        let mut body = json!({"contents": self.messages(&request.messages)});
        if let Some(system) = system_text(&request.messages) {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !request.tools.is_empty() {
            body["tools"] = self.tools(&request.tools);
            let config = match &request.tool_choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            };
            body["toolConfig"] = json!({"functionCallingConfig": config});
        }
        let mut generation = Map::new();
        if let Some(max) = request.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(t) = request.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(schema) = &request.response_schema {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), schema.clone());
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }

    fn parse_response(&self, body: &Value) -> Result<ModelTurn, ProviderError> {
        if let Some(e) = body.get("error") {
            return Err(ProviderError::new(
                Provider::Gemini,
                format!("the API returned an error: {e}"),
            ));
        }
        let candidate = body.pointer("/candidates/0");
        let mut turn = ModelTurn::default();
        let Some(candidate) = candidate else {
            // A prompt blocked before generation has no candidates, only `promptFeedback`.
            if let Some(reason) = body.pointer("/promptFeedback/blockReason") {
                turn.finish_reason = FinishReason::ContentFilter;
                turn.raw_finish_reason = reason.as_str().unwrap_or("").to_string();
                return Ok(turn);
            }
            return Err(ProviderError::new(
                Provider::Gemini,
                "no `candidates[0]` in the response",
            ));
        };
        if let Some(parts) = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
        {
            read_parts(parts, &mut turn);
        }
        turn.raw_finish_reason = candidate
            .get("finishReason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        turn.finish_reason = finish_reason(&turn.raw_finish_reason, !turn.tool_calls.is_empty());
        turn.usage = body.get("usageMetadata").map(usage).unwrap_or_default();
        turn.model = body
            .get("modelVersion")
            .and_then(Value::as_str)
            .map(String::from);
        Ok(turn)
    }

    fn parse_messages(&self, messages: &[Value]) -> Result<Vec<Message>, ProviderError> {
        let mut out: Vec<Message> = Vec::new();
        for (i, content) in messages.iter().enumerate() {
            let parts = content
                .get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            match content.get("role").and_then(Value::as_str) {
                Some("model") => {
                    let mut turn = ModelTurn::default();
                    read_parts(&parts, &mut turn);
                    out.push(turn.message());
                }
                Some("user") | Some("function") | None => {
                    // Responses without an id answer the earlier calls of the same name, in order.
                    let mut unanswered: Vec<(String, String)> = match out.last() {
                        Some(Message::Assistant { tool_calls, .. }) => tool_calls
                            .iter()
                            .map(|c| (c.id.clone(), c.name.clone()))
                            .collect(),
                        _ => Vec::new(),
                    };
                    let mut text = String::new();
                    for part in &parts {
                        if let Some(t) = part.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                        let Some(fr) = part.get("functionResponse") else {
                            continue;
                        };
                        let name = fr.get("name").and_then(Value::as_str).unwrap_or_default();
                        let id = match fr.get("id").and_then(Value::as_str) {
                            Some(id) => id.to_string(),
                            None => match unanswered.iter().position(|(_, n)| n == name) {
                                Some(k) => unanswered.remove(k).0,
                                None => generated_id(),
                            },
                        };
                        unanswered.retain(|(i, _)| *i != id);
                        let response = fr.get("response").cloned().unwrap_or(Value::Null);
                        push_result(
                            &mut out,
                            ToolResult {
                                call_id: id,
                                name: name.to_string(),
                                envelope: envelope_from_content(
                                    &Value::String(response.to_string()),
                                    false,
                                ),
                            },
                        );
                    }
                    if !text.is_empty() {
                        out.push(Message::user(text));
                    }
                }
                other => {
                    return Err(ProviderError::new(
                        Provider::Gemini,
                        format!("content {i} has an unknown role {other:?}"),
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
                Message::System { .. } => {}
                Message::User { content } => {
                    out.push(json!({"role": "user", "parts": [{"text": content}]}))
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut parts = Vec::new();
                    if !content.is_empty() {
                        parts.push(json!({"text": content}));
                    }
                    for c in tool_calls {
                        let mut fc = json!({"name": c.name, "args": c.arguments_object()});
                        if !c.id.starts_with(GENERATED_ID_PREFIX) {
                            fc["id"] = Value::String(c.id.clone());
                        }
                        let mut part = json!({"functionCall": fc});
                        if let Some(sig) = c
                            .provider_data
                            .as_ref()
                            .and_then(|d| d.get("thoughtSignature"))
                        {
                            part["thoughtSignature"] = sig.clone();
                        }
                        parts.push(part);
                    }
                    out.push(json!({"role": "model", "parts": parts}));
                }
                Message::Tool { results } => {
                    let parts: Vec<Value> = results
                        .iter()
                        .map(|r| {
                            let mut fr = json!({"name": r.name, "response": r.envelope.to_value()});
                            if !r.call_id.starts_with(GENERATED_ID_PREFIX) {
                                fr["id"] = Value::String(r.call_id.clone());
                            }
                            json!({"functionResponse": fr})
                        })
                        .collect();
                    out.push(json!({"role": "user", "parts": parts}));
                }
            }
        }
        out
    }
}
