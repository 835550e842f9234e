//! `Engine`: the core engine, with tools whose handlers are Python callables.

use crate::batch::PyBatch;
use crate::caller::PyCaller;
use crate::convert;
use crate::driven::BatchFuture;
use crate::durable;
use crate::error::{self, IntoPyErr};
use crate::handler::{Kind, PyHandler};
use crate::host::{BatchHost, Msg};
use crate::runtime;
use crate::seams::{PyApprovalPredicate, PyPolicyHook, PyResolver};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};
use pyo3_async_runtimes::TaskLocals;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::audit::AuditError;
use tooljig::{
    AuditQuery, AuditSink, BatchOptions, Engine, EngineOptions, Settings, Tool, ToolSpec,
};

/// Most calls a batch polled on the event loop's thread may have (`driven.rs`). Up to here,
/// what polling there saves (a thread hand-over a handler, 10–40 µs on this project's machine)
/// outweighs the batch's own work running before its handlers instead of beside them: a
/// 10-call batch of `async def` handlers takes 14 µs a call polled there against 26 µs on a
/// worker, a 100-call one 14 µs against 10 (`docs/benchmarks-archive-2026.md`, "A batch's calls
/// polled in its own task").
const DRIVEN_CALLS: usize = 32;

/// The native engine. The package's `tooljig.Engine` wraps it with the decorator, `run`,
/// `run_sync` and `stream`.
#[pyclass(name = "Engine", module = "tooljig._native", frozen)]
pub struct PyEngine {
    pub(crate) inner: Arc<Engine>,
}

#[pymethods]
impl PyEngine {
    /// An engine. `limits` sets the argument limits (`max_argument_bytes`, `max_depth`);
    /// `schema_resources` maps URIs to schema documents that `$ref`s may name (nothing is
    /// fetched over the network).
    #[new]
    #[pyo3(signature = (
        *,
        limits = None,
        schema_resources = None,
        settings = None,
        approval_rules = None,
        external_expiry_ms = None,
        run_lease_ms = None,
        audit = None,
        policy_hook = None,
        resolvers = None,
        state_store = None,
        rate_limiter = None,
        result_cache = None,
        approval_predicate = None,
        seal_key = None,
        audit_anchor = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        limits: Option<&Bound<'_, PyAny>>,
        schema_resources: Option<&Bound<'_, PyDict>>,
        settings: Option<&Bound<'_, PyAny>>,
        approval_rules: Option<&Bound<'_, PyAny>>,
        external_expiry_ms: Option<u64>,
        run_lease_ms: Option<u64>,
        audit: Option<&Bound<'_, PyAny>>,
        policy_hook: Option<(Py<PyAny>, bool)>,
        resolvers: Option<HashMap<String, (Py<PyAny>, bool)>>,
        state_store: Option<&Bound<'_, PyAny>>,
        rate_limiter: Option<&Bound<'_, PyAny>>,
        result_cache: Option<&Bound<'_, PyAny>>,
        approval_predicate: Option<(Py<PyAny>, bool)>,
        seal_key: Option<&Bound<'_, PyAny>>,
        audit_anchor: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // The data options go to the core's one parser; only the app's callables are wired here.
        let data = [
            ("limits", limits),
            ("schema_resources", schema_resources.map(|r| r.as_any())),
            ("settings", settings),
            ("approval_rules", approval_rules),
            ("audit", audit),
            ("state_store", state_store),
            ("rate_limiter", rate_limiter),
            ("result_cache", result_cache),
            ("seal_key", seal_key),
            ("audit_anchor", audit_anchor),
        ];
        let mut options = serde_json::Map::new();
        for (name, value) in data {
            if let Some(value) = value.filter(|v| !v.is_none()) {
                let value = convert::from_py(value)
                    .map_err(|e| error::invalid_input(py, name, e.to_string()))?;
                options.insert(name.into(), value);
            }
        }
        if let Some(ms) = external_expiry_ms {
            options.insert("external_expiry_ms".into(), ms.into());
        }
        if let Some(ms) = run_lease_ms {
            options.insert("run_lease_ms".into(), ms.into());
        }
        let mut engine = EngineOptions::from_value(Value::Object(options))
            .and_then(EngineOptions::build)
            .map_err(|e| error::invalid_input(py, &e.option, e.message))?;
        if let Some((hook, is_async)) = policy_hook {
            engine = engine.with_policy_hook(Arc::new(PyPolicyHook::new(hook, is_async)));
        }
        for (name, (resolver, is_async)) in resolvers.unwrap_or_default() {
            engine = engine.with_resolver(name, Arc::new(PyResolver::new(resolver, is_async)));
        }
        if let Some((predicate, is_async)) = approval_predicate {
            engine = engine
                .with_approval_predicate(Arc::new(PyApprovalPredicate::new(predicate, is_async)));
        }
        Ok(PyEngine {
            inner: Arc::new(engine),
        })
    }

    /// Registers a tool from its spec (a dict as `specs()` exports it) and an invoker
    /// `invoke(arguments, ctx)`; without an invoker the tool is client-side. `present` is
    /// `(invoke, is_async)` of its `to_model_output` hook, called like a handler with the data;
    /// `on_success` the same of the hook run after each successful call, with
    /// `{"arguments", "result"}`. `sync_to_thread=False` runs a sync invoker on the caller's
    /// event loop instead of a worker thread (`handler.rs`). `takes_ctx=False`: the invoker
    /// ignores its second argument, so it gets `None` there and no context is made.
    #[pyo3(signature = (spec, invoke, is_async, present=None, on_success=None, sync_to_thread=true, takes_ctx=true))]
    #[allow(clippy::too_many_arguments)] // the Python method's keywords, one each
    fn register(
        &self,
        py: Python<'_>,
        spec: &Bound<'_, PyAny>,
        invoke: Option<Py<PyAny>>,
        is_async: bool,
        present: Option<(Py<PyAny>, bool)>,
        on_success: Option<(Py<PyAny>, bool)>,
        sync_to_thread: bool,
        takes_ctx: bool,
    ) -> PyResult<()> {
        let value = convert::from_py(spec)
            .map_err(|e| error::invalid_spec(py, format!("the tool spec is not JSON: {e}")))?;
        let spec = ToolSpec::from_value(value).map_err(|e| e.into_py_err(py))?;
        let tool = match invoke {
            Some(f) => {
                let kind = match (is_async, sync_to_thread) {
                    (true, _) => Kind::Async,
                    (false, true) => Kind::Sync,
                    (false, false) => Kind::SyncOnLoop,
                };
                let handler = PyHandler::new(f, kind);
                let handler = if takes_ctx {
                    handler
                } else {
                    handler.without_ctx()
                };
                Tool::new(spec, Arc::new(handler))
            }
            None => Tool::external(spec),
        };
        let hook = |(f, is_async): (Py<PyAny>, bool)| {
            let kind = if is_async { Kind::Async } else { Kind::Sync };
            Arc::new(PyHandler::new(f, kind))
        };
        let tool = match present {
            Some(f) => tool.to_model_output(hook(f)),
            None => tool,
        };
        let tool = match on_success {
            Some(f) => tool.on_success(hook(f)),
            None => tool,
        };
        self.inner.register(tool).map_err(|e| e.into_py_err(py))
    }

    /// Starts an operation on durable runs (`{"op": "resume", "run_id": ...}`, ...; see
    /// `durable.rs`) on the running event loop; returns its future.
    fn durable<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        durable::start(py, self.inner.clone(), args)
    }

    /// Starts the approval inbox on `bind` for the operators `tokens` names (token → caller),
    /// or those `auth` (`(hook, is_async)`) accepts.
    #[pyo3(signature = (tokens, bind, auth=None))]
    fn serve_inbox(
        &self,
        py: Python<'_>,
        tokens: &Bound<'_, PyAny>,
        bind: String,
        auth: Option<(Py<PyAny>, bool)>,
    ) -> PyResult<crate::inbox::PyInboxServer> {
        crate::inbox::serve(py, self.inner.clone(), tokens, bind, auth)
    }

    /// Serves the engine's tools over Streamable HTTP (options as `McpServeOptions` JSON;
    /// `auth` is `(hook, is_async)`); returns the running server.
    #[pyo3(signature = (options, auth=None))]
    fn serve_mcp_http(
        &self,
        py: Python<'_>,
        options: &Bound<'_, PyAny>,
        auth: Option<(Py<PyAny>, bool)>,
    ) -> PyResult<crate::mcp::PyMcpServer> {
        crate::mcp::serve_http(py, self.inner.clone(), options, auth)
    }

    /// Serves the engine's tools over stdin and stdout; the future resolves when the client
    /// disconnects.
    fn serve_mcp_stdio<'py>(
        &self,
        py: Python<'py>,
        options: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::mcp::serve_stdio(py, self.inner.clone(), options)
    }

    /// Connects to an MCP server and registers its tools: `(client, future of names)`.
    fn mcp_connect<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        options: &Bound<'py, PyAny>,
    ) -> PyResult<(crate::mcp::PyMcpClient, Bound<'py, PyAny>)> {
        crate::mcp::connect(py, self.inner.clone(), target, options)
    }

    /// Registers `invoke(input, ctx)` as the compensation of `tool`, run by a rollback with
    /// `{"arguments": ..., "result": ...}` of the call it undoes.
    fn compensate_with(&self, tool: String, invoke: Py<PyAny>, is_async: bool) {
        let kind = if is_async { Kind::Async } else { Kind::Sync };
        self.inner
            .compensate_with(tool, Arc::new(PyHandler::new(invoke, kind)));
    }

    /// Reports to Python's cycle collector the app's callables this engine alone holds
    /// (`collect.rs`), so an engine whose handler holds it is freed.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        crate::collect::traverse(&self.inner, &visit)
    }

    /// The enabled flags in force, as a dict.
    #[getter]
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = serde_json::to_value(self.inner.settings().as_ref()).unwrap_or(Value::Null);
        convert::to_py(py, &value)
    }

    /// Replaces the enabled flags; every call that starts after this sees them.
    #[setter]
    fn set_settings(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let settings: Settings =
            convert::from_py_as(value).map_err(|e| error::invalid_input(py, "settings", e))?;
        self.inner.set_settings(settings);
        Ok(())
    }

    /// The specs to hand a model for `caller`: only the tools it may use, hidden parameters
    /// removed from their input schemas.
    #[pyo3(signature = (caller = None))]
    fn specs_for<'py>(
        &self,
        py: Python<'py>,
        caller: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let caller = PyCaller::extract_from(caller)?;
        let specs = serde_json::to_value(self.inner.specs_for(&caller)).unwrap_or(Value::Null);
        convert::to_py(py, &specs)
    }

    /// The tools `caller` may use that best match `query`, best first, at most `limit`, as a
    /// model sees them.
    #[pyo3(signature = (query, limit, caller = None))]
    fn search_tools<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        limit: usize,
        caller: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let caller = PyCaller::extract_from(caller)?;
        let specs = self.inner.search_tools(query, limit, &caller);
        convert::to_py(py, &serde_json::to_value(specs).unwrap_or(Value::Null))
    }

    /// Registers one tool per operation of an OpenAPI document (`options` as
    /// `OpenApiOptions` reads them); returns the report (`registered`, `skipped`).
    fn register_openapi<'py>(
        &self,
        py: Python<'py>,
        document: &Bound<'py, PyAny>,
        options: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::imports::register_openapi(py, &self.inner, document, options)
    }

    /// Registers the `search_tools` tool (`Engine::tool_search`).
    fn enable_tool_search(&self, py: Python<'_>) -> PyResult<()> {
        self.inner
            .register(self.inner.tool_search())
            .map_err(|e| e.into_py_err(py))
    }

    /// Counters and latency histograms per tool, so far, as a dict.
    fn telemetry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let snapshot = serde_json::to_value(self.inner.telemetry()).unwrap_or(Value::Null);
        convert::to_py(py, &snapshot)
    }

    /// Audit records matching `query` (a dict of the core's `AuditQuery`: `principal`,
    /// `tenant`, `tool`, `call_id`, `outcome`, `code`, `since_ms`, `until_ms`, `limit`), as
    /// dicts in sequence order. Blocks (detached) until the log is durable and read.
    #[pyo3(signature = (query = None))]
    fn audit_query<'py>(
        &self,
        py: Python<'py>,
        query: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let query: AuditQuery = match query.filter(|q| !q.is_none()) {
            Some(q) => {
                convert::from_py_as(q).map_err(|e| error::invalid_input(py, "audit query", e))?
            }
            None => AuditQuery::default(),
        };
        let sink = self.audit_sink(py)?;
        let records = block_on(py, async move {
            sink.flush().await?;
            sink.query(query).await
        })?;
        convert::to_py(py, &serde_json::to_value(records).unwrap_or(Value::Null))
    }

    /// Walks the audit log's hash chain: `{"records": n, "broken": None | {"seq", "reason"}}`.
    fn verify_audit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let sink = self.audit_sink(py)?;
        let report = block_on(py, async move {
            sink.flush().await?;
            sink.verify().await
        })?;
        convert::to_py(py, &serde_json::to_value(report).unwrap_or(Value::Null))
    }

    /// Provider-neutral specs of every tool, in registration order, as dicts.
    fn specs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let specs = serde_json::to_value(self.inner.specs()).unwrap_or(Value::Null);
        convert::to_py(py, &specs)
    }

    /// Starts a batch on the running event loop and returns its handle. `calls` is a list of
    /// call dicts, `caller` a `Caller` or a dict, `options` a dict of batch options.
    #[pyo3(signature = (calls, caller = None, options = None, events = false))]
    fn start(
        &self,
        py: Python<'_>,
        calls: &Bound<'_, PyAny>,
        caller: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
        events: bool,
    ) -> PyResult<PyBatch> {
        let calls = crate::calls::calls_from_py(py, calls)?;
        let caller = PyCaller::extract_from(caller)?;
        let mut options: BatchOptions = match options {
            Some(d) => {
                convert::from_py_as(d).map_err(|e| error::invalid_input(py, "options", e))?
            }
            None => BatchOptions::default(),
        };
        let locals = TaskLocals::with_running_loop(py)
            .map_err(|_| {
                PyRuntimeError::new_err(
                    "a batch starts on a running event loop: `await engine.run(...)` in async \
                     code, `engine.run_sync(...)` elsewhere",
                )
            })?
            .copy_context(py)?;
        let (handle, cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
        let future = locals
            .event_loop(py)
            .call_method0(intern!(py, "create_future"))?;
        let host = BatchHost::start(py, locals, future.clone(), events)?;
        options.cancel = Some(cancel.clone());
        options.host = Some(host.clone());
        let engine = self.inner.clone();
        let poster = host.clone();
        let small = calls.len() <= DRIVEN_CALLS;
        let batch: BatchFuture = if events {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            options.events = Some(tx);
            Box::pin(async move {
                let run = engine.run(calls, caller, options);
                tokio::pin!(run);
                let out = loop {
                    tokio::select! {
                        biased;
                        Some(event) = rx.recv() => poster.post(Msg::Event(event)),
                        out = &mut run => break out,
                    }
                };
                // Everything the batch emitted is in the channel by now.
                while let Ok(event) = rx.try_recv() {
                    poster.post(Msg::Event(event));
                }
                poster.post(Msg::Done(out));
            })
        } else {
            Box::pin(async move {
                let out = engine.run(calls, caller, options).await;
                poster.post(Msg::Done(out));
            })
        };
        if small && host.can_drive() {
            // Its calls run in the batch's own task: polled here, a handler starts and ends
            // on this thread with no hand-over (`driven.rs`).
            host.drive(py, batch, handle);
        } else {
            // A large batch's own work (parsing, validation, audit records) runs on a worker
            // beside its handlers on this thread, not before them. (And a loop without a
            // socket to watch cannot be polled safely: `can_drive`.)
            handle.spawn(batch);
        }
        // Added only now, and only to a batch still running: one that ended in its first
        // poll has nothing left to cancel, and a done callback would be a loop callback
        // queued per batch, piling up while a caller awaits such batches back to back
        // without the loop ever turning (nothing else can touch the future before this
        // returns: it is made and resolved on this thread).
        if !future.call_method0(intern!(py, "done"))?.is_truthy()? {
            host.cancel_with(py, &cancel)?;
        }
        Ok(PyBatch::new(host, cancel, future.unbind()))
    }
}

impl PyEngine {
    fn audit_sink(&self, py: Python<'_>) -> PyResult<Arc<dyn AuditSink>> {
        self.inner.audit().cloned().ok_or_else(|| {
            error::invalid_input(
                py,
                "audit",
                "this engine keeps no audit log; create it with Engine(audit=...)".into(),
            )
        })
    }
}

/// Runs an audit read on the runtime, detached from the interpreter, and maps a storage
/// failure to `OSError`.
fn block_on<T: Send>(
    py: Python<'_>,
    work: impl std::future::Future<Output = Result<T, AuditError>> + Send,
) -> PyResult<T> {
    let (handle, _cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    py.detach(|| handle.block_on(work))
        .map_err(|e| PyOSError::new_err(format!("audit: {e}")))
}
