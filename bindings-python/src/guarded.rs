//! The coroutine a handler's task runs: it awaits the handler's awaitable, step by step, and
//! hands what came of it to the call ([`Settle`]) in the task's own last step,
//! rather than in a done callback a turn of the loop later, which the batch would wait for.
//!
//! Written in Rust rather than as an `async def` around the awaitable: a coroutine frame made,
//! run and freed for every call, and the outcome passed back through a call from Python, cost
//! more than the handler itself in a batch of quick handlers. It is a
//! `collections.abc.Coroutine` (registered as one), so `asyncio.Task` takes it, and it passes
//! each step on as `await` would: what the awaitable yields goes to the task, what the task
//! sends or throws goes to the awaitable.
//!
//! What it hands over:
//!
//! - the value returned;
//! - an exception raised, which the task then does not raise again, so asyncio has none to
//!   log as never retrieved. `SystemExit` is handed over as a `RuntimeError`: an asyncio task
//!   re-raises it out of the event loop itself, so a handler calling `sys.exit()` would end
//!   the app's loop (and `run_sync`); here it fails its own call (`internal_error`);
//! - a cancellation, which the task then raises again, so it ends cancelled;
//! - `KeyboardInterrupt`, raised again: it is the user's Ctrl-C.
//!
//! A task cancelled before its first step, or dropped unrun, ends its call as cancelled and
//! closes the handler's coroutine unrun; one collected while it waited on what nothing will
//! ever finish ends its call as cancelled too.
//!
//! On Python 3.11, which has no `eager_start`, the first step may be taken as the task is made
//! ([`Guarded::step_first`], run by `task.rs` as the task's own): what it yielded waits for the
//! task's first step, which then only passes it on; one that ended the handler leaves the task
//! a last step with nothing to do. Tasks left so, their step not yet come, are counted, and past
//! [`WAITING`] more tasks start on the next turn again, so a caller that awaits batches back to
//! back without the loop ever turning piles up no more of them.

use crate::awaitable;
use crate::outcome;
use pyo3::exceptions::asyncio::CancelledError;
use pyo3::exceptions::{
    PyGeneratorExit, PyKeyboardInterrupt, PyRuntimeError, PyStopIteration, PySystemExit,
    PyTypeError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::iterator::PySendResult;
use pyo3::types::{PyIterator, PyType};
use pyo3::{PyTraverseError, PyVisit, intern};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use tooljig::{ErrorCode, HandlerError, HandlerResult, ToolError};

/// Where a [`Guarded`] hands the outcome of its call (the batch's host, `host.rs`).
pub(crate) trait Settle: Send + Sync {
    /// In the task's last step, on the loop thread: the call ends, and what that wakes may
    /// go on right here.
    fn in_step(self: Box<Self>, py: Python<'_>, result: HandlerResult);
    /// From outside a step (dropped, perhaps by the collector): the call ends, nothing else
    /// runs from here.
    fn outside(self: Box<Self>, result: HandlerResult);
}

/// Awaits a handler's awaitable as a task's coroutine and settles its call with the outcome.
///
/// Its state is locked only between calls into Python, never across one: the handler runs
/// in a step, and may look at its own task (its `repr` reads `__qualname__` here).
#[pyclass(frozen, module = "tooljig._native")]
pub(crate) struct Guarded(Mutex<State>);

#[derive(Default)]
struct State {
    /// The handler's awaitable (closed unrun if its first step never comes).
    awaitable: Option<Py<PyAny>>,
    /// What each step goes to: what the awaitable's `__await__` returned.
    steps: Option<Py<PyIterator>>,
    /// Whether its first step came.
    started: bool,
    /// The call; `None` once settled.
    settle: Option<Box<dyn Settle>>,
    /// What a first step taken as the task was made left for the task's own first step.
    early: Early,
}

/// What a first step taken early ([`Guarded::step_first`]) left for the task's first step.
#[derive(Default)]
enum Early {
    /// No step was taken early, or the task has had what it left.
    #[default]
    None,
    /// What the awaitable yielded (a future to wait on), for the task to wait on.
    Yielded(Py<PyAny>),
    /// The handler ended: the task's step ends it too, raising the error when there is one
    /// (a cancellation, so the task ends cancelled).
    Ended(Option<PyErr>),
}

/// The most tasks whose handler ended in an early first step and whose own step has not come
/// yet; past it, tasks start on the next turn of their loop.
pub(crate) const WAITING: usize = 1024;

/// Tasks whose handler ended in an early first step and whose own step has not come yet.
static ENDED_EARLY: AtomicUsize = AtomicUsize::new(0);

/// How one step of the awaitable ended.
enum Step {
    Yielded(Py<PyAny>),
    Returned(Py<PyAny>),
    Raised(PyErr),
}

impl Guarded {
    /// A coroutine awaiting `awaitable` for the call of `settle`.
    pub(crate) fn new(awaitable: Py<PyAny>, settle: Box<dyn Settle>) -> Self {
        Guarded(Mutex::new(State {
            awaitable: Some(awaitable),
            settle: Some(settle),
            ..State::default()
        }))
    }

    /// The type, registered once as a `collections.abc.Coroutine` so `asyncio.Task` takes it.
    pub(crate) fn register(py: Python<'_>) -> PyResult<()> {
        static REGISTERED: PyOnceLock<()> = PyOnceLock::new();
        REGISTERED.get_or_try_init(py, || {
            py.import("collections.abc")?
                .getattr("Coroutine")?
                .call_method1("register", (py.get_type::<Guarded>(),))
                .map(|_| ())
        })?;
        Ok(())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a task's first step may be taken as it is made: few enough tasks wait for a
    /// step that has nothing left to do.
    pub(crate) fn may_step_first() -> bool {
        ENDED_EARLY.load(Ordering::Relaxed) < WAITING
    }

    /// Takes the first step now, before the task's own (on Python 3.11, where tasks do not
    /// start eagerly); the caller makes it the task's, in the task's context. What came of it
    /// waits for the task's first step. Raises only Ctrl-C, once the call has it.
    pub(crate) fn step_first(&self, py: Python<'_>) -> PyResult<()> {
        let step = match self.steps(py) {
            Ok(steps) => send(steps.bind(py), &py.None().into_bound(py)),
            Err(e) => Step::Raised(e),
        };
        let (early, interrupted) = match self.ended(py, step) {
            Ok(Some(waited)) => (Early::Yielded(waited), None),
            Ok(None) => (Early::Ended(None), None),
            Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => (Early::Ended(None), Some(e)),
            Err(e) => (Early::Ended(Some(e)), None),
        };
        if matches!(early, Early::Ended(_)) {
            ENDED_EARLY.fetch_add(1, Ordering::Relaxed);
        }
        self.state().early = early;
        interrupted.map_or(Ok(()), Err)
    }

    /// What an early first step left, taken once.
    fn take_early(&self) -> Early {
        let early = std::mem::take(&mut self.state().early);
        if matches!(early, Early::Ended(_)) {
            ENDED_EARLY.fetch_sub(1, Ordering::Relaxed);
        }
        early
    }

    /// What the next step goes to, made at the first step as `await` makes it: the iterator
    /// `__await__()` returns (a coroutine's, for a coroutine).
    fn steps(&self, py: Python<'_>) -> PyResult<Py<PyIterator>> {
        let awaitable = {
            let mut state = self.state();
            if let Some(steps) = &state.steps {
                return Ok(steps.clone_ref(py));
            }
            state.started = true;
            state.awaitable.as_ref().map(|a| a.clone_ref(py))
        };
        let Some(awaitable) = awaitable else {
            return Err(PyRuntimeError::new_err(
                "a handler's awaitable is awaited once",
            ));
        };
        let steps = awaitable.bind(py).call_method0(intern!(py, "__await__"))?;
        let steps = steps.cast_into::<PyIterator>().map_err(|e| {
            PyTypeError::new_err(format!("__await__() returned a non-iterator: {e}"))
        })?;
        self.state().steps = Some(steps.clone().unbind());
        Ok(steps.unbind())
    }

    /// Hands `result` to the call, once.
    fn settle(&self, py: Python<'_>, result: HandlerResult) {
        let settle = self.state().settle.take();
        if let Some(settle) = settle {
            settle.in_step(py, result);
        }
    }

    /// Settles a call that ends with no outcome of its handler's: cancelled before its first
    /// step (its awaitable, which never ran, is closed), or dropped after it. The call ends as
    /// any call handed over from another thread does; nothing is served from here, which may
    /// be inside the collector.
    fn abandon(&self, py: Python<'_>) {
        let (started, awaitable, steps, settle) = {
            let mut state = self.state();
            let Some(settle) = state.settle.take() else {
                return;
            };
            let parts = (state.awaitable.take(), state.steps.take());
            (state.started, parts.0, parts.1, settle)
        };
        let closed = match (started, &awaitable, &steps) {
            (false, Some(awaitable), _) => awaitable::close_unstarted(awaitable.bind(py)),
            (true, _, Some(steps)) => close(steps.bind(py).as_any()),
            _ => Ok(()),
        };
        if let Err(e) = closed {
            e.write_unraisable(py, None);
        }
        let message = if started {
            COLLECTED
        } else {
            "the tool's task was cancelled before it started"
        };
        settle.outside(Err(cancelled(message)));
    }

    /// A step's end as the task must see it: `Some` to pass on what the awaitable yielded,
    /// `None` once the coroutine returns (the task's result is `None`; the call has the
    /// handler's), an error to raise (a cancellation, Ctrl-C).
    fn ended(&self, py: Python<'_>, step: Step) -> PyResult<Option<Py<PyAny>>> {
        let err = match step {
            Step::Yielded(value) => return Ok(Some(value)),
            Step::Returned(value) => {
                self.settle(py, outcome::from_value(value.bind(py)));
                return Ok(None);
            }
            Step::Raised(err) => err,
        };
        if err.is_instance_of::<CancelledError>(py) {
            self.settle(py, Err(cancelled("the tool's task was cancelled")));
            return Err(err);
        }
        if err.is_instance_of::<PyGeneratorExit>(py) {
            self.settle(py, Err(cancelled(COLLECTED)));
            return Err(err);
        }
        if err.is_instance_of::<PyKeyboardInterrupt>(py) {
            self.settle(py, Err(outcome::from_error(py, &err)));
            return Err(err);
        }
        let err = if err.is_instance_of::<PySystemExit>(py) {
            let code = err.value(py).getattr(intern!(py, "code"))?;
            PyRuntimeError::new_err(format!(
                "the handler raised SystemExit({}); a handler cannot end the process",
                code.repr()?
            ))
        } else {
            err
        };
        self.settle(py, Err(outcome::from_error(py, &err)));
        Ok(None)
    }
}

const COLLECTED: &str =
    "the tool's task was collected while it waited for what nothing would finish";

/// Sends `value` into `steps` (`PyIter_Send`).
fn send(steps: &Bound<'_, PyIterator>, value: &Bound<'_, PyAny>) -> Step {
    match steps.send(value) {
        Ok(PySendResult::Next(value)) => Step::Yielded(value.unbind()),
        Ok(PySendResult::Return(value)) => Step::Returned(value.unbind()),
        Err(e) => Step::Raised(e),
    }
}

/// Throws `error` into `steps` as `await` does: through its `throw` when it has one, else
/// raised right at the await.
fn throw(py: Python<'_>, steps: &Bound<'_, PyAny>, error: PyErr) -> Step {
    let Ok(throw) = steps.getattr(intern!(py, "throw")) else {
        return Step::Raised(error);
    };
    match throw.call1((error.into_value(py),)) {
        Ok(value) => Step::Yielded(value.unbind()),
        Err(e) if e.is_instance_of::<PyStopIteration>(py) => {
            match e.value(py).getattr(intern!(py, "value")) {
                Ok(value) => Step::Returned(value.unbind()),
                Err(e) => Step::Raised(e),
            }
        }
        Err(e) => Step::Raised(e),
    }
}

fn close(steps: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = steps.py();
    match steps.getattr(intern!(py, "close")) {
        Ok(close) => close.call0().map(|_| ()),
        Err(_) => Ok(()),
    }
}

#[pymethods]
impl Guarded {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.send(py, &py.None().into_bound(py))
    }

    /// Resumes the awaitable with `value`. The task's first step, after a first step taken
    /// early, passes on what that one left.
    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        match self.take_early() {
            Early::None => {}
            Early::Yielded(waited) => return Ok(Some(waited)),
            Early::Ended(None) => return Ok(None),
            Early::Ended(Some(err)) => return Err(err),
        }
        let step = match self.steps(py) {
            Ok(steps) => send(steps.bind(py), value),
            Err(e) => Step::Raised(e),
        };
        self.ended(py, step)
    }

    /// Raises `error` in the awaitable, as a task does to cancel it. Before the first step the
    /// awaitable never runs: the call ends cancelled and the error is raised from here.
    #[pyo3(signature = (error, value = None, _traceback = None))]
    fn throw(
        &self,
        py: Python<'_>,
        error: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let error = match (error.cast::<PyType>(), value) {
            (Ok(kind), Some(value)) if !value.is_none() => PyErr::from_value(kind.call1((value,))?),
            (Ok(kind), _) => PyErr::from_value(kind.call0()?),
            (Err(_), _) => PyErr::from_value(error.clone()),
        };
        match self.take_early() {
            Early::None => {}
            // Thrown before the task waited on what an early first step yielded (a task
            // cancelled before its own first step): as a task cancelling its wait, the future
            // is cancelled, then the handler gets the error where it waits.
            Early::Yielded(waited) => {
                let waited = waited.bind(py);
                if !waited.is_none() && waited.hasattr(intern!(py, "cancel"))? {
                    waited.call_method0(intern!(py, "cancel"))?;
                }
            }
            Early::Ended(_) => return Err(error),
        }
        if !self.state().started {
            self.abandon(py);
            return Err(error);
        }
        let step = match self.steps(py) {
            Ok(steps) => throw(py, steps.bind(py).as_any(), error),
            Err(e) => Step::Raised(e),
        };
        self.ended(py, step)
    }

    /// The first step taken as the task is made (`task.rs`), in the task's context.
    fn _step_first(&self, py: Python<'_>) -> PyResult<()> {
        self.step_first(py)
    }

    /// Closes the awaitable; the call, if it has not ended, ends cancelled.
    fn close(&self, py: Python<'_>) {
        self.abandon(py);
    }

    /// The awaitable's frame while it waits (a coroutine's, or a generator's), for
    /// `Task.get_stack()`.
    #[getter]
    fn cr_frame(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        let awaitable = self.state().awaitable.as_ref()?.clone_ref(py);
        let awaitable = awaitable.bind(py);
        ["cr_frame", "gi_frame"]
            .into_iter()
            .find_map(|name| awaitable.getattr(name).ok())
            .map(Bound::unbind)
    }

    /// The awaitable's name, for the task's `repr`.
    #[getter]
    fn __qualname__(&self, py: Python<'_>) -> String {
        let of = {
            let state = self.state();
            state.awaitable.as_ref().map(|a| a.clone_ref(py))
        };
        of.and_then(|a| a.bind(py).getattr(intern!(py, "__qualname__")).ok())
            .and_then(|n| n.extract().ok())
            .unwrap_or_else(|| "tooljig handler".to_string())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // Never waits: a step on this thread holds the lock only between calls into Python,
        // and the collector runs inside one.
        let Ok(state) = self.0.try_lock() else {
            return Ok(());
        };
        if let Some(awaitable) = &state.awaitable {
            visit.call(awaitable)?;
        }
        if let Some(steps) = &state.steps {
            visit.call(steps)?;
        }
        if let Early::Yielded(waited) = &state.early {
            visit.call(waited)?;
        }
        Ok(())
    }

    /// Breaks a cycle through the awaitable (a task collected while it waited): the call ends
    /// first, as cancelled.
    fn __clear__(&self) {
        Python::attach(|py| self.abandon(py));
        drop(self.take_early());
        let mut state = self.state();
        state.awaitable = None;
        state.steps = None;
    }
}

impl Drop for Guarded {
    /// Dropped before its call ended: the task never ran it, or was dropped while it waited.
    fn drop(&mut self) {
        if matches!(self.state().early, Early::Ended(_)) {
            ENDED_EARLY.fetch_sub(1, Ordering::Relaxed);
        }
        if self.state().settle.is_some() {
            // Dropped by Python, so attached already.
            Python::attach(|py| self.abandon(py));
        }
    }
}

fn cancelled(message: &str) -> HandlerError {
    HandlerError::Tool(ToolError::new(ErrorCode::Cancelled, message))
}
