//! A handler's task on the loop: how it is made. What it runs, the handler's awaitable guarded
//! so that its outcome reaches the call in the task's own last step, is `guarded.rs`.
//!
//! A task takes its first step as it is made: a handler that returns without waiting (most
//! do: a lookup in memory, a check) has settled its call before the loop turns, and a one-call
//! batch driven on the caller's thread ends inside `Engine.run`, which then never suspends.
//! On Python 3.12 and later that is `eager_start`. Python 3.11 has none, so the step is taken
//! here as 3.12 takes it: the task made current for its loop in place of the caller's, in the
//! task's own context, so `asyncio.current_task()` (and `asyncio.timeout()`, which cancels it)
//! names the handler's task, never the caller's; what the step leaves waits for the task's own
//! first step (`guarded.rs`). That step is one more for each task, so on 3.11 it is taken only
//! in a batch polled on the caller's thread (`driven.rs`), which it may end before the loop
//! turns; a large batch's tasks start on the next turn, which the batch waits for anyway. An
//! app's own task factory (`loop.set_task_factory`) is respected: with one, tasks are made
//! through it and start on the next turn.

use crate::guarded::Guarded;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use std::sync::{Arc, Mutex};

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
                task: task_class(py)?.clone().unbind(),
                event_loop: event_loop.clone().unbind(),
                eager: eager_python(py),
            });
        }
        let create_task = event_loop.getattr(intern!(py, "create_task"))?;
        Ok(TaskMaker::CreateTask(create_task.unbind()))
    }

    /// A task running `guarded` (the handler's awaitable, guarded: `guarded.rs`) in a copy of
    /// `context`, named after its tool. Unless made through the app's task factory, its first
    /// step has run when this returns, and the call may have been settled: on Python 3.11
    /// only when `early` (its batch is polled on this thread).
    pub(crate) fn start<'py>(
        &self,
        guarded: Bound<'py, Guarded>,
        context: &Bound<'py, PyAny>,
        tool: Option<&Arc<str>>,
        early: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = guarded.py();
        match self {
            TaskMaker::Direct {
                task,
                event_loop,
                eager,
            } => {
                let context = context.call_method0(intern!(py, "copy"))?;
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "loop"), event_loop.bind(py))?;
                kwargs.set_item(intern!(py, "context"), &context)?;
                // Named, a task is made without formatting a name of its own (`Task-<n>`),
                // a tenth of what a task costs; and `asyncio.all_tasks()` shows the tool.
                kwargs.set_item(intern!(py, "name"), task_name(py, tool))?;
                if *eager {
                    kwargs.set_item(intern!(py, "eager_start"), true)?;
                }
                let made = task.bind(py).call((guarded.as_any(),), Some(&kwargs))?;
                if early && !*eager && Guarded::may_step_first() {
                    step_first(&made, &guarded, &context, event_loop.bind(py))?;
                }
                Ok(made)
            }
            // The task copies the context current as it is made.
            TaskMaker::CreateTask(create_task) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "name"), task_name(py, tool))?;
                let run = context.getattr(intern!(py, "run"))?;
                run.call((create_task.bind(py), guarded), Some(&kwargs))
            }
        }
    }
}

/// Takes `guarded`'s first step now as `task`'s, as Python 3.12 does for a task made with
/// `eager_start`: `task` is its loop's current task meanwhile (the caller's, if any, is put
/// back after), and the step runs in the task's `context`.
fn step_first<'py>(
    task: &Bound<'py, PyAny>,
    guarded: &Bound<'py, Guarded>,
    context: &Bound<'py, PyAny>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<()> {
    let py = task.py();
    let current = current_tasks(py)?;
    let caller = current.get_item(event_loop)?;
    current.set_item(event_loop, task)?;
    // The method as the class holds it, called with `guarded`: no bound method made a task.
    static STEP_FIRST: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let step = STEP_FIRST.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.get_type::<Guarded>().getattr("_step_first")?.unbind())
    })?;
    let stepped = context.call_method1(intern!(py, "run"), (step.bind(py), guarded));
    match caller {
        Some(caller) => current.set_item(event_loop, caller)?,
        None => current.del_item(event_loop)?,
    }
    stepped.map(drop)
}

/// asyncio's table of each loop's current task (`asyncio.tasks._current_tasks`), which
/// `asyncio.current_task()` reads and `_enter_task`/`_leave_task` write.
fn current_tasks(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    static CURRENT: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    CURRENT.import(py, "asyncio.tasks", "_current_tasks")
}

/// Handler tasks' names, `tooljig:<tool>`, each made once, not once a batch; past `NAMES`
/// tools, made for each task.
type Names = Mutex<Vec<(Arc<str>, Py<PyString>)>>;

const NAMES: usize = 256;

/// The name of a task of `tool`'s handler (`tooljig` when it is no tool's).
fn task_name<'py>(py: Python<'py>, tool: Option<&Arc<str>>) -> Bound<'py, PyString> {
    static NAMED: PyOnceLock<Names> = PyOnceLock::new();
    let Some(tool) = tool else {
        return intern!(py, "tooljig").clone();
    };
    let named = NAMED.get_or_init(py, Mutex::default);
    if let Some((_, name)) = lock(named)
        .iter()
        .find(|(t, _)| Arc::ptr_eq(t, tool) || t == tool)
    {
        return name.bind(py).clone();
    }
    let name = PyString::new(py, &format!("tooljig:{tool}"));
    let mut named = lock(named);
    if named.len() < NAMES {
        named.push((tool.clone(), name.clone().unbind()));
    }
    name
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether this Python makes tasks eagerly itself (3.12 and later); asked once, since pyo3 reads the
/// version from its text each time.
fn eager_python(py: Python<'_>) -> bool {
    static EAGER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EAGER.get_or_init(|| py.version_info() >= (3, 12))
}

/// `asyncio.Task`, looked up once rather than once a batch.
fn task_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    TASK.import(py, "asyncio", "Task")
}
