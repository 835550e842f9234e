//! `AgentRun`: a run's way back to the caller's event loop. The run is driven on tokio; its
//! stream events and its outcome reach the loop through `loop.call_soon_threadsafe`, one
//! wake-up for whatever piled up since the last, and cancelling the outcome future aborts the
//! run.

use crate::agent::state::StateCell;
use crate::error;
use crate::events::queue::EventQueue;
use crate::host::{BatchHost, Msg, lock, resolve};
use crate::providers::write;
use crate::runtime;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3_async_runtimes::TaskLocals;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::AbortHandle;
use tooljig::agent::RunOutcome;
use tooljig::stream::StreamEvent;
use tooljig::{BatchResult, ToolError};

struct Side {
    events: EventQueue<StreamEvent>,
    outcome: Option<Result<RunOutcome, ToolError>>,
}

/// A run's way back to the loop.
pub(crate) struct RunShared {
    locals: TaskLocals,
    result: Py<PyAny>,
    wake_pending: AtomicBool,
    side: Mutex<Side>,
}

impl RunShared {
    /// The way back of a run whose outcome goes to the future `result`; events are kept
    /// only when the caller asked for them.
    pub(crate) fn new(locals: TaskLocals, result: Py<PyAny>, events: bool) -> Arc<Self> {
        Arc::new(RunShared {
            locals,
            result,
            wake_pending: AtomicBool::new(false),
            side: Mutex::new(Side {
                events: EventQueue::new(events),
                outcome: None,
            }),
        })
    }

    pub(crate) fn event(self: &Arc<Self>, e: StreamEvent) {
        lock(&self.side).events.push(e);
        self.wake();
    }

    pub(crate) fn finish(self: &Arc<Self>, out: Result<RunOutcome, ToolError>) {
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
        let (outcome, ready) = {
            let mut side = lock(&self.side);
            let outcome = side.outcome.take();
            if outcome.is_some() {
                side.events.finish();
            }
            (outcome, side.events.ready())
        };
        if let Some((waiter, events)) = ready {
            resolve(waiter.bind(py), to_list(py, events)?)?;
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
        let now = lock(&self.side).events.next(&future, "run")?;
        if let Some(events) = now {
            future.call_method1("set_result", (to_list(py, events)?,))?;
        }
        Ok(future)
    }
}

fn to_list(py: Python<'_>, events: Vec<StreamEvent>) -> PyResult<Bound<'_, PyAny>> {
    let list = PyList::empty(py);
    for e in &events {
        list.append(write(py, e)?)?;
    }
    Ok(list.into_any())
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
pub(crate) struct RunGuard {
    cell: Option<Arc<StateCell>>,
    host: Arc<BatchHost>,
}

impl RunGuard {
    /// Guards the run of `cell`'s state driven through `host`.
    pub(crate) fn new(cell: Arc<StateCell>, host: Arc<BatchHost>) -> Self {
        RunGuard {
            cell: Some(cell),
            host,
        }
    }

    /// Frees the state. A finished run calls it before handing over its outcome: the caller
    /// may start the next run of the state as soon as it has the outcome, before this task
    /// has ended. Only once, so a late drop never frees the state of that next run.
    pub(crate) fn release(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.busy.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.release();
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

impl PyAgentRun {
    /// The handle of the run whose task `abort` ends: cancelling its result future aborts it.
    pub(crate) fn new(
        py: Python<'_>,
        shared: Arc<RunShared>,
        abort: AbortHandle,
    ) -> PyResult<Self> {
        shared
            .result
            .bind(py)
            .call_method1("add_done_callback", (AbortOnCancelled(abort.clone()),))?;
        Ok(PyAgentRun { shared, abort })
    }
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

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgentRun>()?;
    Ok(())
}
