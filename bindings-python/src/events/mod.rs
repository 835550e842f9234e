//! `tooljig.Event`: what happens in a batch, as it happens.

pub mod queue;

use crate::convert;
use crate::results::PyCallResult;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use serde_json::Value;
use tooljig::Event;

/// One thing that happened in a batch: `type` is `"batch_started"`, `"call_planned"`,
/// `"call_started"`, `"call_retried"`, `"call_finished"` or `"batch_finished"`; `at_us`
/// counts µs since the batch started. Every field is in `to_dict()` and `event["field"]`.
#[pyclass(name = "Event", module = "tooljig", frozen)]
pub struct PyEvent {
    inner: Event,
}

impl PyEvent {
    /// Wraps a core event.
    pub fn new(inner: Event) -> Self {
        PyEvent { inner }
    }

    fn value(&self) -> Value {
        serde_json::to_value(&self.inner).unwrap_or(Value::Null)
    }
}

#[pymethods]
impl PyEvent {
    /// What happened.
    #[getter]
    #[pyo3(name = "type")]
    fn kind(&self) -> String {
        self.value()
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// µs since the batch started.
    #[getter]
    fn at_us(&self) -> u64 {
        self.value()
            .get("at_us")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// The call this event is about, or None for batch events.
    #[getter]
    fn call_id(&self) -> Option<String> {
        match &self.inner {
            Event::CallFinished { result, .. } => Some(result.call_id.clone()),
            _ => self
                .value()
                .get("call_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// The call's result, for `call_finished` events; else None.
    #[getter]
    fn result(&self) -> Option<PyCallResult> {
        match &self.inner {
            Event::CallFinished { result, .. } => Some(PyCallResult::new(result.clone())),
            _ => None,
        }
    }

    /// Every field as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.value())
    }

    /// A field by name: `event["attempt"]`.
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.value().get(key) {
            Some(v) => convert::to_py(py, v),
            None => Err(PyKeyError::new_err(key.to_owned())),
        }
    }

    fn __repr__(&self) -> String {
        format!("Event({})", self.value())
    }
}
