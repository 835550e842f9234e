//! Provider formats: tooljig's tools, calls and results in each model API's own wire format.
//!
//! A conversation is kept provider-neutral ([`Message`]) and converted at the edge, so the
//! same run can talk to OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or
//! Gemini, and a model's answer ([`ModelTurn`]) becomes tooljig [`Call`]s whatever its source.
//! Each format converts three ways, so a conversation round-trips through the real format:
//!
//! - registry specs → the request's tool definitions ([`ProviderFormat::tools`]);
//! - a response body → a [`ModelTurn`]: text, tool calls (order and ids kept), finish reason,
//!   usage ([`ProviderFormat::parse_response`]);
//! - results → the exact messages or content blocks to append ([`ProviderFormat::tool_results`]).
//!
//! ```
//! use serde_json::json;
//! use tooljig::providers::{Anthropic, ProviderFormat};
//! use tooljig::{Call, CallResult, Envelope, ToolSpec};
//! let specs = [ToolSpec::new("get_weather", "Weather.", json!({"type": "object"}))];
//! let f = Anthropic::default();
//! assert_eq!(f.tools(&specs)[0]["input_schema"], json!({"type": "object"}));
//! let turn = f.parse_response(&json!({"content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
//!     "stop_reason": "tool_use"})).unwrap();
//! let (calls, _refused) = turn.into_batch();
//! assert_eq!(calls[0].id, "toolu_1");
//! let result = CallResult::refused("toolu_1", "get_weather", Envelope::Ok(json!({"temp_c": 4})));
//! assert_eq!(f.tool_results(&[result])[0]["content"][0]["tool_use_id"], "toolu_1");
//! ```
//!
//! The JSON-structured protocol (any model that can emit JSON) lives in
//! [`json_protocol`]; OpenAI strict-mode schema conversion in [`strict`].

pub mod anthropic;
pub mod gemini;
pub mod json_protocol;
pub mod openai_chat;
pub mod openai_responses;
pub mod strict;

use crate::call::{Call, CallResult};
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use anthropic::Anthropic;
pub use gemini::Gemini;
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;

/// The model APIs tooljig speaks.
///
/// Each has one canonical name (`openai_chat`, `openai_responses`, `anthropic`, `gemini`),
/// which serde and [`Provider::name`] write; [`Provider::from_name`] and serde also read the
/// aliases in [`Provider::ALIASES`], so every binding accepts the same spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Provider {
    /// OpenAI Chat Completions, and every server that copies it (Ollama, vLLM, llama.cpp).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl From<Provider> for &'static str {
    fn from(p: Provider) -> Self {
        p.name()
    }
}

impl TryFrom<String> for Provider {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        Provider::from_name(&name)
    }
}

impl Provider {
    /// Every provider, in the order errors list them.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// The other spellings accepted for a provider: the bindings' idioms (camelCase in
    /// JavaScript) and the names people reach for (`openai`, `openai_compatible`).
    pub const ALIASES: &'static [(&'static str, Provider)] = &[
        ("openai", Provider::OpenAiChat),
        ("openaiChat", Provider::OpenAiChat),
        ("openai_compatible", Provider::OpenAiChat),
        ("openaiCompatible", Provider::OpenAiChat),
        ("openaiResponses", Provider::OpenAiResponses),
    ];

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai_chat",
            Provider::OpenAiResponses => "openai_responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider a name or alias stands for; the error lists the canonical names.
    pub fn from_name(name: &str) -> Result<Provider, String> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .or_else(|| {
                Provider::ALIASES
                    .iter()
                    .find(|(alias, _)| *alias == name)
                    .map(|(_, p)| *p)
            })
            .ok_or_else(|| {
                let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown provider {name:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }

    /// The format with default options.
    pub fn format(self) -> Box<dyn ProviderFormat> {
        match self {
            Provider::OpenAiChat => Box::new(OpenAiChat::default()),
            Provider::OpenAiResponses => Box::new(OpenAiResponses::default()),
            Provider::Anthropic => Box::new(Anthropic::default()),
            Provider::Gemini => Box::new(Gemini::default()),
        }
    }
}

/// One message of a provider-neutral conversation. Serializable, so a suspended run can be
/// stored and resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instructions.
        content: String,
    },
    /// What the user said.
    User {
        /// The text.
        content: String,
    },
    /// What the model said: text, tool calls, or both.
    Assistant {
        /// Text shown to the user (may be empty).
        #[serde(default)]
        content: String,
        /// Tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The results of one batch of tool calls, in call order.
    Tool {
        /// One per call.
        results: Vec<ToolResult>,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// A tool call as a model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_...`, `toolu_...`); generated when the provider has none.
    pub id: String,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// A JSON string (OpenAI) or a JSON value (Anthropic, Gemini), exactly as received.
    pub arguments: Value,
    /// The stream ended before the arguments were complete; the call is never executed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// What the provider needs echoed back with this call (a Responses item id, a Gemini
    /// thought signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Value>,
}

impl ToolCall {
    /// A complete call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<Value>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            incomplete: false,
            provider_data: None,
        }
    }

    /// The arguments as JSON text (OpenAI wants a string).
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            Value::Null => "{}".to_string(),
            other => other.to_string(),
        }
    }

    /// The arguments as a JSON object (Anthropic and Gemini want one). Text that does not
    /// parse gives an empty object: the call it belongs to was refused anyway.
    pub fn arguments_object(&self) -> Value {
        match &self.arguments {
            Value::String(s) => crate::arguments::parse_text(s, &Default::default())
                .map(|p| p.value)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| Value::Object(Default::default())),
            Value::Object(_) => self.arguments.clone(),
            _ => Value::Object(Default::default()),
        }
    }
}

/// The result of one call, as the model will read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The call's id.
    pub call_id: String,
    /// The tool's name (Gemini answers by name).
    pub name: String,
    /// What the model sees.
    pub envelope: Envelope,
}

impl ToolResult {
    /// The model's view of a finished call.
    pub fn from_result(result: &CallResult) -> Self {
        ToolResult {
            call_id: result.call_id.clone(),
            name: result.tool.clone(),
            envelope: result.model_envelope(),
        }
    }

    /// The envelope as JSON text, the content every provider's tool message carries.
    pub fn content(&self) -> String {
        serde_json::to_string(&self.envelope).unwrap_or_default()
    }

    /// Whether the call did not produce data (Anthropic's `is_error`).
    pub fn is_error(&self) -> bool {
        !self.envelope.is_ok()
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It wants tool calls run.
    ToolCalls,
    /// It hit the output token limit (anything after was cut).
    Length,
    /// A content filter stopped it.
    ContentFilter,
    /// It refused.
    Refusal,
    /// The stream ended without saying why (a dropped connection).
    Unfinished,
    /// Anything else.
    Other,
}

impl FinishReason {
    /// The AI SDK spelling (`stop`, `tool-calls`, `length`, ...).
    pub fn ai_sdk(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter | FinishReason::Refusal => "content-filter",
            FinishReason::Unfinished => "error",
            FinishReason::Other => "other",
        }
    }
}

/// Tokens used by one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another call's usage.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// What one model call produced, whatever the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    /// The text, concatenated.
    #[serde(default)]
    pub content: String,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// The provider's own word for it (`end_turn`, `tool_calls`, `MAX_TOKENS`, ...).
    #[serde(default)]
    pub raw_finish_reason: String,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// A refusal message, when the provider sends one apart from the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The model that answered, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Default for ModelTurn {
    fn default() -> Self {
        ModelTurn {
            content: String::new(),
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            raw_finish_reason: String::new(),
            usage: Usage::default(),
            refusal: None,
            model: None,
        }
    }
}

impl ModelTurn {
    /// A turn that answers in text.
    pub fn text(content: impl Into<String>) -> Self {
        ModelTurn {
            content: content.into(),
            ..Default::default()
        }
    }

    /// A turn that makes tool calls.
    pub fn calls(calls: Vec<ToolCall>) -> Self {
        ModelTurn {
            tool_calls: calls,
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        }
    }

    /// The assistant message to append to the conversation.
    pub fn message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }

    /// The calls to run, and the results of calls that must never run: a call whose
    /// arguments were cut off is refused here as `incomplete_arguments`, before the engine.
    pub fn into_batch(&self) -> (Vec<Call>, Vec<CallResult>) {
        let mut run = Vec::new();
        let mut refused = Vec::new();
        for c in &self.tool_calls {
            if c.incomplete {
                refused.push(incomplete_result(c));
            } else {
                run.push(Call::new(c.id.clone(), c.name.clone(), c.arguments.clone()));
            }
        }
        (run, refused)
    }

    /// Removes the `null`s that OpenAI strict mode makes a model send for optional fields,
    /// so the arguments validate against the tool's original schema. Call it on turns from
    /// a request whose tools were converted with [`strict::to_strict`].
    pub fn drop_strict_nulls(&mut self, specs: &[ToolSpec]) {
        for call in &mut self.tool_calls {
            let Some(spec) = specs.iter().find(|s| s.name == call.name) else {
                continue;
            };
            let mut value = match &call.arguments {
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(v) => v,
                    // Broken text goes to the engine as is, to be repaired or refused.
                    Err(_) => continue,
                },
                other => other.clone(),
            };
            strict::drop_optional_nulls(&mut value, &spec.input_schema);
            call.arguments = value;
        }
    }
}

/// The refusal of a call whose arguments were cut off.
pub fn incomplete_result(call: &ToolCall) -> CallResult {
    CallResult::refused(
        call.id.clone(),
        call.name.clone(),
        Envelope::error(
            ErrorCode::IncompleteArguments,
            "the response was cut off inside this call's arguments; the call was not executed, send it again complete",
        ),
    )
}

/// Whether the model may, must or must not call tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must answer in text.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// Everything a model call needs, provider-neutral.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model's name at the provider.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call (empty: none).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Whether it may, must or must not call them.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Ask for a server-sent-event stream.
    #[serde(default)]
    pub stream: bool,
    /// Constrain the answer to JSON of this schema (the JSON-structured protocol): OpenAI's
    /// `response_format`, Gemini's `responseJsonSchema`; Anthropic relies on the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

/// A response body that is not what the provider's format promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{provider:?} response: {message}")]
pub struct ProviderError {
    /// Whose format.
    pub provider: Provider,
    /// What is wrong with it.
    pub message: String,
}

impl ProviderError {
    /// An error about `provider`'s format.
    pub fn new(provider: Provider, message: impl Into<String>) -> Self {
        ProviderError {
            provider,
            message: message.into(),
        }
    }
}

/// One provider's wire format. Implementations are plain option structs; every method is pure.
pub trait ProviderFormat: Send + Sync {
    /// Which provider this is.
    fn provider(&self) -> Provider;

    /// The request's tool definitions for these specs.
    fn tools(&self, specs: &[ToolSpec]) -> Value;

    /// The whole request body: model, conversation, tools, tool choice, limits, stream flag.
    fn request(&self, request: &ModelRequest) -> Value;

    /// A (non-streamed) response body as a [`ModelTurn`].
    fn parse_response(&self, body: &Value) -> Result<ModelTurn, ProviderError>;

    /// The provider's messages (or items, or contents) for a neutral conversation. System
    /// messages are left out where the provider takes them apart ([`ProviderFormat::request`]
    /// puts them where they belong).
    fn messages(&self, messages: &[Message]) -> Vec<Value>;

    /// The inverse of [`ProviderFormat::messages`]: a conversation in the provider's shape
    /// (an app's own history) as neutral messages. Tool results that are not tooljig
    /// envelopes become `ok` data (or an `internal_error` when marked as errors).
    fn parse_messages(&self, messages: &[Value]) -> Result<Vec<Message>, ProviderError>;

    /// The exact messages or content blocks to append after running these calls.
    fn tool_results(&self, results: &[CallResult]) -> Vec<Value> {
        let results: Vec<ToolResult> = results.iter().map(ToolResult::from_result).collect();
        self.messages(&[Message::Tool { results }])
    }
}

/// System messages joined, for providers that take the instructions apart.
pub(crate) fn system_text(messages: &[Message]) -> Option<String> {
    let parts: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A tool message's content as an envelope: tooljig's own, or the provider's text taken as
/// data (JSON when it parses), or as an error when the provider marked it as one.
pub(crate) fn envelope_from_content(content: &Value, is_error: bool) -> Envelope {
    let text = match content {
        Value::String(s) => s.clone(),
        // Anthropic and OpenAI allow a list of text parts.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if let Ok(env) = serde_json::from_str::<Envelope>(&text)
        && serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("ok").cloned())
            .is_some()
    {
        return env;
    }
    if is_error {
        return Envelope::error(ErrorCode::InternalError, text);
    }
    Envelope::Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Text of a message content that is a string or a list of text parts.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The name of the call `id` among the conversation's assistant messages.
pub(crate) fn call_name(messages: &[Message], id: &str) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.name.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Adds a result to the trailing `Tool` message, or starts one.
/// Files a tool's output read back from a provider's message: the call's id under `id_key`,
/// its content under `content_key` (text, text parts or an envelope's JSON), named after the
/// call it answers.
pub(crate) fn push_output(
    out: &mut Vec<Message>,
    item: &Value,
    id_key: &str,
    content_key: &str,
    is_error: bool,
) {
    let call_id = item
        .get(id_key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = call_name(out, &call_id);
    let envelope = envelope_from_content(item.get(content_key).unwrap_or(&Value::Null), is_error);
    push_result(
        out,
        ToolResult {
            call_id,
            name,
            envelope,
        },
    );
}

pub(crate) fn push_result(out: &mut Vec<Message>, result: ToolResult) {
    if let Some(Message::Tool { results }) = out.last_mut() {
        results.push(result);
    } else {
        out.push(Message::Tool {
            results: vec![result],
        });
    }
}

/// Reads a token count that may be missing.
pub(crate) fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::Provider;

    #[test]
    fn names_and_aliases_read_the_same_in_serde_and_from_name() {
        for p in Provider::ALL {
            assert_eq!(Provider::from_name(p.name()), Ok(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
        for (alias, p) in Provider::ALIASES {
            assert_eq!(Provider::from_name(alias), Ok(*p));
            assert_eq!(
                serde_json::from_value::<Provider>((*alias).into()).unwrap(),
                *p
            );
        }
        let e = Provider::from_name("open_ai_chat").unwrap_err();
        assert!(
            e.contains("openai_chat, openai_responses, anthropic, gemini"),
            "{e}"
        );
    }
}
