//! What Python awaits, as a handler's task sees it: a coroutine, or anything with
//! `__await__`; and a coroutine's close when nothing ever started it.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Closes `awaitable` when it is a coroutine nothing started: one left to the collector unrun
/// makes Python warn that it was never awaited (an error under `-W error`), for a call that
/// only ended before its task's first step (a timeout, a cancellation).
pub(crate) fn close_unstarted(awaitable: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = awaitable.py();
    if !awaitable.is_instance(coroutine_type(py)?)? {
        return Ok(());
    }
    let state = py
        .import(intern!(py, "inspect"))?
        .call_method1(intern!(py, "getcoroutinestate"), (awaitable,))?;
    if state.eq(intern!(py, "CORO_CREATED"))? {
        awaitable.call_method0(intern!(py, "close"))?;
    }
    Ok(())
}

/// Whether `obj` is awaited as a task: a coroutine, or anything with `__await__`.
pub(crate) fn is_awaitable(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance(coroutine_type(obj.py())?)?
        || obj.hasattr(intern!(obj.py(), "__await__"))?)
}

/// `types.CoroutineType`, looked up once.
fn coroutine_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static COROUTINE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    COROUTINE.import(py, "types", "CoroutineType")
}
