//! `tooljig.CallResult` and `tooljig.BatchResult`: what a batch returns, typed.

use crate::convert;
use pyo3::exceptions::{PyIndexError, PyKeyError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tooljig::{BatchResult, CallResult, Envelope};

/// The envelope as Python objects, keys in the core's order. `ok`, nearly every envelope, is
/// built from its data where it lies: through `to_value` the data would be copied whole first.
fn envelope_to_py<'py>(py: Python<'py>, envelope: &Envelope) -> PyResult<Bound<'py, PyAny>> {
    match envelope {
        Envelope::Ok(data) => {
            let dict = PyDict::new(py);
            dict.set_item(pyo3::intern!(py, "ok"), true)?;
            dict.set_item(pyo3::intern!(py, "data"), convert::to_py(py, data)?)?;
            Ok(dict.into_any())
        }
        other => convert::to_py(py, &other.to_value()),
    }
}

/// The result of one call: the envelope for the model, and what the app needs beside it.
/// Fields added to the core later are readable as `result["field"]` and in `to_dict()`.
#[pyclass(name = "CallResult", module = "tooljig", frozen)]
pub struct PyCallResult {
    inner: CallResult,
    envelope: PyOnceLock<Py<PyAny>>,
}

impl PyCallResult {
    /// Wraps a core result.
    pub fn new(inner: CallResult) -> Self {
        PyCallResult {
            inner,
            envelope: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl PyCallResult {
    /// The call's id.
    #[getter]
    fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// The tool's registered name (as the model wrote it when unknown).
    #[getter]
    fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// Where the call stands: `"done"`, `"pending_approval"`, `"pending_external"`, ...
    #[getter]
    fn status(&self) -> String {
        match serde_json::to_value(self.inner.status) {
            Ok(Value::String(s)) => s,
            _ => format!("{:?}", self.inner.status),
        }
    }

    /// What the model sees, as a plain dict ready for `json.dumps`.
    #[getter]
    fn envelope<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cached = self.envelope.get_or_try_init(py, || {
            envelope_to_py(py, &self.inner.envelope).map(Bound::unbind)
        })?;
        Ok(cached.bind(py).clone())
    }

    /// The envelope as compact JSON text: the same bytes in Rust, Python and Node.
    fn envelope_json(&self) -> String {
        serde_json::to_string(&self.inner.envelope).unwrap_or_default()
    }

    /// What the model sees in place of the data, when the tool's `to_model_output` hook or
    /// its `model_output_max_chars` budget changed it; None otherwise (it sees the data).
    #[getter]
    fn model_output<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .model_output
            .as_deref()
            .map(|v| convert::to_py(py, v))
            .transpose()
    }

    /// Whether the envelope is `ok: true`.
    #[getter]
    fn ok(&self) -> bool {
        self.inner.envelope.is_ok()
    }

    /// The envelope's error code, or None.
    #[getter]
    fn error_code(&self) -> Option<&'static str> {
        self.inner.envelope.code().map(|c| c.as_str())
    }

    /// Handler attempts made (0 when the call never ran).
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }

    /// Whether the arguments had to be repaired.
    #[getter]
    fn repaired(&self) -> bool {
        self.inner.repaired
    }

    /// Whether the envelope was replayed from an earlier identical call.
    #[getter]
    fn replayed(&self) -> bool {
        self.inner.replayed
    }

    /// Whether the envelope came from the cache.
    #[getter]
    fn cached(&self) -> bool {
        self.inner.cached
    }

    /// The final arguments (after repair and references), or None when never validated.
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.arguments {
            Some(v) => convert::to_py(py, v),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// When the first attempt started, in µs since the batch started.
    #[getter]
    fn started_us(&self) -> Option<u64> {
        self.inner.started_us
    }

    /// When the call finished, in µs since the batch started.
    #[getter]
    fn finished_us(&self) -> u64 {
        self.inner.finished_us
    }

    /// Time spent running the handler, retries included, in µs.
    #[getter]
    fn duration_us(&self) -> u64 {
        self.inner.duration_us
    }

    /// What the model must not see: an unexpected failure's traceback, or None.
    #[getter]
    fn detail(&self) -> Option<&str> {
        self.inner.detail.as_deref()
    }

    /// Every field as a dict, including fields newer than these typed attributes.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.inner.to_value())
    }

    /// A field by name: `result["approval"]`.
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.to_value().get(key) {
            Some(v) => convert::to_py(py, v),
            None => Err(PyKeyError::new_err(key.to_owned())),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "CallResult(call_id={:?}, tool={:?}, status={:?}, envelope={})",
            self.inner.call_id,
            self.inner.tool,
            self.status(),
            self.envelope_json()
        )
    }
}

/// The results of a batch, in call order: a sequence of `CallResult`.
#[pyclass(name = "BatchResult", module = "tooljig", frozen, sequence)]
pub struct PyBatchResult {
    results: Vec<Py<PyCallResult>>,
    duration_us: u64,
    run_id: Option<String>,
    rollback: Option<Value>,
}

impl PyBatchResult {
    /// Wraps a core batch result.
    pub fn new(py: Python<'_>, out: BatchResult) -> PyResult<Self> {
        let results = out
            .results
            .into_iter()
            .map(|r| Py::new(py, PyCallResult::new(r)))
            .collect::<PyResult<_>>()?;
        Ok(PyBatchResult {
            results,
            duration_us: out.duration_us,
            run_id: out.run_id,
            rollback: out
                .rollback
                .map(|r| serde_json::to_value(r).unwrap_or(Value::Null)),
        })
    }
}

#[pymethods]
impl PyBatchResult {
    /// Wall time of the batch, in µs.
    #[getter]
    fn duration_us(&self) -> u64 {
        self.duration_us
    }

    /// The id of the durable run this batch is (resume it, roll it back, submit client
    /// results to it), or None when nothing was kept.
    #[getter]
    fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// What an atomic batch's automatic rollback did (`{"entries": [...]}`), or None.
    #[getter]
    fn rollback<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, self.rollback.as_ref().unwrap_or(&Value::Null))
    }

    /// The results as a list, in call order.
    #[getter]
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.results.iter().map(|r| r.clone_ref(py)))
    }

    /// The result of the call with this id, or None.
    fn get(&self, py: Python<'_>, call_id: &str) -> Option<Py<PyCallResult>> {
        self.results
            .iter()
            .find(|r| r.get().inner.call_id == call_id)
            .map(|r| r.clone_ref(py))
    }

    /// The envelopes, in call order, as plain dicts.
    fn envelopes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for r in &self.results {
            list.append(r.get().envelope(py)?)?;
        }
        Ok(list)
    }

    /// The whole batch as a dict: `{"results": [...], "duration_us": n}`, with `run_id` and
    /// `rollback` when set.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let results: Vec<Value> = self
            .results
            .iter()
            .map(|r| r.get().inner.to_value())
            .collect();
        let mut value = serde_json::json!({"results": results, "duration_us": self.duration_us});
        if let Some(id) = &self.run_id {
            value["run_id"] = Value::String(id.clone());
        }
        if let Some(r) = &self.rollback {
            value["rollback"] = r.clone();
        }
        convert::to_py(py, &value)
    }

    fn __len__(&self) -> usize {
        self.results.len()
    }

    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<PyCallResult>> {
        let len = self.results.len() as isize;
        let i = if index < 0 { index + len } else { index };
        if i < 0 || i >= len {
            return Err(PyIndexError::new_err("BatchResult index out of range"));
        }
        Ok(self.results[i as usize].clone_ref(py))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.results(py)?.try_iter().map(Bound::into_any)
    }

    fn __repr__(&self) -> String {
        format!(
            "BatchResult({} results, duration_us={})",
            self.results.len(),
            self.duration_us
        )
    }
}
