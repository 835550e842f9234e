//! The `Agent` class: starts runs of the core's agent loop (`tooljig::agent`) from Python.
//!
//! A run starts on the caller's event loop and is driven on the binding's tokio runtime,
//! like a batch. It reuses the batch machinery of `host.rs`: one `BatchHost` per run is
//! handed to the core (`Agent::host`), so the Python tool handlers of every batch of the run
//! start on the caller's loop, and the Python models of the run (`callable_model.rs`) go
//! through the same host, found through a tokio task-local. The run's events and outcome go
//! back through `AgentRun` (`agent_run.rs`); the state it runs is an `AgentState`
//! (`agent_state.rs`), copied into the run and written back when it returns, so a run
//! cancelled midway leaves the state as it was before it. The models are `model.rs`.

pub mod run;
pub mod state;

use crate::agent::run::{PyAgentRun, RunGuard, RunShared};
use crate::agent::state::PyAgentState;
use crate::caller::PyCaller;
use crate::engine::PyEngine;
use crate::error;
use crate::handler::{Kind, PyHandler};
use crate::host::{BatchHost, lock};
use crate::model::PyModel;
use crate::model::callable::RUN_HOST;
use crate::providers::{read, read_results, write};
use crate::runtime;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use pyo3_async_runtimes::TaskLocals;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tooljig::CallResult;
use tooljig::agent::{Agent, AgentOptions, Mode};

/// What a run does.
enum Op {
    Run(Option<Mode>),
    Send(String),
    Resume,
    ResumeWith(Vec<CallResult>),
}

/// Drives conversations: a planner (and optionally a responder) model over an engine.
#[pyclass(name = "Agent", module = "tooljig._native", frozen)]
pub struct PyAgent {
    /// The engine and models as the Python objects they are, not their Rust halves: so the
    /// cycle collector sees them (`__traverse__`), and an engine whose tool holds the agent
    /// is still freed.
    engine: Py<PyEngine>,
    planner: Py<PyModel>,
    responder: Option<Py<PyModel>>,
    options: AgentOptions,
    /// The app's pick of each turn's tools, run like a handler.
    selector: Option<Arc<dyn tooljig::Handler>>,
    /// The app's last word on each turn's plan, run like a handler.
    reviewer: Option<Arc<dyn tooljig::Handler>>,
}

#[pymethods]
impl PyAgent {
    /// An agent whose planner is `model`, over `engine`'s tools; `responder` answers after
    /// tools ran (e.g. a small planner, a larger responder); `options` is a dict of
    /// `AgentOptions` (`system`, `limits`, `mode`, `responder_tools`, `protocol`,
    /// `max_tokens`, `temperature`, `concurrency`); `select_tools` is `(invoke, is_async)` of
    /// the app's pick of each turn's tools, called like a handler with `{message, tools}`;
    /// `review_plan` the same of its review of each turn's plan, with `{message, calls, tools}`.
    #[new]
    #[pyo3(signature = (engine, model, *, responder = None, options = None, select_tools = None, review_plan = None))]
    fn new(
        engine: &Bound<'_, PyEngine>,
        model: &Bound<'_, PyModel>,
        responder: Option<&Bound<'_, PyModel>>,
        options: Option<&Bound<'_, PyAny>>,
        select_tools: Option<(Py<PyAny>, bool)>,
        review_plan: Option<(Py<PyAny>, bool)>,
    ) -> PyResult<Self> {
        let hook = |(f, is_async): (Py<PyAny>, bool)| {
            let kind = if is_async { Kind::Async } else { Kind::Sync };
            Arc::new(PyHandler::new(f, kind)) as Arc<dyn tooljig::Handler>
        };
        let options = match options.filter(|o| !o.is_none()) {
            Some(o) => read(o, "agent options")?,
            None => AgentOptions::default(),
        };
        Ok(PyAgent {
            engine: engine.clone().unbind(),
            planner: model.clone().unbind(),
            responder: responder.map(|r| r.clone().unbind()),
            options,
            selector: select_tools.map(hook),
            reviewer: review_plan.map(hook),
        })
    }

    /// Reports the engine, the models and the hooks to Python's cycle collector
    /// (`collect.rs`).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.engine)?;
        visit.call(&self.planner)?;
        visit.call(&self.responder)?;
        for hook in [&self.selector, &self.reviewer].into_iter().flatten() {
            crate::collect::traverse_handler(hook, &visit)?;
        }
        Ok(())
    }

    /// The options, as a dict.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        write(py, &self.options)
    }

    /// Starts a run of `state` on the running event loop. `op` is `"run"`, `"send"` (with
    /// `message`), `"resume"` or `"resume_with_results"` (with `results`); `mode` (`"act_first"`,
    /// `"talk_first"`, `"auto"`) applies to `"run"` and `"send"`.
    #[pyo3(signature = (state, op, *, message = None, results = None, caller = None, mode = None, events = false))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        state: &Bound<'_, PyAgentState>,
        op: &str,
        message: Option<String>,
        results: Option<&Bound<'_, PyAny>>,
        caller: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
        events: bool,
    ) -> PyResult<PyAgentRun> {
        let mode: Option<Mode> = match mode.filter(|m| !m.is_none()) {
            Some(m) => Some(read(m, "mode")?),
            None => None,
        };
        let op =
            match op {
                "run" => Op::Run(mode),
                "send" => Op::Send(message.ok_or_else(|| {
                    error::invalid_input(py, "send", "a message is required".into())
                })?),
                "resume" => Op::Resume,
                "resume_with_results" => Op::ResumeWith(match results {
                    Some(r) => read_results(r)?,
                    None => {
                        return Err(error::invalid_input(
                            py,
                            "resume_with_results",
                            "results are required".into(),
                        ));
                    }
                }),
                other => {
                    return Err(error::invalid_input(
                        py,
                        "op",
                        format!("unknown operation {other:?}"),
                    ));
                }
            };
        let caller = PyCaller::extract_from(caller)?;
        let locals = TaskLocals::with_running_loop(py)
            .map_err(|_| {
                PyRuntimeError::new_err(
                    "an agent run starts on a running event loop: `await agent.send(...)` in \
                     async code, `agent.send_sync(...)` elsewhere",
                )
            })?
            .copy_context(py)?;
        let (handle, _cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
        let cell = state.get().cell.clone();
        if cell.busy.swap(true, Ordering::SeqCst) {
            return Err(error::invalid_input(
                py,
                "agent state",
                "a run of this state is already in progress".into(),
            ));
        }
        let snapshot = lock(&cell.state).clone();
        let event_loop = locals.event_loop(py);
        let host_future = event_loop.call_method0("create_future")?;
        let host = match BatchHost::start(py, locals.clone(), host_future, false) {
            Ok(h) => h,
            Err(e) => {
                cell.busy.store(false, Ordering::SeqCst);
                return Err(e);
            }
        };
        let result = event_loop.call_method0("create_future")?;
        let shared = RunShared::new(locals, result.clone().unbind(), events);
        let mut agent = Agent::new(
            self.engine.get().inner.clone(),
            self.planner.get().inner.clone(),
        )
        .options(self.options.clone())
        .host(host.clone());
        if let Some(r) = &self.responder {
            agent = agent.responder(r.get().inner.clone());
        }
        if let Some(s) = &self.selector {
            agent = agent.select_tools(s.clone());
        }
        if let Some(r) = &self.reviewer {
            agent = agent.review_plan(r.clone());
        }
        let guard = RunGuard::new(cell.clone(), host.clone());
        let back = shared.clone();
        let task = handle.spawn(RUN_HOST.scope(host, async move {
            let mut guard = guard;
            let mut state = snapshot;
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let sink = events.then_some(tx);
            let out = {
                let run = async {
                    match op {
                        Op::Run(mode) => {
                            Ok(agent.run_with_mode(&mut state, &caller, sink, mode).await)
                        }
                        Op::Send(m) => Ok(agent.send(&mut state, m, &caller, sink).await),
                        Op::Resume => agent.resume(&mut state, &caller, sink).await,
                        Op::ResumeWith(r) => {
                            agent
                                .resume_with_results(&mut state, r, &caller, sink)
                                .await
                        }
                    }
                };
                tokio::pin!(run);
                loop {
                    tokio::select! {
                        biased;
                        Some(e) = rx.recv() => back.event(e),
                        out = &mut run => break out,
                    }
                }
            };
            while let Ok(e) = rx.try_recv() {
                back.event(e);
            }
            *lock(&cell.state) = state;
            guard.release();
            // Let go of the engine and models before the app hears the run ended, so what the
            // app then lets go of is the collector's to free (`collect.rs`).
            drop(agent);
            back.finish(out);
        }));
        let abort = task.abort_handle();
        PyAgentRun::new(py, shared, abort)
    }
}

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgent>()?;
    Ok(())
}
