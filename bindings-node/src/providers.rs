//! Provider formats for JavaScript: `NativeProvider` (one provider's wire format) and the
//! pure helpers around it (`ModelTurn` batches, OpenAI strict mode, the JSON-structured
//! protocol). Everything is a pure function of its input; neutral values cross
//! with camelCase keys (`neutral.rs`), provider-shaped values untouched.

// napi registers free functions only outside test builds, where they look unused.
#![cfg_attr(test, allow(dead_code))]

use crate::convert::neutral::{invalid, js, parse};
use napi::Status;
use napi_derive::napi;
use serde::Deserialize;
use serde_json::{Value, json};
use tooljig::providers::json_protocol::{self, JsonProtocol};
use tooljig::providers::{
    Anthropic, Gemini, Message, ModelRequest, ModelTurn, OpenAiChat, OpenAiResponses, Provider,
    ProviderFormat, strict,
};
use tooljig::{CallResult, ToolSpec};

/// Options of a provider's format (camelCase at the JS edge).
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct FormatOptions {
    /// OpenAI formats: offer tools in strict mode.
    strict: bool,
    /// Ask the model for one call at a time.
    sequential_tool_calls: bool,
    /// Gemini: declare parameters in the OpenAPI subset.
    openapi_schema: bool,
}

/// A provider from its name or one of the core's aliases (`openai_chat`, `openaiChat`, ...).
pub fn provider(name: &str) -> napi::Result<Provider> {
    Provider::from_name(name).map_err(|e| invalid("provider", e))
}

fn format(provider: Provider, o: &FormatOptions) -> Box<dyn ProviderFormat> {
    match provider {
        Provider::OpenAiChat => Box::new(OpenAiChat {
            strict: o.strict,
            sequential_tool_calls: o.sequential_tool_calls,
        }),
        Provider::OpenAiResponses => Box::new(OpenAiResponses {
            strict: o.strict,
            sequential_tool_calls: o.sequential_tool_calls,
        }),
        Provider::Anthropic => Box::new(Anthropic {
            sequential_tool_calls: o.sequential_tool_calls,
        }),
        Provider::Gemini => Box::new(Gemini {
            openapi_schema: o.openapi_schema,
        }),
    }
}

/// Tool specs as `Engine.specs()` gives them (camelCase) or as the core spells them.
pub fn specs(value: Value) -> napi::Result<Vec<ToolSpec>> {
    parse("specs", value)
}

fn results(value: Value) -> napi::Result<Vec<CallResult>> {
    parse("results", value)
}

/// A provider's response or stream was not in its format: thrown with this prefix so the JS
/// layer can raise its `ProviderError`.
pub fn provider_error(e: tooljig::providers::ProviderError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("ProviderError: {e}"))
}

/// One provider's wire format.
#[napi(js_name = "NativeProvider")]
pub struct JsProvider {
    format: Box<dyn ProviderFormat>,
}

#[napi]
impl JsProvider {
    /// The format of `name` with `options` (`{strict, sequentialToolCalls, openapiSchema}`).
    #[napi(constructor)]
    pub fn new(name: String, options: Option<Value>) -> napi::Result<Self> {
        let options: FormatOptions = match options {
            None | Some(Value::Null) => FormatOptions::default(),
            Some(o) => parse("provider options", o)?,
        };
        Ok(JsProvider {
            format: format(provider(&name)?, &options),
        })
    }

    /// The provider's canonical name (`openai_chat`, ...), whichever alias built it.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.format.provider().name().to_string()
    }

    /// The request's tool definitions for these specs.
    #[napi]
    pub fn tools(&self, specs: Value) -> napi::Result<Value> {
        Ok(self.format.tools(&self::specs(specs)?))
    }

    /// The whole request body for a neutral request (`{model, messages, tools, toolChoice,
    /// maxTokens, temperature, stream, responseSchema}`).
    #[napi]
    pub fn request(&self, request: Value) -> napi::Result<Value> {
        let request: ModelRequest = parse("request", request)?;
        Ok(self.format.request(&request))
    }

    /// A non-streamed response body as a model turn; throws `ProviderError: ...` when it is
    /// not in the provider's format.
    #[napi]
    pub fn parse_response(&self, body: Value) -> napi::Result<Value> {
        let turn = self.format.parse_response(&body).map_err(provider_error)?;
        Ok(js(&turn))
    }

    /// The conversation in the provider's shape.
    #[napi]
    pub fn messages(&self, messages: Value) -> napi::Result<Value> {
        let messages: Vec<Message> = parse("messages", messages)?;
        Ok(Value::Array(self.format.messages(&messages)))
    }

    /// A conversation in the provider's shape as neutral messages.
    #[napi]
    pub fn parse_messages(&self, messages: Vec<Value>) -> napi::Result<Value> {
        let parsed = self
            .format
            .parse_messages(&messages)
            .map_err(provider_error)?;
        Ok(js(&parsed))
    }

    /// The exact messages or blocks to append after a batch (`Engine.run`'s results).
    #[napi]
    pub fn tool_results(&self, results: Value) -> napi::Result<Value> {
        Ok(Value::Array(
            self.format.tool_results(&self::results(results)?),
        ))
    }
}

/// A model turn's calls to run, and the refusals of calls cut off mid-arguments:
/// `{calls, refused}`.
#[napi]
pub fn model_turn_into_batch(turn: Value) -> napi::Result<Value> {
    let turn: ModelTurn = parse("turn", turn)?;
    let (calls, refused) = turn.into_batch();
    let refused: Vec<Value> = refused.iter().map(|r| js(&r.to_value())).collect();
    Ok(json!({"calls": js(&calls), "refused": refused}))
}

/// The turn with the `null`s of OpenAI strict mode removed from optional fields.
#[napi]
pub fn model_turn_drop_strict_nulls(turn: Value, specs: Value) -> napi::Result<Value> {
    let mut turn: ModelTurn = parse("turn", turn)?;
    turn.drop_strict_nulls(&self::specs(specs)?);
    Ok(js(&turn))
}

/// A tool's input schema rewritten for OpenAI strict mode; throws why when it cannot be.
#[napi]
pub fn to_strict(schema: Value) -> napi::Result<Value> {
    strict::to_strict(&schema).map_err(|e| napi::Error::new(Status::InvalidArg, e))
}

fn protocol(options: Option<Value>) -> napi::Result<JsonProtocol> {
    match options {
        None | Some(Value::Null) => Ok(JsonProtocol::default()),
        Some(o) => parse("JSON protocol options", o),
    }
}

/// The JSON Schema of a JSON-protocol answer for these tools.
#[napi]
pub fn json_protocol_response_schema(options: Option<Value>, specs: Value) -> napi::Result<Value> {
    Ok(protocol(options)?.response_schema(&self::specs(specs)?))
}

/// The system-prompt text describing these tools for the JSON protocol.
#[napi]
pub fn json_protocol_prompt(options: Option<Value>, specs: Value) -> napi::Result<String> {
    Ok(protocol(options)?.prompt(&self::specs(specs)?))
}

/// A JSON-protocol answer parsed into a batch: `{plan: {calls, reasoning, repaired}}`, or
/// `{error: {code, message}}` when it is not a plan.
#[napi]
pub fn json_protocol_parse(options: Option<Value>, text: String) -> napi::Result<Value> {
    Ok(match protocol(options)?.parse(&text) {
        Ok(plan) => json!({"plan": js(&plan)}),
        Err(e) => json!({"error": serde_json::to_value(&e).unwrap_or(Value::Null)}),
    })
}

/// Every result of a batch as one message for the model.
#[napi]
pub fn json_protocol_format_results(results: Value) -> napi::Result<String> {
    Ok(json_protocol::format_results(&self::results(results)?))
}
