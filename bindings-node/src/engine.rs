//! `NativeEngine`: registers tools and runs batches for the JS layer.
//!
//! Data crosses as JSON. Specs arrive as objects (rare, at registration); calls, options and
//! results on the hot path cross as JSON text, which V8 and serde_json read and write faster
//! than napi builds objects property by property. Keys follow the rule of `keys.rs`.

use crate::cancel::JsCancel;
use crate::convert::{keys, shape};
use crate::dispatcher::Dispatcher;
use crate::driven::BatchFuture;
use crate::error::RegistrationProblem;
use crate::events::JsStream;
use crate::handler::JsHandler;
use crate::seams::{JsApprovalPredicate, JsPolicyHook, JsResolver};
use napi::bindgen_prelude::{Array, FnArgs, Function, PromiseRaw};
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tooljig::CancellationToken;
use tooljig::audit::AuditError;
use tooljig::{
    AuditQuery, AuditSink, BatchOptions, BatchResult, Call, Caller, Engine, EngineOptions, Nested,
    OptionsError, Settings, Tool, ToolSpec,
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
    fn parse(calls: &str, options: &str, cancel: Option<CancellationToken>) -> napi::Result<Self> {
        let calls = parse_calls(calls)?;
        let mut options: Map<String, Value> =
            serde_json::from_str(options).map_err(|e| invalid("options", e))?;
        let caller = match options.remove("caller") {
            None | Some(Value::Null) => Caller::default(),
            Some(c) => serde_json::from_value(keys::from_js(c, shape::CALLER))
                .map_err(|e| invalid("options.caller", e))?,
        };
        let options = keys::from_js(Value::Object(options), shape::BATCH_OPTIONS);
        let mut options: BatchOptions =
            serde_json::from_value(options).map_err(|e| invalid("options", e))?;
        options.cancel = cancel;
        Ok(BatchInput {
            calls,
            caller,
            options,
        })
    }
}

/// The calls of a batch from the JS layer's text. When the whole does not read, each call is
/// read alone: one whose arguments the core cannot read (a lone surrogate, nesting past what
/// `serde_json` reads) is kept with `arguments_error` set, so it alone is refused.
fn parse_calls(text: &str) -> napi::Result<Vec<Call>> {
    // Read straight into calls; only a batch that does not read so (a misspelled key, a
    // wrong type, unreadable arguments) takes the slower paths below, which say which call.
    if let Ok(calls) = serde_json::from_str::<Vec<JsCall<Value>>>(text) {
        let whole = calls.into_iter().map(|c| {
            let (arguments, call) = c.split();
            Call { arguments, ..call }
        });
        return Ok(whole.collect());
    }
    let call = |(i, c): (usize, Value)| -> napi::Result<Call> {
        serde_json::from_value(keys::from_js(c, shape::CALLER))
            .map_err(|e| invalid(&format!("calls[{i}]"), e))
    };
    let whole = match serde_json::from_str::<Vec<Value>>(text) {
        Ok(raw) => return raw.into_iter().enumerate().map(call).collect(),
        Err(e) => e,
    };
    let items = crate::convert::items::split(text).ok_or_else(|| invalid("calls", &whole))?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match serde_json::from_str::<Value>(item) {
            Ok(c) => call((i, c)),
            Err(unreadable) => {
                // Everything but the arguments, which are skipped unread.
                let head: JsCall<serde::de::IgnoredAny> = serde_json::from_str(item)
                    .map_err(|_| invalid(&format!("calls[{i}]"), &unreadable))?;
                let (_, mut call) = head.split();
                call.arguments_error = Some(unreadable.to_string());
                Ok(call)
            }
        })
        .collect()
}

/// A call as the JS layer writes it: camelCase keys (snake_case read too, as `keys::from_js`
/// reads them), unknown keys refused like the core's `Call` refuses them. `A` is what its
/// arguments are read as: a `Value`, or `IgnoredAny` for arguments that do not read.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsCall<A> {
    #[serde(default)]
    id: String,
    tool: String,
    #[serde(default)]
    arguments: A,
    #[serde(default, alias = "dependsOn")]
    depends_on: Vec<String>,
    #[serde(default, alias = "runIfDependencyFailed")]
    run_if_dependency_failed: bool,
    #[serde(default, alias = "idempotencyKey")]
    idempotency_key: Option<String>,
    #[serde(default, alias = "argumentsError")]
    arguments_error: Option<String>,
}

impl<A> JsCall<A> {
    /// Its arguments as read, and the call with `null` in their place.
    fn split(self) -> (A, Call) {
        let mut call = Call::new(self.id, self.tool, Value::Null);
        call.depends_on = self.depends_on;
        call.run_if_dependency_failed = self.run_if_dependency_failed;
        call.idempotency_key = self.idempotency_key;
        call.arguments_error = self.arguments_error;
        (self.arguments, call)
    }
}

/// Starts batch `id` (a number the JS layer picks, unique among its running batches) on the
/// JS thread (`driven.rs`) and returns what the JS layer must do now: `run` and the driver's.
fn start_run(
    engine: &Arc<Engine>,
    dispatcher: &Arc<Dispatcher>,
    id: u32,
    calls: &str,
    options: &str,
    cancel: Option<CancellationToken>,
) -> napi::Result<Option<String>> {
    let input = BatchInput::parse(calls, options, cancel)?;
    let engine = engine.clone();
    let batch: BatchFuture = Box::pin(async move {
        let out = engine.run(input.calls, input.caller, input.options).await;
        Ok(crate::convert::rows::rows_text(out))
    });
    dispatcher.start_batch(u64::from(id), batch)
}

/// A batch's results as the JS layer reads them: camelCase keys (the batch's and each
/// result's), envelopes and everything nested untouched.
pub fn batch_text(out: &BatchResult) -> String {
    crate::convert::camel_json::to_camel_json(out, shape::BATCH)
}

#[napi]
impl JsEngine {
    /// An engine whose handlers (and policy hook, resolvers) the JS layer runs through
    /// `dispatch(text)`. `options`: `limits` (`{maxArgumentBytes, maxDepth}`),
    /// `schemaResources` (`{uri: schema}`), `settings` (enabled flags), `audit` (`"memory"`,
    /// `{sqlite: path}`, `{jsonl: path}`), `policyHook` (true when the JS layer has one),
    /// `resolvers` (their names, in the JS layer's table order) and the durable-run options
    /// of `engine_durable.rs` (`stateStore`, `approvalRules`, `approvalPredicate`,
    /// `externalExpiryMs`).
    #[napi(constructor)]
    pub fn new(dispatch: Function<String, ()>, options: Option<Value>) -> napi::Result<Self> {
        // A Node process never goes on running JavaScript in a forked child (`child_process`
        // and `cluster` start new processes; addons that fork exec at once), so no child ever
        // reuses this one's random ids, and the core need not register a fork handler in the
        // addon to tell a child apart.
        tooljig::process::announce_forks();
        let dispatcher = Arc::new(Dispatcher::new(dispatch)?);
        let engine = engine_from_options(options, &dispatcher)?;
        Ok(JsEngine {
            engine: Arc::new(engine),
            dispatcher,
        })
    }

    /// Registers a tool from its spec (`name`, `description`, `inputSchema`, `outputSchema`,
    /// `originalName`, `policy`; camelCase or snake_case keys). `handler` is the index of its
    /// function in the JS layer's table, or null for a client-side tool; `present` the index of
    /// its `toModelOutput` hook, `on_success` of its `onSuccess` hook, if any. Returns the
    /// problem when the registration is refused.
    #[napi]
    pub fn register(
        &self,
        spec: Value,
        handler: Option<u32>,
        present: Option<u32>,
        on_success: Option<u32>,
    ) -> Option<RegistrationProblem> {
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
        let hook = |index| Arc::new(JsHandler::new(self.dispatcher.clone(), index));
        let tool = match present {
            Some(index) => tool.to_model_output(hook(index)),
            None => tool,
        };
        let tool = match on_success {
            Some(index) => tool.on_success(hook(index)),
            None => tool,
        };
        self.engine
            .register(tool)
            .err()
            .map(RegistrationProblem::from)
    }

    /// The specs of every tool, in registration order (camelCase keys; schemas untouched).
    /// With a caller: only the tools that caller may use, hidden parameters removed from their
    /// input schemas (what to hand a model).
    #[napi]
    pub fn specs(&self, caller: Option<Value>) -> napi::Result<Value> {
        let specs = match caller {
            None | Some(Value::Null) => self.engine.specs(),
            Some(c) => {
                let caller: Caller = serde_json::from_value(keys::from_js(c, shape::CALLER))
                    .map_err(|e| invalid("caller", e))?;
                self.engine.specs_for(&caller)
            }
        };
        Ok(Value::Array(specs.iter().map(spec_value).collect()))
    }

    /// The tools `caller` may use that best match `query`, best first, at most `limit`, as a
    /// model sees them (camelCase keys).
    #[napi]
    pub fn search_tools(
        &self,
        query: String,
        limit: u32,
        caller: Option<Value>,
    ) -> napi::Result<Value> {
        let caller: Caller = match caller {
            None | Some(Value::Null) => Caller::default(),
            Some(c) => serde_json::from_value(keys::from_js(c, shape::CALLER))
                .map_err(|e| invalid("caller", e))?,
        };
        let specs = self.engine.search_tools(&query, limit as usize, &caller);
        Ok(Value::Array(specs.iter().map(spec_value).collect()))
    }

    /// Registers the `search_tools` tool (`Engine::tool_search`); `null` or the refusal.
    #[napi]
    pub fn enable_tool_search(&self) -> Option<RegistrationProblem> {
        self.engine
            .register(self.engine.tool_search())
            .err()
            .map(RegistrationProblem::from)
    }

    /// Replaces the enabled flags (`{system, tenants, departments, users}`), for later calls.
    #[napi]
    pub fn set_settings(&self, settings: Value) -> napi::Result<()> {
        let settings: Settings =
            serde_json::from_value(settings).map_err(|e| invalid("settings", e))?;
        self.engine.set_settings(settings);
        Ok(())
    }

    /// Audit records matching `query` (`{principal, tenant, tool, callId, outcome, code,
    /// sinceMs, untilMs, limit}`), in sequence order, as JSON text (camelCase keys).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn audit<'env>(
        &self,
        env: &'env Env,
        query: Option<Value>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let sink = self.audit_sink()?;
        let query: AuditQuery = match query {
            None | Some(Value::Null) => AuditQuery::default(),
            Some(q) => serde_json::from_value(keys::from_js(q, shape::AUDIT))
                .map_err(|e| invalid("audit query", e))?,
        };
        env.spawn_future(async move {
            sink.flush().await.map_err(audit_failed)?;
            let records = sink.query(query).await.map_err(audit_failed)?;
            let records: Vec<Value> = records
                .iter()
                .map(|r| keys::to_js(serde_json::to_value(r).unwrap_or(Value::Null), shape::AUDIT))
                .collect();
            Ok(Value::Array(records).to_string())
        })
    }

    /// Walks the audit hash chain: `{records, broken}` as JSON text; `broken` names the first
    /// broken link, or is absent when the chain is intact.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn verify_audit<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        let sink = self.audit_sink()?;
        env.spawn_future(async move {
            sink.flush().await.map_err(audit_failed)?;
            let report = sink.verify().await.map_err(audit_failed)?;
            Ok(keys::to_js(
                serde_json::to_value(&report).unwrap_or(Value::Null),
                shape::AUDIT,
            )
            .to_string())
        })
    }

    /// Counters and latency histograms per tool, so far.
    #[napi]
    pub fn telemetry(&self) -> Value {
        serde_json::to_value(self.engine.telemetry()).unwrap_or(Value::Null)
    }

    /// Runs other tools for the running JS handler `token` (its `ctx.run(...)`): `calls` as
    /// JSON text; resolves with the batch result as JSON text. With `atomic`, the completed
    /// calls are compensated when one fails. Refused when its tool's policy names none
    /// (`may_call`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn call_tools<'env>(
        &self,
        env: &'env Env,
        token: i64,
        calls: String,
        atomic: Option<bool>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let tools = u64::try_from(token)
            .ok()
            .and_then(|t| self.dispatcher.tools(t));
        env.spawn_future(async move {
            let Some(tools) = tools else {
                return Err(napi::Error::new(
                    Status::GenericFailure,
                    "this call may not call tools (or has ended): name them in its policy's mayCall",
                ));
            };
            let calls = parse_calls(&calls)?;
            let nested = Nested {
                atomic: atomic.unwrap_or(false),
                ..Nested::default()
            };
            let out = tools.run_with(calls, nested).await;
            Ok(batch_text(&out))
        })
    }

    /// A running JS handler's progress report, as `[token, fraction, message, output?]` text.
    #[napi]
    pub fn progress(&self, report: String) -> napi::Result<()> {
        self.dispatcher.progress(&report)
    }

    /// Runs batch `id` (a number the JS layer picks, unique among its running batches) on
    /// the JS thread (`driven.rs`): `calls` and `options` (with `caller`) as JSON text.
    /// Returns what the JS layer must do now (a drained queue), as the driver's `settle`
    /// does; the batch's result comes in `done` of a drain, as rows (`convert/rows.rs`). The
    /// driver's `run` does the same without `cancel`, more cheaply.
    #[napi]
    pub fn run(
        &self,
        id: u32,
        calls: String,
        options: String,
        cancel: Option<&JsCancel>,
    ) -> napi::Result<Option<String>> {
        let cancel = cancel.map(|c| c.token.clone());
        start_run(&self.engine, &self.dispatcher, id, &calls, &options, cancel)
    }

    /// Lets go of the JS layer once the app no longer holds the engine (the JS `Engine` was
    /// collected): handler calls still queued fail, and the JS side can be freed. Without
    /// it, the threadsafe function that wakes JS held the JS dispatcher, which holds this
    /// object, and no engine was ever freed.
    #[napi]
    pub fn release(&self) {
        self.dispatcher.release();
    }

    /// `[run, settle]`, the two calls every batch makes, as functions bound to this engine:
    /// `run(id, calls, options)` as the method `run` without a cancel switch, and
    /// `settle(settled)`, which delivers the results of JS handlers as `[[token, kind,
    /// payload], ...]` text and returns what the JS layer must do next (a drained queue), or
    /// null. Plain functions, because napi-rs's glue for a method checks the receiver's
    /// class and records its borrow in a process-wide table on every call: 6% of a one-call
    /// batch from Node.
    #[napi(
        ts_return_type = "[(id: number, calls: string, options: string) => string | null, (settled: string) => string | null]"
    )]
    pub fn driver<'env>(&self, env: &'env Env) -> napi::Result<Array<'env>> {
        let (engine, dispatcher) = (self.engine.clone(), self.dispatcher.clone());
        let run = env.create_function_from_closure::<FnArgs<(u32, String, String)>, _, _>(
            "run",
            move |ctx| {
                let (id, calls, options): (u32, String, String) =
                    (ctx.get(0)?, ctx.get(1)?, ctx.get(2)?);
                start_run(&engine, &dispatcher, id, &calls, &options, None)
            },
        )?;
        let dispatcher = self.dispatcher.clone();
        let settle = env.create_function_from_closure::<String, _, _>("settle", move |ctx| {
            dispatcher.settle(&ctx.get::<String>(0)?)
        })?;
        let mut driver = env.create_array(2)?;
        driver.set(0, run)?;
        driver.set(1, settle)?;
        Ok(driver)
    }

    /// Starts a batch whose events the JS layer pulls from the returned stream.
    #[napi]
    pub fn stream(
        &self,
        calls: String,
        options: String,
        cancel: Option<&JsCancel>,
    ) -> napi::Result<JsStream> {
        let mut input = BatchInput::parse(&calls, &options, cancel.map(|c| c.token.clone()))?;
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

/// Engine-wide options of the JS layer, as `NativeEngine`'s constructor reads them.
const ENGINE_OPTIONS: &str = "limits, schemaResources, settings, audit, policyHook, resolvers, \
     stateStore, rateLimiter, resultCache, approvalRules, approvalPredicate, externalExpiryMs, runLeaseMs, sealKey, auditAnchor";

fn audit_failed(e: AuditError) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("audit: {e}"))
}

impl JsEngine {
    /// The core engine, for the agent loop (`agent.rs`).
    pub(crate) fn core(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// The dispatcher of the engine's JS functions, for compensations (`engine_durable.rs`).
    pub(crate) fn dispatcher(&self) -> Arc<Dispatcher> {
        self.dispatcher.clone()
    }

    fn audit_sink(&self) -> napi::Result<Arc<dyn AuditSink>> {
        self.engine.audit().cloned().ok_or_else(|| {
            napi::Error::new(
                Status::InvalidArg,
                "this engine keeps no audit log; create it with the audit option",
            )
        })
    }
}

/// An engine configured from the JS layer's options: the data options go to the core's one
/// parser ([`EngineOptions`]); `policyHook: true`, `resolvers: [names]` (resolver i is
/// `resolvers[i]`) and `approvalPredicate: true` say which app functions the JS layer holds.
fn engine_from_options(
    options: Option<Value>,
    dispatcher: &Arc<Dispatcher>,
) -> napi::Result<Engine> {
    let mut options = match options.map(|o| keys::from_js(o, shape::ENGINE_OPTIONS)) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("engine options", "must be an object")),
    };
    let policy_hook = options.remove("policy_hook") == Some(Value::Bool(true));
    let predicate = options.remove("approval_predicate") == Some(Value::Bool(true));
    let resolvers: Vec<String> = match options.remove("resolvers") {
        None | Some(Value::Null) => Vec::new(),
        Some(names) => {
            serde_json::from_value(names).map_err(|e| invalid("engine options.resolvers", e))?
        }
    };
    let refused = |e: OptionsError| {
        if EngineOptions::NAMES.contains(&e.option.as_str()) {
            invalid(
                &format!("engine options.{}", keys::camel(&e.option)),
                e.message,
            )
        } else {
            invalid(
                "engine options",
                format!(
                    "unknown option {:?}; expected {ENGINE_OPTIONS}",
                    keys::camel(&e.option)
                ),
            )
        }
    };
    let mut engine = EngineOptions::from_value(Value::Object(options))
        .and_then(EngineOptions::build)
        .map_err(refused)?;
    if policy_hook {
        engine = engine.with_policy_hook(Arc::new(JsPolicyHook::new(dispatcher.clone())));
    }
    for (i, name) in resolvers.into_iter().enumerate() {
        engine = engine.with_resolver(
            name,
            Arc::new(JsResolver::new(dispatcher.clone(), i as u32)),
        );
    }
    if predicate {
        engine =
            engine.with_approval_predicate(Arc::new(JsApprovalPredicate::new(dispatcher.clone())));
    }
    Ok(engine)
}

/// The binding's own objects nested in a policy whose camelCase keys a spec may use.
/// A spec from the JS layer (camelCase or snake_case keys, its policy's too), read by the
/// core's one spec parser.
fn parse_spec(spec: Value) -> Result<ToolSpec, RegistrationProblem> {
    ToolSpec::from_value(keys::from_js(spec, shape::SPEC_IN)).map_err(RegistrationProblem::from)
}

/// A spec with camelCase keys, its policy's too; schemas untouched.
pub fn spec_value(spec: &ToolSpec) -> Value {
    keys::to_js(
        serde_json::to_value(spec).unwrap_or(Value::Null),
        shape::SPEC_OUT,
    )
}
