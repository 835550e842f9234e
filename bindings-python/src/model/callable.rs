//! A Python callable as the core's `ModelClient`: how a model written in Python is called
//! from a run driven on tokio.
//!
//! The callable `(request, emit) -> answer` is called on a worker thread (`workers.rs`) in a
//! copy of the caller's `contextvars` context, so a blocking SDK call never blocks the loop;
//! when it is `async def`, the coroutine it returns is awaited as a task on the loop.
//! `emit(event)` streams events as the model produces them. The package's wrapper turns the
//! callable's return value or `tooljig.ModelError` into `{"turn": ...}` / `{"error": ...}`.
//!
//! The loop to use is the run's: its `BatchHost` is found through a tokio task-local the
//! agent sets around the run (`agent.rs`), because the core's `ModelClient::respond` has no
//! place to carry it.

use crate::convert;
use crate::host::{AbandonGuard, Awaitable, BatchHost, Msg, Start, TaskSlot, lock};
use crate::outcome;
use crate::providers::read;
use crate::workers;
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tooljig::agent::answer;
use tooljig::agent::{ModelClient, ModelError, ModelErrorKind, StreamSender};
use tooljig::providers::{ModelRequest, ModelTurn};
use tooljig::stream::StreamEvent;
use tooljig::{BoxFuture, HandlerError};

tokio::task_local! {
    /// The host of the run being driven: where its Python model calls start.
    pub(crate) static RUN_HOST: Arc<BatchHost>;
}

/// A model written in Python: the package's wrapper around the user's callable.
pub(crate) struct PyCallableModel {
    pub(crate) name: String,
    pub(crate) invoke: Arc<Py<PyAny>>,
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
                Ok(Ok(value)) => answer::answer_from_value(value),
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
        HandlerError::Accepted { job } => format!("the model answered Accepted({job:?})"),
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

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmit>()?;
    Ok(())
}
