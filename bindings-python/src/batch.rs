//! `Batch`: a running batch as the Python layer sees it (its result future, its events, and
//! a way to cancel it).

use crate::host::BatchHost;
use pyo3::prelude::*;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A batch started by `Engine.start`. `Engine.run` awaits `result`; `Engine.stream` pulls
/// `next_events()`. Cancelling `result` (or calling `cancel()`) cancels the batch: running
/// async handlers get `CancelledError`, and every unfinished call ends as `cancelled`.
#[pyclass(name = "Batch", module = "tooljig._native", frozen)]
pub struct PyBatch {
    host: Arc<BatchHost>,
    cancel: CancellationToken,
    result: Py<PyAny>,
}

impl PyBatch {
    /// Wraps a started batch.
    pub fn new(host: Arc<BatchHost>, cancel: CancellationToken, result: Py<PyAny>) -> Self {
        PyBatch {
            host,
            cancel,
            result,
        }
    }
}

#[pymethods]
impl PyBatch {
    /// The asyncio future of the `BatchResult`.
    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.result.bind(py).clone()
    }

    /// A future of the events that happened since the last call: at least one, or an empty
    /// list once the batch is done and every event was taken.
    fn next_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.host.next_events(py)
    }

    /// Cancels the batch. Does nothing once it is done.
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether the batch was cancelled.
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}
