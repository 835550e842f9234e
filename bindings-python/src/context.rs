//! `tooljig.ToolContext`: what a handler knows about the call it runs.

use crate::caller::PyCaller;
use pyo3::prelude::*;
use tooljig::ToolContext;

/// What a handler knows about the call it runs. A handler gets it by declaring a parameter
/// annotated `ToolContext`; that parameter is left out of the tool's schema.
#[pyclass(name = "ToolContext", module = "tooljig", frozen)]
pub struct PyToolContext {
    inner: ToolContext,
}

impl PyToolContext {
    /// Wraps the core's context of one attempt.
    pub fn new(inner: ToolContext) -> Self {
        PyToolContext { inner }
    }
}

#[pymethods]
impl PyToolContext {
    /// The call's id in its batch.
    #[getter]
    fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// The tool's registered name.
    #[getter]
    fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// 1 for the first attempt, 2 for the first retry, ...
    #[getter]
    fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// Who the batch runs for.
    #[getter]
    fn caller(&self) -> PyCaller {
        PyCaller::new(self.inner.caller.clone())
    }

    /// The run the call belongs to (the same across resumes and processes).
    #[getter]
    fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// A key that is the same every time this call runs (a retry, a resume after a crash,
    /// another process): hand it to a downstream API that deduplicates on it, so running the
    /// call again has its effect once. From the call's own idempotency key when the app gave
    /// one, else from the run and the call's id.
    #[getter]
    fn idempotency_key(&self) -> String {
        self.inner.idempotency_key()
    }

    /// Whether this attempt timed out or its batch was cancelled. Async handlers are
    /// cancelled for real (their task gets `CancelledError`); a sync handler cannot be
    /// interrupted, so a long one should check this and return early.
    #[getter]
    fn cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Reports how far the call is: ``fraction`` of the work done (0 to 1) and a message for
    /// whoever watches (the batch's events, a UI stream, an MCP client that asked). Never
    /// blocks; a no-op when nobody listens.
    #[pyo3(signature = (fraction=None, message=None))]
    fn progress(&self, fraction: Option<f64>, message: Option<String>) {
        self.inner.progress.report(fraction, message);
    }

    /// Hands out a partial output before the result (a preliminary tool output in a UI
    /// stream). Only the value returned is validated, stored and audited.
    fn partial(&self, output: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.inner.progress.is_listened() {
            self.inner
                .progress
                .partial(crate::convert::from_py(output)?);
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolContext(call_id={:?}, tool={:?}, attempt={})",
            &*self.inner.call_id, &*self.inner.tool, self.inner.attempt
        )
    }
}
