//! `tooljig.ToolContext`: what a handler knows about the call it runs.

use crate::caller::PyCaller;
use crate::host::{BatchHost, Msg};
use crate::runtime;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use tooljig::{ErrorCode, Nested, ToolContext, ToolError};

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

    /// The context of one attempt as the object a handler receives (an `args::MakeContext`).
    pub fn into_py(py: Python<'_>, inner: ToolContext) -> PyResult<Py<PyAny>> {
        Ok(Py::new(py, PyToolContext::new(inner))?.into_any())
    }

    /// Starts a nested batch on the running loop; its future resolves with the batch's
    /// result, or with its one call's when `one`.
    fn start<'py>(
        &self,
        py: Python<'py>,
        calls: Vec<tooljig::Call>,
        one: bool,
        atomic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(tools) = self.inner.tools.clone() else {
            let why = format!(
                "{} calls no tools: name the ones it may call in its policy's may_call",
                &*self.inner.tool
            );
            let error = ToolError::new(ErrorCode::PermissionDenied, why);
            return Err(PyErr::from_value(crate::outcome::to_py_error(py, &error)?));
        };
        let locals = TaskLocals::with_running_loop(py)
            .map_err(|_| {
                PyRuntimeError::new_err("ctx.run() and ctx.call() are awaited in an async handler")
            })?
            .copy_context(py)?;
        let (handle, _) = runtime::for_batch().map_err(|e| crate::error::shutdown(py, e))?;
        // Cancelled with this attempt, and when the awaiting task is cancelled.
        let cancel = self.inner.cancel.child_token();
        let future = locals
            .event_loop(py)
            .call_method0(intern!(py, "create_future"))?;
        let host = BatchHost::start(py, locals, future.clone(), false)?;
        host.cancel_with(py, &cancel)?;
        handle.spawn(async move {
            let nested = Nested {
                host: Some(host.clone()),
                cancel: Some(cancel),
                atomic,
            };
            let out = tools.run_with(calls, nested).await;
            host.post(if one {
                Msg::DoneOne(out)
            } else {
                Msg::Done(out)
            });
        });
        Ok(future)
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

    /// Runs other tools of the engine as one batch, for this call's caller, through every
    /// guardrail, within what is left of its deadline (the tool's policy must name them in
    /// ``may_call``). With ``atomic``, once a call fails no further call starts and the
    /// completed ones are compensated (the result's ``rollback``). Returns an awaitable of the
    /// ``BatchResult``.
    #[pyo3(signature = (calls, *, atomic=false))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        calls: &Bound<'py, PyAny>,
        atomic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let calls = crate::calls::calls_from_py(py, calls)?;
        self.start(py, calls, false, atomic)
    }

    /// Runs one other tool of the engine (see :meth:`run`); returns an awaitable of its
    /// ``CallResult``.
    #[pyo3(signature = (tool, arguments=None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        tool: String,
        arguments: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arguments = match arguments {
            Some(a) => crate::convert::from_py(a)?,
            None => serde_json::json!({}),
        };
        self.start(
            py,
            vec![tooljig::Call::new("call_0", tool, arguments)],
            true,
            false,
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolContext(call_id={:?}, tool={:?}, attempt={})",
            &*self.inner.call_id, &*self.inner.tool, self.inner.attempt
        )
    }
}
