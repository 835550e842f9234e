//! `NativeModel`: the core's [`ModelClient`] seam for JavaScript. A model is a JS function
//! `(request, emit) => turn` (so apps keep their own SDKs), one of the core's HTTP clients,
//! a fallback chain over other models, or a scripted model for tests.
//!
//! A function model reuses the engine's machinery for calling JavaScript: its own
//! [`Dispatcher`] (one weak threadsafe function, queued asks settled in bulk), with the JS
//! layer's wrapper of the function at index 0 of that dispatcher's app-function table. The
//! wrapper never throws: it settles `{turn}` or `{error: {kind, message, status,
//! retryAfterMs}}`. Events the function `emit`s while it answers reach the run through
//! [`JsModel::emit`], routed by the stream id the request carried.

use crate::convert::neutral::{self, invalid, js, parse};
use crate::convert::{keys, shape};
use crate::dispatcher::{AppFunction, Dispatcher};
use crate::outcome::OK;
use napi::bindgen_prelude::{Function, PromiseRaw};
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tooljig::BoxFuture;
use tooljig::agent::answer;
use tooljig::agent::http::{HttpModel, HttpModelConfig};
use tooljig::agent::{
    FallbackChain, ModelClient, ModelError, ModelErrorKind, ScriptedModel, Step, StreamSender,
};
use tooljig::providers::{ModelRequest, ModelTurn, Provider};
use tooljig::stream::StreamEvent;

/// Streams of the function model's calls in flight, by id.
#[derive(Default)]
struct Streams {
    next: AtomicU64,
    open: Mutex<HashMap<u64, StreamSender>>,
}

impl Streams {
    fn open(&self, sender: StreamSender) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, sender);
        id
    }

    fn close(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    fn get(&self, id: u64) -> Option<StreamSender> {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }
}

/// The core's `ModelClient` over a JS function.
struct FunctionModel {
    name: String,
    dispatcher: Arc<Dispatcher>,
    streams: Arc<Streams>,
}

/// Closes a call's stream however the call ends (a dropped future included).
struct CloseOnDrop(Arc<Streams>, Option<u64>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.1 {
            self.0.close(id);
        }
    }
}

/// A model's answer or a script step from JavaScript with the core's keys. `error` holds data
/// wherever else it appears; here it is the failure itself, whose keys are renamed too.
fn answer_from_js(value: Value) -> Value {
    match value {
        Value::Object(mut m) => {
            let error = m.remove("error").map(neutral::from_js);
            let mut v = neutral::from_js(Value::Object(m));
            if let (Some(e), Value::Object(v)) = (error, &mut v) {
                v.insert("error".into(), e);
            }
            v
        }
        other => other,
    }
}

/// What the JS wrapper settled with: `{turn}` or `{error}` with camelCase keys, read by the
/// core as every binding's model answers are.
fn settled_answer(kind: u8, payload: Value, name: &str) -> Result<ModelTurn, ModelError> {
    if kind != OK {
        // The wrapper catches every failure of the app's function; only a bug lands here.
        return Err(ModelError::new(
            ModelErrorKind::Other,
            format!("the model function {name:?} failed: {payload}"),
        ));
    }
    answer::answer_from_value(answer_from_js(payload))
}

impl ModelClient for FunctionModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        let stream = events.map(|tx| self.streams.open(tx));
        let guard = CloseOnDrop(self.streams.clone(), stream);
        let ask = json!({"request": js(&request), "stream": stream});
        let (token, rx) = self.dispatcher.ask(AppFunction::Resolver(0), ask);
        let dispatcher = self.dispatcher.clone();
        let name = self.name.clone();
        Box::pin(async move {
            let (kind, payload) = dispatcher.wait(token, rx, None).await;
            drop(guard);
            settled_answer(kind, payload, &name)
        })
    }
}

/// How a model is held: the chain and the script keep their own type for `status()` and
/// `requests()`.
enum Kind {
    Function {
        dispatcher: Arc<Dispatcher>,
        streams: Arc<Streams>,
    },
    Fallback(Arc<FallbackChain>),
    Scripted(Arc<ScriptedModel>),
    Other,
}

/// A model the agent can call.
#[napi(js_name = "NativeModel")]
pub struct JsModel {
    pub(crate) client: Arc<dyn ModelClient>,
    kind: Kind,
}

#[napi]
impl JsModel {
    /// A model over the JS layer's wrapper of an app function, called through
    /// `dispatch(text)` like handlers are.
    #[napi(factory)]
    pub fn from_function(name: String, dispatch: Function<String, ()>) -> napi::Result<Self> {
        let dispatcher = Arc::new(Dispatcher::new(dispatch)?);
        let streams = Arc::new(Streams::default());
        Ok(JsModel {
            client: Arc::new(FunctionModel {
                name,
                dispatcher: dispatcher.clone(),
                streams: streams.clone(),
            }),
            kind: Kind::Function {
                dispatcher,
                streams,
            },
        })
    }

    /// One of the core's HTTP clients: `kind` is `openai_compatible`, `openai_responses`,
    /// `anthropic` or `gemini`; `options`: `{baseUrl, apiKey, apiKeyEnv, timeoutMs,
    /// connectTimeoutMs, maxRetries, initialBackoffMs, maxBackoffMs, stream, strict,
    /// headers}`; `headers` (`{name: value}`) go with every request, replacing a default of
    /// the same name.
    #[napi(factory)]
    pub fn http(kind: String, model: String, options: Option<Value>) -> napi::Result<Self> {
        // Header names are the app's own spelling: taken out before option keys are renamed.
        let config = match options {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(Value::Object(mut o)) => {
                let headers = o.remove("headers").filter(|h| !h.is_null());
                let strings = |h: &Value| {
                    h.as_object()
                        .is_some_and(|m| m.values().all(Value::is_string))
                };
                if headers.as_ref().is_some_and(|h| !strings(h)) {
                    return Err(invalid(
                        "HTTP model headers",
                        "expected an object of header names to values (strings)",
                    ));
                }
                let mut config = keys::from_js(Value::Object(o), shape::HTTP_MODEL_OPTIONS);
                if let (Some(h), Value::Object(c)) = (headers, &mut config) {
                    c.insert("headers".into(), h);
                }
                config
            }
            Some(_) => return Err(invalid("HTTP model options", "must be an object")),
        };
        let config: HttpModelConfig =
            serde_json::from_value(config).map_err(|e| invalid("HTTP model options", e))?;
        let provider = Provider::from_name(&kind).map_err(|e| invalid("HTTP model", e))?;
        let m = HttpModel::from_config(provider, model, config)
            .map_err(|e| invalid("HTTP model headers", e.message))?;
        Ok(JsModel {
            client: Arc::new(m),
            kind: Kind::Other,
        })
    }

    /// A model that answers from a script: `steps` is `[{turn} | {error: {kind, message}}]`;
    /// `streaming` streams each turn as a provider would; `forever` (a turn) answers every
    /// request after the script.
    #[napi(factory)]
    pub fn scripted(
        name: String,
        steps: Vec<Value>,
        streaming: Option<bool>,
        forever: Option<Value>,
    ) -> napi::Result<Self> {
        let script = steps
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                answer::step_from_value(answer_from_js(s))
                    .map_err(|e| invalid(&format!("steps[{i}]"), e))
            })
            .collect::<napi::Result<Vec<Step>>>()?;
        let mut model = ScriptedModel::new(name, script);
        if streaming == Some(true) {
            model = model.streaming();
        }
        if let Some(turn) = forever.filter(|t| !t.is_null()) {
            let turn = answer::turn_from_value(neutral::from_js(turn))
                .map_err(|e| invalid("forever", e))?;
            model = model.then_forever(turn);
        }
        let model = model.shared();
        Ok(JsModel {
            client: model.clone(),
            kind: Kind::Scripted(model),
        })
    }

    /// The model's name (`openai:gpt-4o-mini`, the function's name, ...).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.client.name()
    }

    /// Asks the model once: resolves with the turn as JSON text (camelCase keys); rejects
    /// with `ModelError: <json>` when it fails.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn respond<'env>(
        &self,
        env: &'env Env,
        request: Value,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let request: ModelRequest = parse("request", request)?;
        let client = self.client.clone();
        env.spawn_future(async move {
            match client.respond(request, None).await {
                Ok(turn) => Ok(js(&turn).to_string()),
                Err(e) => Err(model_failed(&e)),
            }
        })
    }

    /// Breaker states of a fallback chain (`[{model, state, consecutiveFailures, successes,
    /// failures}]`); null for other models.
    #[napi]
    pub fn status(&self) -> Value {
        match &self.kind {
            Kind::Fallback(chain) => js(&chain.status()),
            _ => Value::Null,
        }
    }

    /// Every request a scripted model received, in order; null for other models.
    #[napi]
    pub fn requests(&self) -> Value {
        match &self.kind {
            Kind::Scripted(m) => js(&m.requests()),
            _ => Value::Null,
        }
    }

    /// Lets go of a function model's JS wrapper once the app no longer holds the model (as
    /// `NativeEngine.release` does for an engine); nothing for other models.
    #[napi]
    pub fn release(&self) {
        if let Kind::Function { dispatcher, .. } = &self.kind {
            dispatcher.release();
        }
    }

    /// Delivers the settlements of the function model's JS wrapper; returns what its
    /// dispatcher must do next (a drained queue), or null.
    #[napi]
    pub fn settle(&self, settled: String) -> napi::Result<Option<String>> {
        match &self.kind {
            Kind::Function { dispatcher, .. } => dispatcher.settle(&settled),
            _ => Err(napi::Error::new(Status::InvalidArg, "not a function model")),
        }
    }

    /// Events a function model emits while it answers (a JSON array text, camelCase keys), for
    /// the call whose request carried `stream`. Returns false once that call has ended or was
    /// not streamed (the events are dropped).
    #[napi]
    pub fn emit(&self, stream: u32, events: String) -> napi::Result<bool> {
        let Kind::Function { streams, .. } = &self.kind else {
            return Err(napi::Error::new(Status::InvalidArg, "not a function model"));
        };
        let values: Vec<Value> = serde_json::from_str(&events).map_err(|e| invalid("events", e))?;
        let events = values
            .into_iter()
            .enumerate()
            .map(|(i, v)| parse::<StreamEvent>(&format!("events[{i}]"), v))
            .collect::<napi::Result<Vec<_>>>()?;
        let Some(tx) = streams.get(u64::from(stream)) else {
            return Ok(false);
        };
        for e in events {
            if tx.send(e).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A model failure as the JS layer reads it: `ModelError: {kind, message, status, retryAfterMs}`.
pub fn model_failed(e: &ModelError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("ModelError: {}", js(e)))
}

/// Builds a fallback chain: models are added in order, then `build` makes the model.
#[napi(js_name = "NativeFallback")]
#[derive(Default)]
pub struct JsFallback {
    models: Vec<Arc<dyn ModelClient>>,
}

#[napi]
impl JsFallback {
    /// An empty chain.
    #[napi(constructor)]
    pub fn new() -> Self {
        JsFallback::default()
    }

    /// Adds the next model to fall back to.
    #[napi]
    pub fn add(&mut self, model: &JsModel) {
        self.models.push(model.client.clone());
    }

    /// The chain as a model: `threshold` failures in a row open a model's breaker for
    /// `cooldownMs`.
    #[napi]
    pub fn build(&self, threshold: Option<u32>, cooldown_ms: Option<u32>) -> napi::Result<JsModel> {
        if self.models.is_empty() {
            return Err(invalid("FallbackChain", "needs at least one model"));
        }
        let mut chain = FallbackChain::new(self.models.clone());
        if let Some(t) = threshold {
            chain = chain.threshold(t);
        }
        if let Some(ms) = cooldown_ms {
            chain = chain.cooldown(Duration::from_millis(u64::from(ms)));
        }
        let chain = Arc::new(chain);
        Ok(JsModel {
            client: chain.clone(),
            kind: Kind::Fallback(chain),
        })
    }
}
