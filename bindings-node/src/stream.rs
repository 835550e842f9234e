//! Streams for JavaScript: `NativeStreamParser` (a provider's server-sent events, fed as they
//! arrive, into tooljig's stream events and a model turn) and `NativeUiMessageStream`
//! (tooljig's events written in the Vercel AI SDK UI message stream protocol, for `useChat`).

// napi registers free functions only outside test builds, where they look unused.
#![cfg_attr(test, allow(dead_code))]

use crate::convert::neutral::{invalid, js, parse};
use crate::providers::{provider, provider_error};
use napi::Status;
use napi::bindgen_prelude::Buffer;
use napi::bindgen_prelude::Either;
use napi_derive::napi;
use serde_json::{Map, Value, json};
use tooljig::stream::ui_message_stream::{self, HEADERS, UiMessageStream};
use tooljig::stream::{StreamEvent, StreamParser};

/// Parses one provider's stream incrementally.
#[napi(js_name = "NativeStreamParser")]
pub struct JsStreamParser {
    parser: Option<StreamParser>,
}

fn finished() -> napi::Error {
    napi::Error::new(Status::GenericFailure, "the stream parser already finished")
}

#[napi]
impl JsStreamParser {
    /// A parser for `provider`'s stream (`openai_chat`, `openai_responses`, `anthropic`,
    /// `gemini`).
    #[napi(constructor)]
    pub fn new(provider: String) -> napi::Result<Self> {
        Ok(JsStreamParser {
            parser: Some(StreamParser::new(self::provider(&provider)?)),
        })
    }

    /// Feeds bytes (a Buffer or text) in any split; returns the events they complete.
    /// Throws `ProviderError: ...` on an error event of the provider.
    #[napi]
    pub fn push(&mut self, bytes: Either<Buffer, String>) -> napi::Result<Value> {
        let parser = self.parser.as_mut().ok_or_else(finished)?;
        let events = match &bytes {
            Either::A(b) => parser.push(b.as_ref()),
            Either::B(s) => parser.push(s.as_bytes()),
        }
        .map_err(provider_error)?;
        Ok(js(&events))
    }

    /// Ends the stream: `{events, turn}` (the last events, calls left incomplete among them,
    /// and the whole turn).
    #[napi]
    pub fn finish(&mut self) -> napi::Result<Value> {
        let parser = self.parser.take().ok_or_else(finished)?;
        let (events, turn) = parser.finish().map_err(provider_error)?;
        Ok(json!({"events": js(&events), "turn": js(&turn)}))
    }
}

/// Writes one assistant message's UI message stream.
#[napi(js_name = "NativeUiMessageStream")]
pub struct JsUiMessageStream {
    inner: UiMessageStream,
}

fn event(value: Value) -> napi::Result<StreamEvent> {
    parse("event", value)
}

#[napi]
impl JsUiMessageStream {
    /// A writer for the assistant message `messageId`.
    #[napi(constructor)]
    pub fn new(message_id: String) -> Self {
        JsUiMessageStream {
            inner: UiMessageStream::new(message_id),
        }
    }

    /// The server-sent-event frames of one tooljig event (camelCase keys, as the agent and
    /// the stream parser give them).
    #[napi]
    pub fn encode(&mut self, event: Value) -> napi::Result<String> {
        Ok(self.inner.encode(&self::event(event)?))
    }

    /// The UI chunks of one event, as objects (for apps that frame them themselves).
    #[napi]
    pub fn chunks(&mut self, event: Value) -> napi::Result<Value> {
        Ok(Value::Array(self.inner.chunks(&self::event(event)?)))
    }

    /// Closes the stream: the frames that end open parts, then `data: [DONE]`.
    #[napi]
    pub fn done(&mut self) -> String {
        self.inner.done()
    }
}

/// The response headers of a UI message stream.
#[napi]
pub fn ui_message_stream_headers() -> Value {
    Value::Object(
        HEADERS
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

/// A whole run's events as one UI message stream.
#[napi]
pub fn to_ui_message_stream(message_id: String, events: Vec<Value>) -> napi::Result<String> {
    let events = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| parse(&format!("events[{i}]"), e))
        .collect::<napi::Result<Vec<StreamEvent>>>()
        .map_err(|e| invalid("toUiMessageStream", e.reason))?;
    Ok(ui_message_stream::to_ui_message_stream(
        &message_id,
        &events,
    ))
}
