//! `NativeEngine`: registers tools and runs batches for the JS layer.
//!
//! Data crosses as JSON. Specs arrive as objects (rare, at registration); calls, options and
//! results on the hot path cross as JSON text, which V8 and serde_json read and write faster
//! than napi builds objects property by property. Keys follow the rule of `keys.rs`.

use crate::cancel::JsCancel;
use crate::dispatcher::Dispatcher;
use crate::error::RegistrationProblem;
use crate::events::JsStream;
use crate::handler::JsHandler;
use crate::keys;
use napi::bindgen_prelude::{Function, PromiseRaw};
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tooljig::{
    BatchOptions, BatchResult, Call, Caller, Engine, Limits, Policy, SchemaResources, Tool,
    ToolSpec,
};

/// The engine behind the JS `Engine` class.
#[napi(js_name = "NativeEngine")]
pub struct JsEngine {
    engine: Arc<Engine>,
    dispatcher: Arc<Dispatcher>,
}

/// A batch as the core takes it, parsed from the JS layer's texts.
struct BatchInput {
    calls: Vec<Call>,
    caller: Caller,
    options: BatchOptions,
}

fn invalid(what: &str, e: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(Status::InvalidArg, format!("{what}: {e}"))
}

impl BatchInput {
    fn parse(calls: &str, options: &str, cancel: Option<&JsCancel>) -> napi::Result<Self> {
        let raw: Vec<Value> = serde_json::from_str(calls).map_err(|e| invalid("calls", e))?;
        let calls = raw
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                serde_json::from_value(keys::rename(c, keys::snake, &[]))
                    .map_err(|e| invalid(&format!("calls[{i}]"), e))
            })
            .collect::<napi::Result<Vec<Call>>>()?;
        let mut options: Map<String, Value> =
            serde_json::from_str(options).map_err(|e| invalid("options", e))?;
        let caller = match options.remove("caller") {
            None | Some(Value::Null) => Caller::default(),
            Some(c) => serde_json::from_value(keys::rename(c, keys::snake, &[]))
                .map_err(|e| invalid("options.caller", e))?,
        };
        let options = keys::rename(Value::Object(options), keys::snake, &[]);
        let mut options: BatchOptions =
            serde_json::from_value(options).map_err(|e| invalid("options", e))?;
        options.cancel = cancel.map(|c| c.token.clone());
        Ok(BatchInput {
            calls,
            caller,
            options,
        })
    }
}

/// A batch's results as the JS layer reads them: camelCase keys (the batch's and each
/// result's), envelopes and everything nested untouched.
pub fn batch_text(out: &BatchResult) -> String {
    let mut v = keys::rename(
        serde_json::to_value(out).unwrap_or(Value::Null),
        keys::camel,
        &[],
    );
    if let Some(Value::Array(results)) = v.get_mut("results") {
        for r in results.iter_mut() {
            *r = result_value(r.take());
        }
    }
    v.to_string()
}

/// One call result with camelCase keys; its envelope and arguments untouched.
pub fn result_value(result: Value) -> Value {
    keys::rename(result, keys::camel, &[])
}

#[napi]
impl JsEngine {
    /// An engine whose handlers the JS layer runs through `dispatch(text)`. `options`:
    /// `limits` (`{maxArgumentBytes, maxDepth}`) and `schemaResources` (`{uri: schema}`,
    /// documents that schemas may `$ref`).
    #[napi(constructor)]
    pub fn new(dispatch: Function<String, ()>, options: Option<Value>) -> napi::Result<Self> {
        let engine = engine_from_options(options)?;
        Ok(JsEngine {
            engine: Arc::new(engine),
            dispatcher: Arc::new(Dispatcher::new(dispatch)?),
        })
    }

    /// Registers a tool from its spec (`name`, `description`, `inputSchema`, `outputSchema`,
    /// `originalName`, `policy`; camelCase or snake_case keys). `handler` is the index of its
    /// function in the JS layer's table, or null for a client-side tool. Returns the problem
    /// when the registration is refused.
    #[napi]
    pub fn register(&self, spec: Value, handler: Option<u32>) -> Option<RegistrationProblem> {
        let spec = match parse_spec(spec) {
            Ok(spec) => spec,
            Err(problem) => return Some(problem),
        };
        let tool = match handler {
            Some(index) => Tool::new(
                spec,
                Arc::new(JsHandler::new(self.dispatcher.clone(), index)),
            ),
            None => Tool::external(spec),
        };
        self.engine
            .register(tool)
            .err()
            .map(RegistrationProblem::from)
    }

    /// The specs of every tool, in registration order (camelCase keys; schemas untouched).
    #[napi]
    pub fn specs(&self) -> Value {
        Value::Array(
            self.engine
                .specs()
                .into_iter()
                .map(|s| spec_value(&s))
                .collect(),
        )
    }

    /// Delivers the results of JS handlers, as `[[token, kind, payload], ...]` text.
    #[napi]
    pub fn settle(&self, settled: String) -> napi::Result<()> {
        self.dispatcher.settle(&settled)
    }

    /// Runs a batch: `calls` and `options` (with `caller`) as JSON text. Resolves with
    /// `{"results": [...], "durationUs": n}` as JSON text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        calls: String,
        options: String,
        cancel: Option<&JsCancel>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let input = BatchInput::parse(&calls, &options, cancel)?;
        let engine = self.engine.clone();
        env.spawn_future(async move {
            let out = engine.run(input.calls, input.caller, input.options).await;
            Ok(batch_text(&out))
        })
    }

    /// Starts a batch whose events the JS layer pulls from the returned stream.
    #[napi]
    pub fn stream(
        &self,
        calls: String,
        options: String,
        cancel: Option<&JsCancel>,
    ) -> napi::Result<JsStream> {
        let mut input = BatchInput::parse(&calls, &options, cancel)?;
        let (tx, rx) = mpsc::unbounded_channel();
        input.options.events = Some(tx);
        let engine = self.engine.clone();
        let (done_tx, done_rx) = oneshot::channel();
        napi::bindgen_prelude::spawn(async move {
            let out = engine.run(input.calls, input.caller, input.options).await;
            let _ = done_tx.send(batch_text(&out));
        });
        Ok(JsStream::new(rx, done_rx))
    }
}

/// An engine configured from the JS layer's options.
fn engine_from_options(options: Option<Value>) -> napi::Result<Engine> {
    let mut options = match options.map(|o| keys::rename(o, keys::snake, &["limits"])) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("engine options", "must be an object")),
    };
    let resources = match options.remove("schema_resources") {
        None | Some(Value::Null) => SchemaResources::default(),
        Some(r) => SchemaResources::new(
            serde_json::from_value::<HashMap<String, Value>>(r)
                .map_err(|e| invalid("engine options.schemaResources", e))?,
        ),
    };
    let mut engine = Engine::with_schema_resources(resources);
    if let Some(limits) = options.remove("limits") {
        let limits: Limits =
            serde_json::from_value(limits).map_err(|e| invalid("engine options.limits", e))?;
        engine = engine.limits(limits);
    }
    if let Some(key) = options.keys().next() {
        return Err(invalid(
            "engine options",
            format!("unknown option {key:?}; expected limits or schemaResources"),
        ));
    }
    Ok(engine)
}

/// A spec from the JS layer: keys renamed, the policy parsed on its own so its mistakes are
/// reported as `invalid_policy`.
fn parse_spec(spec: Value) -> Result<ToolSpec, RegistrationProblem> {
    let Value::Object(mut map) = keys::rename(spec, keys::snake, &[]) else {
        return Err(RegistrationProblem::new(
            "invalid_spec",
            "a tool spec must be an object",
        ));
    };
    let name = map
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let policy: Policy = match map.remove("policy") {
        None | Some(Value::Null) => Policy::default(),
        Some(p) => {
            serde_json::from_value(keys::rename(p, keys::snake, &["retry"])).map_err(|e| {
                RegistrationProblem::new(
                    "invalid_policy",
                    format!("tool {name:?}: invalid policy: {e}"),
                )
            })?
        }
    };
    let mut spec: ToolSpec = serde_json::from_value(Value::Object(map)).map_err(|e| {
        RegistrationProblem::new(
            "invalid_spec",
            format!("tool {name:?}: invalid tool spec: {e}"),
        )
    })?;
    spec.policy = policy;
    Ok(spec)
}

/// A spec with camelCase keys, its policy's too; schemas untouched.
fn spec_value(spec: &ToolSpec) -> Value {
    let v = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut v = keys::rename(v, keys::camel, &[]);
    if let Some(policy) = v.get_mut("policy") {
        *policy = keys::rename(policy.take(), keys::camel, &["retry"]);
    }
    v
}
