//! A handler's task on the loop: how it is made, and the guard that hands its outcome to the
//! host (`TaskSettle` in `host.rs`) in the task's own last step.
//!
//! On Python 3.12 and later a task is made with `eager_start`: its first step runs while it
//! is made, so a handler that returns without waiting (most do: a lookup in memory, a check)
//! has settled its call before the loop turns, and a one-call batch driven on the caller's
//! thread ends inside `Engine.run`, which then never suspends. An app's own task factory
//! (`loop.set_task_factory`) is respected: with one, tasks are made through it, not eagerly.
//! On 3.11 an eager step would show the handler the caller's task as
//! `asyncio.current_task()`, so tasks start on the next turn there.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

/// Makes the tasks of one batch's handlers on its loop.
pub(crate) enum TaskMaker {
    /// Through `loop.create_task`, bound once, for a loop with the app's task factory.
    CreateTask(Py<PyAny>),
    /// `asyncio.Task(..., loop=event_loop, context=...)`, eagerly (`eager_start=True`) on
    /// Python 3.12 and later. Made directly rather than through `loop.create_task`, which
    /// does nothing more without a task factory and costs a call into Python code a task.
    Direct {
        task: Py<PyAny>,
        event_loop: Py<PyAny>,
        eager: bool,
    },
}

impl TaskMaker {
    /// The task maker of `event_loop`: direct (and eager on Python 3.12 and later) unless
    /// the app set a task factory.
    pub(crate) fn new(event_loop: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = event_loop.py();
        if event_loop
            .call_method0(intern!(py, "get_task_factory"))?
            .is_none()
        {
            return Ok(TaskMaker::Direct {
                task: asyncio(py)?.getattr(intern!(py, "Task"))?.unbind(),
                event_loop: event_loop.clone().unbind(),
                eager: eager_python(py),
            });
        }
        let create_task = event_loop.getattr(intern!(py, "create_task"))?;
        Ok(TaskMaker::CreateTask(create_task.unbind()))
    }

    /// A task awaiting `awaitable` in a copy of `context`, guarded so that it hands its
    /// outcome to `settle` (`settle(value, error)`, the host's `TaskSettle`) in its last step.
    /// Made eagerly, its first step has run when this returns, and `settle` may have been
    /// called.
    pub(crate) fn start<'py>(
        &self,
        awaitable: Bound<'py, PyAny>,
        settle: Bound<'py, PyAny>,
        context: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = awaitable.py();
        let guarded = exit_guard(py)?.call1((awaitable, settle))?;
        match self {
            TaskMaker::Direct {
                task,
                event_loop,
                eager,
            } => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "loop"), event_loop.bind(py))?;
                kwargs.set_item(
                    intern!(py, "context"),
                    context.call_method0(intern!(py, "copy"))?,
                )?;
                if *eager {
                    kwargs.set_item(intern!(py, "eager_start"), true)?;
                }
                task.bind(py).call((guarded,), Some(&kwargs))
            }
            // The task copies the context current as it is made.
            TaskMaker::CreateTask(create_task) => {
                context.call_method1(intern!(py, "run"), (create_task.bind(py), guarded))
            }
        }
    }
}

/// Whether this Python makes tasks eagerly (3.12 and later); asked once, since pyo3 reads the
/// version from its text each time.
fn eager_python(py: Python<'_>) -> bool {
    static EAGER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EAGER.get_or_init(|| py.version_info() >= (3, 12))
}

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

pub(crate) fn asyncio(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASYNCIO: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASYNCIO
        .get_or_try_init(py, || py.import("asyncio").map(|m| m.into_any().unbind()))
        .map(|m| m.bind(py))
}

/// `guarded(awaitable, settle)`: awaits it and hands what came of it to `settle`
/// (`TaskSettle`) in the task's own last step, rather than in a done callback a turn of the
/// loop later, which the batch would wait for (and which would cost every call a loop
/// callback). What it hands over:
///
/// - the value returned;
/// - an exception raised, which the task then does not raise again, so asyncio has none to
///   log as never retrieved. `SystemExit` is handed over as a `RuntimeError`: an asyncio task
///   re-raises it out of the event loop itself, so a handler calling `sys.exit()` would end
///   the app's loop (and `run_sync`); here it fails its own call (`internal_error`);
/// - a cancellation, which the task then raises again, so it ends cancelled (and the same
///   for a task collected while it waited on what nothing will ever finish: `GeneratorExit`);
/// - `KeyboardInterrupt`, raised again: it is the user's Ctrl-C.
///
/// A task cancelled before its first step never runs this; its `settle` is dropped unused
/// and settles the call then, closing the awaitable unrun (`TaskSettle`'s `Drop`).
fn exit_guard(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static GUARD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GUARD
        .get_or_try_init(py, || {
            let code = c"from asyncio import CancelledError

async def guarded(awaitable, settle):
    try:
        value = await awaitable
    except (CancelledError, GeneratorExit, KeyboardInterrupt) as error:
        settle(None, error)
        raise
    except SystemExit as exit:
        settle(None, RuntimeError(
            f'the handler raised SystemExit({exit.code!r}); a handler cannot end the process'
        ))
        return None
    except BaseException as error:
        settle(None, error)
        return None
    settle(value, None)
    return value
";
            Ok(pyo3::types::PyModule::from_code(
                py,
                code,
                c"tooljig_exit_guard.py",
                c"tooljig_exit_guard",
            )?
            .getattr("guarded")?
            .unbind())
        })
        .map(|g| g.bind(py))
}

fn coroutine_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static COROUTINE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    COROUTINE
        .get_or_try_init(py, || {
            Ok(py
                .import("types")?
                .getattr("CoroutineType")?
                .cast_into::<PyType>()?
                .unbind())
        })
        .map(|t| t.bind(py))
}
