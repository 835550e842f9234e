//! One batch's presence on the event loop of the code that started it.
//!
//! Async handlers must run on the caller's loop, and the tokio threads that drive the batch
//! must never wait for the interpreter (the loop thread may hold it for milliseconds while it
//! runs coroutines, and attaching during interpreter exit aborts the process). So the tokio
//! side only *posts* messages — start this handler, cancel that task, here is an event, the
//! batch is done — into an inbox, and wakes the loop through its [`LoopWaker`] (one byte to a
//! socket the loop watches). The loop thread drains the inbox in one go and does the Python
//! work there: one wake-up for many calls, no interpreter lock on tokio threads. What the loop
//! thread itself posts while serving needs no wake-up at all.
//!
//! Loops without `add_reader` (e.g. the Windows proactor loop) are woken with
//! `loop.call_soon_threadsafe` instead, which attaches briefly from the posting thread.

use crate::args::{Args, CtxArg};
use crate::awaitable;
use crate::convert;
use crate::driven::{BatchFuture, Driven};
use crate::events::PyEvent;
use crate::events::queue::EventQueue;
use crate::guarded::{Guarded, Settle};
#[cfg(unix)]
use crate::loop_waker::{LoopWaker, Woken};
use crate::outcome;
use crate::results::PyBatchResult;
use crate::task::TaskMaker;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyWeakrefMethods, PyWeakrefReference};
use pyo3_async_runtimes::TaskLocals;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tooljig::{BatchResult, Event, HandlerResult, ToolError};

/// Locks `m` even when poisoned: a panic elsewhere must not wedge every later batch or run.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the tokio side asks the loop thread to do.
pub enum Msg {
    /// Start an async handler (or await what a sync handler returned) as a task.
    Start(Start),
    /// Cancel the task of a handler whose call timed out or whose batch was cancelled.
    Cancel(Arc<TaskSlot>),
    /// An event of the batch, for `Engine.stream`.
    Event(Event),
    /// The batch finished.
    Done(BatchResult),
    /// A one-call batch finished; its future resolves with that call's result
    /// (`ctx.call(...)`).
    DoneOne(BatchResult),
    /// A durable-run operation (`durable.rs`) answered: a JSON value, or the core's refusal,
    /// raised as `tooljig.ToolError`.
    Reply(Result<Value, ToolError>),
    /// The batch's future was woken: poll it (`driven.rs`).
    Poll,
}

thread_local! {
    /// The host whose inbox this thread is serving now, if any: what it posts to that inbox
    /// is taken before serving ends, so it needs no wake-up.
    static SERVING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A task to start on the loop.
pub struct Start {
    /// What to await.
    pub what: Awaitable,
    /// Where its outcome goes.
    pub slot: Arc<TaskSlot>,
}

/// What a task awaits.
// Moved once, into the message that starts it; boxing the common variant would cost every
// call an allocation to spare the rare one a few bytes.
#[allow(clippy::large_enum_variant)]
pub enum Awaitable {
    /// `invoke(arguments, ctx)` of an async handler, or of a sync one run on the loop.
    Call {
        /// The handler's invoker.
        invoke: Arc<Py<PyAny>>,
        /// Validated arguments.
        args: Args,
        /// What the second argument is.
        ctx: CtxArg,
        /// A `def` run right here (`sync_to_thread=False`): called in a copy of the batch's
        /// `contextvars`, as a worker thread would call it, since its body runs in the call.
        sync: bool,
    },
    /// An awaitable a sync handler returned.
    Object(Py<PyAny>),
}

enum SlotState {
    Queued,
    /// Its handler is being called and its task made, with the state unlocked: a task made
    /// eagerly may settle the slot before it is made.
    Starting,
    /// Its task, weakly: the task's coroutine holds this slot (`guarded.rs`),
    /// and a strong reference back would keep a task cancelled before its first step alive
    /// for ever, with the coroutine that settles the call when it is dropped. The loop
    /// keeps a running task alive, and what it awaits keeps a waiting one.
    Running(Py<PyWeakrefReference>),
    Finished,
    Abandoned,
}

/// One handler attempt that runs (or may run) as a task on the loop.
pub struct TaskSlot {
    state: Mutex<SlotState>,
    tx: Mutex<Option<oneshot::Sender<HandlerResult>>>,
}

impl TaskSlot {
    /// A slot and the receiver of its outcome.
    pub fn new() -> (Arc<TaskSlot>, oneshot::Receiver<HandlerResult>) {
        let (tx, rx) = oneshot::channel();
        let slot = TaskSlot {
            state: Mutex::new(SlotState::Queued),
            tx: Mutex::new(Some(tx)),
        };
        (Arc::new(slot), rx)
    }

    /// Delivers the outcome (once; later calls do nothing).
    pub fn finish(&self, result: HandlerResult) {
        *lock(&self.state) = SlotState::Finished;
        if let Some(tx) = lock(&self.tx).take() {
            let _ = tx.send(result);
        }
    }
}

/// Held by the future awaiting a slot: when that future is dropped before the outcome came
/// (a timeout, a cancelled batch), the handler's task is cancelled too.
pub struct AbandonGuard {
    slot: Arc<TaskSlot>,
    host: Arc<BatchHost>,
}

impl AbandonGuard {
    /// Guards `slot` of a batch.
    pub fn new(slot: Arc<TaskSlot>, host: Arc<BatchHost>) -> Self {
        AbandonGuard { slot, host }
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.slot.state);
        match &*state {
            // Starting: `start_task` cancels the task it made when it sees this.
            SlotState::Queued | SlotState::Starting => *state = SlotState::Abandoned,
            SlotState::Running(_) => {
                drop(state);
                self.host.post(Msg::Cancel(self.slot.clone()));
            }
            SlotState::Finished | SlotState::Abandoned => {}
        }
    }
}

/// What only the loop thread touches.
struct LoopSide {
    /// The asyncio future `Engine.run` awaits.
    result: Py<PyAny>,
    /// Its done callback that cancels the batch when the future is cancelled
    /// ([`BatchHost::cancel_with`]), taken off before the batch settles it.
    on_cancel: Option<Py<PyAny>>,
    /// Events not yet taken by `next_events`, when the batch streams them; done once `Done`
    /// was handled.
    events: EventQueue<Event>,
}

/// The batch's inbox and its way to wake the loop.
pub struct BatchHost {
    locals: TaskLocals,
    inbox: Mutex<Vec<Msg>>,
    wake_pending: AtomicBool,
    /// How tokio threads wake the loop; `None`: through `call_soon_threadsafe`.
    #[cfg(unix)]
    waker: Option<Arc<LoopWaker>>,
    side: Mutex<LoopSide>,
    /// Makes the handlers' tasks; outside `side`, which a task's eager first step may lock.
    tasks: TaskMaker,
    driven: Arc<Driven>,
    /// Queues a poll of `driven`; made at its first poll.
    poll_waker: std::sync::OnceLock<std::task::Waker>,
}

impl BatchHost {
    /// A host on the running loop of `locals`, resolving `result` when the batch is done.
    /// Must be called on the loop's thread.
    pub fn start(
        py: Python<'_>,
        locals: TaskLocals,
        result: Bound<'_, PyAny>,
        stream_events: bool,
    ) -> PyResult<Arc<BatchHost>> {
        let event_loop = locals.event_loop(py);
        Guarded::register(py)?;
        let tasks = TaskMaker::new(&event_loop)?;
        #[cfg(unix)]
        let waker = LoopWaker::of(py, &event_loop)?;
        Ok(Arc::new(BatchHost {
            locals,
            inbox: Mutex::new(Vec::new()),
            wake_pending: AtomicBool::new(false),
            #[cfg(unix)]
            waker,
            side: Mutex::new(LoopSide {
                result: result.unbind(),
                on_cancel: None,
                events: EventQueue::new(stream_events),
            }),
            tasks,
            driven: Arc::default(),
            poll_waker: std::sync::OnceLock::new(),
        }))
    }

    /// The caller's `contextvars` context, which handlers run in a copy of.
    pub fn context<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.locals.context(py)
    }

    /// Whether this thread serves the batch's inbox right now: it is the loop thread,
    /// attached, and what it posts is handled before serving ends.
    pub fn serves_here(self: &Arc<Self>) -> bool {
        SERVING.get() == Arc::as_ptr(self) as usize
    }

    /// Queues a message for the loop thread and wakes it if it is not awake already.
    /// Never attaches to the interpreter, unless the loop has no `add_reader`.
    pub fn post(self: &Arc<Self>, msg: Msg) {
        lock(&self.inbox).push(msg);
        if self.serves_here() {
            return;
        }
        if self.wake_pending.swap(true, Ordering::SeqCst) {
            return;
        }
        #[cfg(unix)]
        if let Some(waker) = &self.waker {
            waker.wake(self.clone());
            return;
        }
        if crate::runtime::shutting_down() {
            return;
        }
        let host = self.clone();
        let _ = Python::try_attach(move |py| -> PyResult<()> {
            let drain = Py::new(py, Drain(host.clone()))?;
            host.locals
                .event_loop(py)
                .call_method1("call_soon_threadsafe", (drain,))?;
            Ok(())
        });
    }

    /// Handles every message posted since the wake-up that brought the loop here. Runs on
    /// the loop thread.
    fn serve_posted(self: &Arc<Self>, py: Python<'_>) {
        // Cleared before the inbox is taken: a post after this wakes the loop again, and a
        // post before it is in the inbox taken now.
        self.wake_pending.store(false, Ordering::SeqCst);
        self.serve(py);
    }

    /// Whether a batch may be polled on the loop's thread: only when other threads wake the
    /// loop without the interpreter (a socket it watches). Through `call_soon_threadsafe` a
    /// waking thread would wait for the interpreter the polling loop holds, perhaps holding a
    /// lock the poll needs.
    pub fn can_drive(&self) -> bool {
        #[cfg(unix)]
        return self.waker.is_some();
        #[cfg(not(unix))]
        false
    }

    /// Runs `batch` to its end by polls on this, the loop's thread; the first one now.
    pub fn drive(self: &Arc<Self>, py: Python<'_>, batch: BatchFuture, runtime: Handle) {
        self.driven.set(batch, runtime);
        if self.driven.should_queue() {
            lock(&self.inbox).push(Msg::Poll);
        }
        self.serve(py);
    }

    fn poll_waker(self: &Arc<Self>) -> &std::task::Waker {
        self.poll_waker
            .get_or_init(|| std::task::Waker::from(Arc::new(PollWaker(Arc::downgrade(self)))))
    }

    /// Queues a poll of the driven batch, unless one is queued already.
    pub fn queue_poll(self: &Arc<Self>) {
        if self.driven.should_queue() {
            self.post(Msg::Poll);
            if !self.serves_here() {
                // Woken from elsewhere: the loop may never come back for it; unless it polls
                // within `TAKE_OVER`, the runtime takes the batch (`watchdog.rs`).
                crate::watchdog::arm(&self.driven);
            }
        }
    }

    /// Handles every queued message, and those they queue in turn, on the loop thread.
    fn serve(self: &Arc<Self>, py: Python<'_>) {
        let outer = SERVING.replace(Arc::as_ptr(self) as usize);
        loop {
            let messages = std::mem::take(&mut *lock(&self.inbox));
            if messages.is_empty() {
                break;
            }
            for msg in messages {
                let handled = match msg {
                    Msg::Start(start) => self.start_task(py, start),
                    Msg::Cancel(slot) => cancel_task(py, &slot),
                    Msg::Event(event) => self.push_event(py, event),
                    Msg::Done(out) => self.finish(py, out),
                    Msg::DoneOne(out) => self.finish_one(py, out),
                    Msg::Reply(out) => self.reply(py, out),
                    Msg::Poll => match self.driven.poll(self.poll_waker()) {
                        Ok(()) => Ok(()),
                        Err(why) => self.fail(py, why),
                    },
                };
                if let Err(e) = handled {
                    // Nothing awaits these errors; report them as asyncio reports a failing
                    // callback.
                    e.write_unraisable(py, None);
                }
            }
        }
        SERVING.set(outer);
    }

    fn start_task(self: &Arc<Self>, py: Python<'_>, start: Start) -> PyResult<()> {
        let Start { what, slot } = start;
        {
            let mut state = lock(&slot.state);
            if !matches!(*state, SlotState::Queued) {
                drop(state);
                if let Awaitable::Object(obj) = what {
                    // Nobody waits for it; close a coroutine rather than leave it never awaited.
                    if obj.bind(py).hasattr(intern!(py, "close"))? {
                        obj.bind(py).call_method0(intern!(py, "close"))?;
                    }
                }
                return Ok(());
            }
            *state = SlotState::Starting;
        }
        let tool = match &what {
            Awaitable::Call { ctx, .. } => ctx.tool().cloned(),
            Awaitable::Object(_) => None,
        };
        let made = match what {
            Awaitable::Call {
                invoke,
                args,
                ctx,
                sync,
            } => args.into_py(py).and_then(|args| {
                let ctx = ctx.make(py)?;
                let invoke = invoke.bind(py);
                if sync {
                    let copy = self
                        .locals
                        .context(py)
                        .call_method0(pyo3::intern!(py, "copy"))?;
                    let run = pyo3::intern!(py, "run");
                    match ctx {
                        Some(ctx) => copy.call_method1(run, (invoke, args, ctx)),
                        None => copy.call_method1(run, (invoke, args)),
                    }
                } else {
                    match ctx {
                        Some(ctx) => invoke.call1((args, ctx)),
                        None => invoke.call1((args,)),
                    }
                }
            }),
            Awaitable::Object(obj) => Ok(obj.into_bound(py)),
        };
        let obj = match made {
            Ok(obj) => obj,
            Err(e) => {
                let _ = interrupt_on_ctrl_c(py, &e);
                slot.finish(Err(outcome::from_error(py, &e)));
                return Ok(());
            }
        };
        if !awaitable::is_awaitable(&obj)? {
            // An `async` handler that returned a plain value (e.g. a wrapped callable).
            slot.finish(outcome::from_value(&obj));
            return Ok(());
        }
        let settle = Box::new(SlotSettle {
            slot: slot.clone(),
            host: self.clone(),
        });
        let guarded = Bound::new(py, Guarded::new(obj.unbind(), settle))?;
        let task = match self.tasks.start(
            guarded,
            &self.locals.context(py),
            tool.as_ref(),
            self.driven.is_set(),
        ) {
            Ok(task) => task,
            // Its eager first step raised Ctrl-C: the call has it already, now the app does.
            Err(e) if interrupt_on_ctrl_c(py, &e) => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut state = lock(&slot.state);
        match &*state {
            SlotState::Starting => {
                *state = SlotState::Running(PyWeakrefReference::new(&task)?.unbind());
            }
            // Given up while its task was made (a timeout, the batch cancelled).
            SlotState::Abandoned => {
                drop(state);
                task.call_method0(intern!(py, "cancel"))?;
            }
            // Settled in its eager first step.
            _ => {}
        }
        Ok(())
    }

    fn push_event(&self, py: Python<'_>, event: Event) -> PyResult<()> {
        let ready = {
            let mut side = lock(&self.side);
            side.events.push(event);
            side.events.ready()
        };
        if let Some((waiter, events)) = ready {
            resolve(waiter.bind(py), to_list(py, events)?.into_any())?;
        }
        Ok(())
    }

    /// Makes a cancelled batch future cancel `cancel`, by a done callback on the future.
    /// The batch takes it off before it settles the future itself: left on, it would be
    /// scheduled as the future settles, a loop callback a batch only to find it was not
    /// cancelled.
    pub fn cancel_with(&self, py: Python<'_>, cancel: &CancellationToken) -> PyResult<()> {
        let callback = Bound::new(py, CancelOnCancelled(cancel.clone()))?.into_any();
        let future = lock(&self.side).result.clone_ref(py);
        future.call_method1(py, intern!(py, "add_done_callback"), (&callback,))?;
        lock(&self.side).on_cancel = Some(callback.unbind());
        Ok(())
    }

    /// Takes the done callback of [`BatchHost::cancel_with`] off `future`, about to settle.
    fn uncancel(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let callback = lock(&self.side).on_cancel.take();
        if let Some(callback) = callback {
            future.call_method1(intern!(future.py(), "remove_done_callback"), (callback,))?;
        }
        Ok(())
    }

    fn finish(&self, py: Python<'_>, out: BatchResult) -> PyResult<()> {
        let result = Py::new(py, PyBatchResult::new(py, out)?)?;
        let (future, ready) = {
            let mut side = lock(&self.side);
            side.events.finish();
            (side.result.clone_ref(py), side.events.ready())
        };
        self.uncancel(future.bind(py))?;
        resolve(future.bind(py), result.into_bound(py).into_any())?;
        if let Some((waiter, events)) = ready {
            resolve(waiter.bind(py), to_list(py, events)?.into_any())?;
        }
        Ok(())
    }

    /// Ends the batch with `RuntimeError(why)` (its future panicked).
    fn fail(&self, py: Python<'_>, why: String) -> PyResult<()> {
        let future = {
            let mut side = lock(&self.side);
            side.events.finish();
            side.result.clone_ref(py)
        };
        let future = future.bind(py);
        self.uncancel(future)?;
        if !future.call_method0(intern!(py, "done"))?.is_truthy()? {
            let exc = pyo3::exceptions::PyRuntimeError::new_err(why);
            future.call_method1(intern!(py, "set_exception"), (exc.value(py),))?;
        }
        Ok(())
    }

    fn finish_one(&self, py: Python<'_>, mut out: BatchResult) -> PyResult<()> {
        let future = {
            let mut side = lock(&self.side);
            side.events.finish();
            side.result.clone_ref(py)
        };
        let result = match out.results.pop() {
            Some(r) => Py::new(py, crate::results::PyCallResult::new(r))?.into_any(),
            None => py.None(),
        };
        self.uncancel(future.bind(py))?;
        resolve(future.bind(py), result.into_bound(py))
    }

    fn reply(&self, py: Python<'_>, out: Result<Value, ToolError>) -> PyResult<()> {
        let future = {
            let mut side = lock(&self.side);
            side.events.finish();
            side.result.clone_ref(py)
        };
        let future = future.bind(py);
        self.uncancel(future)?;
        if future.call_method0(intern!(py, "done"))?.is_truthy()? {
            return Ok(());
        }
        // Whatever happens, the future settles: a conversion failure is its exception.
        let settled = match out {
            Ok(value) => convert::to_py(py, &value)
                .and_then(|v| future.call_method1(intern!(py, "set_result"), (v,))),
            Err(e) => outcome::to_py_error(py, &e)
                .and_then(|exc| future.call_method1(intern!(py, "set_exception"), (exc,))),
        };
        if let Err(e) = settled {
            future.call_method1(intern!(py, "set_exception"), (e.value(py),))?;
        }
        Ok(())
    }

    /// The events streamed so far, as a future: resolved at once when some are buffered
    /// (an empty list once the batch is done), else when the next one arrives.
    pub fn next_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let future = self
            .locals
            .event_loop(py)
            .call_method0(intern!(py, "create_future"))?;
        let now = lock(&self.side).events.next(&future, "batch")?;
        if let Some(events) = now {
            future.call_method1(intern!(py, "set_result"), (to_list(py, events)?,))?;
        }
        Ok(future)
    }

    /// A handler task ended with `result` (`guarded.rs`): hands it over and, on this same
    /// thread, goes on with what that wakes (the batch's next poll, its end) without a
    /// wake-up of the loop.
    fn task_done(self: &Arc<Self>, py: Python<'_>, slot: &TaskSlot, result: HandlerResult) {
        let me = Arc::as_ptr(self) as usize;
        let outer = SERVING.replace(me);
        slot.finish(result);
        SERVING.set(outer);
        // Settled in an eager first step inside `serve`: what this woke is served there.
        if outer != me {
            self.serve(py);
        }
    }
}

fn to_list(py: Python<'_>, events: Vec<Event>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(
        py,
        events
            .into_iter()
            .map(|e| Py::new(py, PyEvent::new(e)))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

/// Sets a future's result unless it was cancelled meanwhile.
pub(crate) fn resolve(future: &Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<()> {
    let py = future.py();
    if future.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(());
    }
    future.call_method1(intern!(py, "set_result"), (value,))?;
    Ok(())
}

fn cancel_task(py: Python<'_>, slot: &TaskSlot) -> PyResult<()> {
    let task = match &*lock(&slot.state) {
        SlotState::Running(task) => task.bind(py).upgrade(),
        _ => return Ok(()),
    };
    if let Some(task) = task {
        task.call_method0(intern!(py, "cancel"))?;
    }
    Ok(())
}

/// Ctrl-C in a handler on the loop is the app's, not the call's to swallow: passed on to the
/// main thread; whether `e` was one.
fn interrupt_on_ctrl_c(py: Python<'_>, e: &PyErr) -> bool {
    let ctrl_c = e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py);
    if ctrl_c {
        crate::interrupt::interrupt_main(py);
    }
    ctrl_c
}

/// What `call_soon_threadsafe` runs on a loop that cannot watch a socket: serves the inbox.
#[pyclass(frozen)]
struct Drain(Arc<BatchHost>);

#[pymethods]
impl Drain {
    fn __call__(&self, py: Python<'_>) {
        self.0.serve_posted(py);
    }
}

/// The call of a handler task's coroutine (`guarded.rs`): its slot, in its batch.
struct SlotSettle {
    slot: Arc<TaskSlot>,
    host: Arc<BatchHost>,
}

impl Settle for SlotSettle {
    fn in_step(self: Box<Self>, py: Python<'_>, result: HandlerResult) {
        self.host.task_done(py, &self.slot, result);
    }

    fn outside(self: Box<Self>, result: HandlerResult) {
        self.slot.finish(result);
    }
}

#[cfg(unix)]
impl Woken for BatchHost {
    fn serve_woken(self: Arc<Self>, py: Python<'_>) {
        self.serve_posted(py);
    }
}

/// Wakes a driven batch by queueing a poll in its host's inbox. Weak: the future holds its
/// waker, and the host holds the future.
struct PollWaker(std::sync::Weak<BatchHost>);

impl std::task::Wake for PollWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(host) = self.0.upgrade() {
            host.queue_poll();
        }
    }
}

/// The result future's done callback: a cancelled future cancels the batch.
#[pyclass(frozen)]
pub struct CancelOnCancelled(pub CancellationToken);

#[pymethods]
impl CancelOnCancelled {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = future.py();
        if future.call_method0(intern!(py, "cancelled"))?.is_truthy()? {
            self.0.cancel();
        }
        Ok(())
    }
}
