//! The agent loop: `Agent`, `AgentState`, `Model` and a run's handle `AgentRun`, over the
//! core's `tooljig::agent`.
//!
//! A run starts on the caller's event loop and is driven on the binding's tokio runtime,
//! like a batch. It reuses the batch machinery of `host.rs`: one `BatchHost` per run is
//! handed to the core (`Agent::host`), so the Python tool handlers of every batch of the run
//! start on the caller's loop, and the model callables of the run go through the same host,
//! found through a tokio task-local:
//!
//! - a Python model `(request, emit) -> answer` is called on a worker thread (`workers.rs`)
//!   in a copy of the caller's `contextvars` context, so a blocking SDK call never blocks the
//!   loop; when it is `async def`, the coroutine it returns is awaited as a task on the loop.
//!   `emit(event)` streams events as the model produces them. The package's wrapper turns the
//!   callable's return value or `tooljig.ModelError` into `{"turn": ...}` / `{"error": ...}`.
//! - the run's stream events and its outcome go back to the loop through
//!   `loop.call_soon_threadsafe`, one wake-up for whatever piled up since the last.
//!
//! The `AgentState` is copied into the run and written back when the run returns, so a run
//! cancelled midway leaves the state as it was before it.

use crate::caller::PyCaller;
use crate::convert;
use crate::engine::PyEngine;
use crate::error;
use crate::host::{AbandonGuard, Awaitable, BatchHost, Msg, Start, TaskSlot};
use crate::outcome;
use crate::providers::{read, read_results, write};
use crate::runtime;
use crate::workers;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3_async_runtimes::TaskLocals;
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::AbortHandle;
use tooljig::agent::http::HttpModel;
use tooljig::agent::{
    Agent, AgentOptions, AgentState, FallbackChain, Mode, ModelClient, ModelError, ModelErrorKind,
    RunOutcome, ScriptedModel, Step, StreamSender,
};
use tooljig::providers::{ModelRequest, ModelTurn};
use tooljig::stream::StreamEvent;
use tooljig::{BatchResult, BoxFuture, CallResult, HandlerError, ToolError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

tokio::task_local! {
    /// The host of the run being driven: where its Python model calls start.
    static RUN_HOST: Arc<BatchHost>;
}

// ---------------------------------------------------------------------------------------
// Models

/// A model written in Python: the package's wrapper around the user's callable.
struct PyCallableModel {
    name: String,
    invoke: Arc<Py<PyAny>>,
}

/// What the package's wrapper returns.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Turn(ModelTurn),
    Error(ModelError),
}

impl ModelClient for PyCallableModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        let Ok(host) = RUN_HOST.try_with(Arc::clone) else {
            return Box::pin(async {
                Err(ModelError::new(
                    ModelErrorKind::Other,
                    "a Python model was called outside an agent run started from Python",
                ))
            });
        };
        let request = match serde_json::to_value(&request) {
            Ok(r) => r,
            Err(e) => {
                let message = format!("the request does not serialize: {e}");
                return Box::pin(
                    async move { Err(ModelError::new(ModelErrorKind::Other, message)) },
                );
            }
        };
        let (slot, rx) = TaskSlot::new();
        let guard = AbandonGuard::new(slot.clone(), host.clone());
        let invoke = self.invoke.clone();
        let job: workers::Job =
            Box::new(move |py| call_model(py, &invoke, request, events, slot, &host));
        if workers::submit(job).is_err() {
            return Box::pin(async {
                Err(ModelError::new(
                    ModelErrorKind::Other,
                    "the interpreter is shutting down; the model was not called",
                ))
            });
        }
        Box::pin(async move {
            let outcome = rx.await;
            drop(guard);
            match outcome {
                Ok(Ok(value)) => match serde_json::from_value::<Answer>(value) {
                    Ok(Answer::Turn(turn)) => Ok(turn),
                    Ok(Answer::Error(e)) => Err(e),
                    Err(e) => Err(ModelError::new(
                        ModelErrorKind::BadResponse,
                        format!("the Python model's answer is not a turn: {e}"),
                    )),
                },
                Ok(Err(e)) => Err(ModelError::new(ModelErrorKind::Other, handler_message(e))),
                Err(_) => Err(ModelError::new(
                    ModelErrorKind::Other,
                    "the model call was dropped before it answered (the interpreter is exiting)",
                )),
            }
        })
    }
}

fn handler_message(e: HandlerError) -> String {
    match e {
        HandlerError::Tool(t) => format!("{}: {}", t.code.as_str(), t.message),
        HandlerError::Needs(fields) => format!("the model raised Needs({fields:?})"),
        HandlerError::Unexpected { detail } => format!("the Python model raised: {detail}"),
    }
}

/// Calls the model's wrapper on a worker thread; an awaitable it returns goes to the loop.
fn call_model(
    py: Python<'_>,
    invoke: &Py<PyAny>,
    request: Value,
    events: Option<StreamSender>,
    slot: Arc<TaskSlot>,
    host: &Arc<BatchHost>,
) {
    let called = (|| -> PyResult<Bound<'_, PyAny>> {
        let request = convert::to_py(py, &request)?;
        let emit = Py::new(
            py,
            PyEmit {
                tx: Mutex::new(events),
            },
        )?;
        host.context(py)
            .call_method0(pyo3::intern!(py, "copy"))?
            .call_method1(pyo3::intern!(py, "run"), (invoke.bind(py), request, emit))
    })();
    match called {
        Ok(value)
            if value
                .hasattr(pyo3::intern!(py, "__await__"))
                .unwrap_or(false) =>
        {
            host.post(Msg::Start(Start {
                what: Awaitable::Object(value.unbind()),
                slot,
            }))
        }
        Ok(value) => slot.finish(outcome::from_value(&value)),
        Err(e) => slot.finish(Err(outcome::from_error(py, &e))),
    }
}

/// `emit(event)`: hands a stream event (a dict tagged by `type`) to the run as the model
/// produces it. Does nothing when nobody listens or once the model call is over.
#[pyclass(name = "Emit", module = "tooljig._native", frozen)]
pub struct PyEmit {
    tx: Mutex<Option<StreamSender>>,
}

#[pymethods]
impl PyEmit {
    fn __call__(&self, event: &Bound<'_, PyAny>) -> PyResult<()> {
        let event: StreamEvent = read(event, "stream event")?;
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send(event);
        }
        Ok(())
    }

    /// Whether the run streams (events are shown as they come).
    #[getter]
    fn streaming(&self) -> bool {
        lock(&self.tx).as_ref().is_some_and(|tx| !tx.is_closed())
    }
}

/// A model the agent can call: a Python callable, an HTTP API, a fallback chain, or a
/// script for tests.
#[pyclass(name = "Model", module = "tooljig._native", frozen)]
pub struct PyModel {
    inner: Arc<dyn ModelClient>,
    scripted: Option<Arc<ScriptedModel>>,
    fallback: Option<Arc<FallbackChain>>,
}

impl PyModel {
    fn plain(inner: Arc<dyn ModelClient>) -> Self {
        PyModel {
            inner,
            scripted: None,
            fallback: None,
        }
    }
}

/// A step of a script: a turn dict, or `{"error": {"kind": ..., "message": ...}}`.
fn script_step(obj: &Bound<'_, PyAny>) -> PyResult<Step> {
    let value = convert::from_py(obj)?;
    if let Some(e) = value
        .get("error")
        .filter(|_| value.get("finish_reason").is_none())
    {
        let e: ModelError = serde_json::from_value(e.clone())
            .map_err(|e| error::invalid_input(obj.py(), "script step", e.to_string()))?;
        return Ok(Step::Fail(e));
    }
    let turn: ModelTurn = serde_json::from_value(value)
        .map_err(|e| error::invalid_input(obj.py(), "script step", e.to_string()))?;
    Ok(Step::Turn(turn))
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[pymethods]
impl PyModel {
    /// A model over `invoke(request, emit)`, the package's wrapper of a user callable.
    #[staticmethod]
    fn callable(name: String, invoke: Py<PyAny>) -> Self {
        PyModel::plain(Arc::new(PyCallableModel {
            name,
            invoke: Arc::new(invoke),
        }))
    }

    /// A model that answers from `steps` (turn dicts or `{"error": {...}}`), in order;
    /// `streaming` streams each turn like a provider; `then_forever` answers every request
    /// after the script.
    #[staticmethod]
    #[pyo3(signature = (name, steps, *, streaming = false, then_forever = None))]
    fn scripted(
        name: String,
        steps: &Bound<'_, PyAny>,
        streaming: bool,
        then_forever: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let steps = steps
            .try_iter()?
            .map(|s| script_step(&s?))
            .collect::<PyResult<Vec<Step>>>()?;
        let mut model = ScriptedModel::new(name, steps);
        if streaming {
            model = model.streaming();
        }
        if let Some(turn) = then_forever.filter(|t| !t.is_none()) {
            model = model.then_forever(read(turn, "then_forever")?);
        }
        let model = Arc::new(model);
        Ok(PyModel {
            inner: model.clone(),
            scripted: Some(model),
            fallback: None,
        })
    }

    /// A model behind an HTTP API: `provider` is `"openai_chat"` (any Chat Completions
    /// server), `"openai_responses"`, `"anthropic"` or `"gemini"`. Unset options keep the
    /// core's defaults (key from the provider's environment variable, streaming, 3 retries
    /// with backoff from 500 ms to 20 s, 120 s request and 10 s connect timeouts).
    #[staticmethod]
    #[pyo3(signature = (
        provider,
        model,
        *,
        base_url = None,
        api_key = None,
        api_key_env = None,
        stream = None,
        strict = false,
        timeout_ms = None,
        connect_timeout_ms = None,
        max_retries = None,
        initial_backoff_ms = None,
        max_backoff_ms = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn http(
        py: Python<'_>,
        provider: &str,
        model: String,
        base_url: Option<String>,
        api_key: Option<String>,
        api_key_env: Option<String>,
        stream: Option<bool>,
        strict: bool,
        timeout_ms: Option<u64>,
        connect_timeout_ms: Option<u64>,
        max_retries: Option<u32>,
        initial_backoff_ms: Option<u64>,
        max_backoff_ms: Option<u64>,
    ) -> PyResult<Self> {
        use tooljig::providers::Provider;
        let mut m = match crate::providers::provider_named(py, provider)? {
            Provider::OpenAiChat => HttpModel::openai_compatible(model),
            Provider::OpenAiResponses => HttpModel::openai_responses(model),
            Provider::Anthropic => HttpModel::anthropic(model),
            Provider::Gemini => HttpModel::gemini(model),
        };
        if let Some(url) = base_url {
            m = m.base_url(url);
        }
        if let Some(key) = api_key {
            m = m.api_key(key);
        }
        if let Some(var) = api_key_env {
            m = m.api_key_env(var);
        }
        if let Some(s) = stream {
            m = m.stream(s);
        }
        if strict {
            m = m.strict();
        }
        if timeout_ms.is_some() || connect_timeout_ms.is_some() {
            m = m.timeouts(
                ms(timeout_ms.unwrap_or(120_000)),
                ms(connect_timeout_ms.unwrap_or(10_000)),
            );
        }
        if max_retries.is_some() || initial_backoff_ms.is_some() || max_backoff_ms.is_some() {
            m = m.retries(
                max_retries.unwrap_or(3),
                ms(initial_backoff_ms.unwrap_or(500)),
                ms(max_backoff_ms.unwrap_or(20_000)),
            );
        }
        Ok(PyModel::plain(Arc::new(m)))
    }

    /// A chain that sends each request to the first model whose circuit breaker is closed,
    /// and on to the next on failure. `threshold` failures in a row open a breaker for
    /// `cooldown_ms`.
    #[staticmethod]
    #[pyo3(signature = (models, *, threshold = None, cooldown_ms = None))]
    fn fallback(
        py: Python<'_>,
        models: &Bound<'_, PyAny>,
        threshold: Option<u32>,
        cooldown_ms: Option<u64>,
    ) -> PyResult<Self> {
        let mut list = Vec::new();
        for m in models.try_iter()? {
            let m = m?;
            let m = m.cast::<PyModel>().map_err(|_| {
                error::invalid_input(py, "models", "every model must be a tooljig Model".into())
            })?;
            list.push(m.get().inner.clone());
        }
        if list.is_empty() {
            return Err(error::invalid_input(
                py,
                "models",
                "a fallback chain needs at least one model".into(),
            ));
        }
        let mut chain = FallbackChain::new(list);
        if let Some(t) = threshold {
            chain = chain.threshold(t);
        }
        if let Some(c) = cooldown_ms {
            chain = chain.cooldown(ms(c));
        }
        let chain = Arc::new(chain);
        Ok(PyModel {
            inner: chain.clone(),
            scripted: None,
            fallback: Some(chain),
        })
    }

    /// The model's name (`openai:gpt-4o-mini`, the callable's name, ...).
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Every request a scripted model received, in order, as dicts.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self
            .scripted
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a scripted model records requests"))?;
        write(py, &s.requests())
    }

    /// Steps of a scripted model not yet played.
    fn remaining(&self) -> PyResult<usize> {
        let s = self
            .scripted
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a scripted model has a script"))?;
        Ok(s.remaining())
    }

    /// Each circuit breaker of a fallback chain, as dicts.
    fn breakers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let f = self
            .fallback
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a fallback chain has breakers"))?;
        write(py, &f.status())
    }

    fn __repr__(&self) -> String {
        format!("Model({:?})", self.inner.name())
    }
}

// ---------------------------------------------------------------------------------------
// State

struct StateCell {
    state: Mutex<AgentState>,
    busy: AtomicBool,
}

/// A conversation run's state: serializable, so a suspended run can be stored and resumed.
#[pyclass(name = "AgentState", module = "tooljig._native", frozen)]
pub struct PyAgentState {
    cell: Arc<StateCell>,
}

impl PyAgentState {
    fn wrap(state: AgentState) -> Self {
        PyAgentState {
            cell: Arc::new(StateCell {
                state: Mutex::new(state),
                busy: AtomicBool::new(false),
            }),
        }
    }

    fn value(&self) -> Value {
        serde_json::to_value(&*lock(&self.cell.state)).unwrap_or(Value::Null)
    }

    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, self.value().get(key).unwrap_or(&Value::Null))
    }
}

#[pymethods]
impl PyAgentState {
    /// A conversation starting with the user's `message`, or continuing `messages`
    /// (neutral message dicts), or empty.
    #[new]
    #[pyo3(signature = (message = None, *, messages = None))]
    fn new(message: Option<String>, messages: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut state = match messages.filter(|m| !m.is_none()) {
            Some(m) => AgentState::from_messages(read(m, "messages")?),
            None => AgentState::from_messages(Vec::new()),
        };
        if let Some(text) = message {
            state.messages.push(tooljig::providers::Message::user(text));
        }
        Ok(PyAgentState::wrap(state))
    }

    /// The state as JSON text, to store a suspended run.
    fn to_json(&self) -> String {
        lock(&self.cell.state).to_json()
    }

    /// A state stored with `to_json`.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        AgentState::from_json(text)
            .map(PyAgentState::wrap)
            .map_err(|e| error::invalid_input(py, "agent state", e.to_string()))
    }

    /// The whole state as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.value())
    }

    /// The run's id.
    #[getter]
    fn run_id(&self) -> String {
        lock(&self.cell.state).run_id.clone()
    }

    /// The conversation, as neutral message dicts.
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "messages")
    }

    /// Where the run stands, as a dict (`{"status": "finished", "reason": "answered"}`).
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "status")
    }

    /// The run's counters, as a dict.
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "counters")
    }

    /// The last answer or clarifying question.
    #[getter]
    fn answer(&self) -> String {
        lock(&self.cell.state).answer.clone()
    }

    /// Whether a run of this state is in progress.
    #[getter]
    fn running(&self) -> bool {
        self.cell.busy.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------------------
// Runs

/// What a run does.
enum Op {
    Run(Option<Mode>),
    Send(String),
    Resume,
    ResumeWith(Vec<CallResult>),
}

struct Side {
    events: Option<VecDeque<StreamEvent>>,
    waiter: Option<Py<PyAny>>,
    outcome: Option<Result<RunOutcome, ToolError>>,
    done: bool,
}

/// A run's way back to the loop.
struct RunShared {
    locals: TaskLocals,
    result: Py<PyAny>,
    wake_pending: AtomicBool,
    side: Mutex<Side>,
}

impl RunShared {
    fn event(self: &Arc<Self>, e: StreamEvent) {
        if let Some(q) = lock(&self.side).events.as_mut() {
            q.push_back(e);
        }
        self.wake();
    }

    fn finish(self: &Arc<Self>, out: Result<RunOutcome, ToolError>) {
        lock(&self.side).outcome = Some(out);
        self.wake();
    }

    /// Schedules `deliver` on the loop unless it is already scheduled.
    fn wake(self: &Arc<Self>) {
        if self.wake_pending.swap(true, Ordering::SeqCst) || runtime::shutting_down() {
            return;
        }
        let shared = self.clone();
        let _ = Python::try_attach(move |py| -> PyResult<()> {
            let deliver = Py::new(py, Deliver(shared.clone()))?;
            shared
                .locals
                .event_loop(py)
                .call_method1("call_soon_threadsafe", (deliver,))?;
            Ok(())
        });
    }

    /// Runs on the loop: hands over events and the outcome.
    fn deliver(&self, py: Python<'_>) -> PyResult<()> {
        self.wake_pending.store(false, Ordering::SeqCst);
        let mut side = lock(&self.side);
        let outcome = side.outcome.take();
        if outcome.is_some() {
            side.done = true;
        }
        let ready = side.events.as_ref().is_some_and(|q| !q.is_empty()) || side.done;
        let waiter = if ready { side.waiter.take() } else { None };
        let events = match waiter {
            Some(_) => Some(take_events(py, &mut side)?),
            None => None,
        };
        drop(side);
        if let (Some(w), Some(events)) = (waiter, events) {
            resolve(w.bind(py), events)?;
        }
        if let Some(out) = outcome {
            let future = self.result.bind(py);
            match out {
                Ok(o) => resolve(future, write(py, &o)?)?,
                Err(e) => {
                    if !future.call_method0("done")?.is_truthy()? {
                        let err = error::invalid_input(py, "resume", e.message);
                        future.call_method1("set_exception", (err.value(py),))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn next_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let future = self.locals.event_loop(py).call_method0("create_future")?;
        let mut side = lock(&self.side);
        if side.events.is_none() {
            return Err(PyRuntimeError::new_err(
                "this run was not started with events",
            ));
        }
        if side.waiter.is_some() {
            return Err(PyRuntimeError::new_err(
                "next_events() is already awaited for this run",
            ));
        }
        if side.events.as_ref().is_some_and(|q| !q.is_empty()) || side.done {
            let events = take_events(py, &mut side)?;
            drop(side);
            future.call_method1("set_result", (events,))?;
        } else {
            side.waiter = Some(future.clone().unbind());
        }
        Ok(future)
    }
}

fn take_events<'py>(py: Python<'py>, side: &mut Side) -> PyResult<Bound<'py, PyAny>> {
    let events: Vec<StreamEvent> = side
        .events
        .as_mut()
        .map(|q| q.drain(..).collect())
        .unwrap_or_default();
    let list = PyList::empty(py);
    for e in &events {
        list.append(write(py, e)?)?;
    }
    Ok(list.into_any())
}

fn resolve(future: &Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<()> {
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    future.call_method1("set_result", (value,))?;
    Ok(())
}

#[pyclass(frozen)]
struct Deliver(Arc<RunShared>);

#[pymethods]
impl Deliver {
    fn __call__(&self, py: Python<'_>) {
        if let Err(e) = self.0.deliver(py) {
            e.write_unraisable(py, None);
        }
    }
}

/// The result future's done callback: a cancelled future aborts the run.
#[pyclass(frozen)]
struct AbortOnCancelled(AbortHandle);

#[pymethods]
impl AbortOnCancelled {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.abort();
        }
        Ok(())
    }
}

/// Ends a run's bookkeeping however its task ends (finished or aborted): the state is free
/// again, and the host stops watching the loop once its tasks are done.
struct RunGuard {
    cell: Arc<StateCell>,
    host: Arc<BatchHost>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.cell.busy.store(false, Ordering::SeqCst);
        self.host.post(Msg::Done(BatchResult {
            results: Vec::new(),
            duration_us: 0,
            run_id: None,
            rollback: None,
        }));
    }
}

/// A run started by `Agent.start`: its outcome future, its events, and a way to cancel it.
#[pyclass(name = "AgentRun", module = "tooljig._native", frozen)]
pub struct PyAgentRun {
    shared: Arc<RunShared>,
    abort: AbortHandle,
}

#[pymethods]
impl PyAgentRun {
    /// The asyncio future of the outcome dict (`status`, `answer`, `counters`).
    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.shared.result.bind(py).clone()
    }

    /// A future of the stream events (dicts) since the last call: at least one, or an
    /// empty list once the run is done and every event was taken.
    fn next_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.shared.next_events(py)
    }

    /// Aborts the run; its state stays as it was before the run.
    fn cancel(&self) {
        self.abort.abort();
    }
}

// ---------------------------------------------------------------------------------------
// Agent

/// Drives conversations: a planner (and optionally a responder) model over an engine.
#[pyclass(name = "Agent", module = "tooljig._native", frozen)]
pub struct PyAgent {
    engine: Arc<tooljig::Engine>,
    planner: Arc<dyn ModelClient>,
    responder: Option<Arc<dyn ModelClient>>,
    options: AgentOptions,
}

#[pymethods]
impl PyAgent {
    /// An agent whose planner is `model`, over `engine`'s tools; `responder` answers after
    /// tools ran (seed 000: a small planner, a larger responder); `options` is a dict of
    /// `AgentOptions` (`system`, `limits`, `mode`, `responder_tools`, `protocol`,
    /// `max_tokens`, `temperature`, `concurrency`).
    #[new]
    #[pyo3(signature = (engine, model, *, responder = None, options = None))]
    fn new(
        engine: &Bound<'_, PyEngine>,
        model: &Bound<'_, PyModel>,
        responder: Option<&Bound<'_, PyModel>>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = match options.filter(|o| !o.is_none()) {
            Some(o) => read(o, "agent options")?,
            None => AgentOptions::default(),
        };
        Ok(PyAgent {
            engine: engine.get().inner.clone(),
            planner: model.get().inner.clone(),
            responder: responder.map(|r| r.get().inner.clone()),
            options,
        })
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
        let shared = Arc::new(RunShared {
            locals,
            result: result.clone().unbind(),
            wake_pending: AtomicBool::new(false),
            side: Mutex::new(Side {
                events: events.then(VecDeque::new),
                waiter: None,
                outcome: None,
                done: false,
            }),
        });
        let mut agent = Agent::new(self.engine.clone(), self.planner.clone())
            .options(self.options.clone())
            .host(host.clone());
        if let Some(r) = &self.responder {
            agent = agent.responder(r.clone());
        }
        let guard = RunGuard {
            cell: cell.clone(),
            host: host.clone(),
        };
        let back = shared.clone();
        let task = handle.spawn(RUN_HOST.scope(host, async move {
            let _guard = guard;
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
            back.finish(out);
        }));
        let abort = task.abort_handle();
        result.call_method1("add_done_callback", (AbortOnCancelled(abort.clone()),))?;
        Ok(PyAgentRun { shared, abort })
    }
}

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgent>()?;
    m.add_class::<PyAgentState>()?;
    m.add_class::<PyAgentRun>()?;
    m.add_class::<PyModel>()?;
    m.add_class::<PyEmit>()?;
    Ok(())
}
