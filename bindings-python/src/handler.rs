//! `PyHandler`: the core's `Handler` seam implemented over a Python callable.
//!
//! The callable is the package's invoker, `invoke(arguments: dict, ctx: ToolContext)`, built
//! at registration around the user's function. Whether it is `async def` is known then too:
//!
//! - async: the call is posted to the batch's event loop (the caller's), which starts it as
//!   a task there; dropping the future (timeout, cancelled batch) cancels that task;
//! - sync: the call runs on a worker thread (`workers.rs`), so the loop stays responsive;
//!   it cannot be interrupted, but `ctx.cancelled` tells it to stop. If it returns an
//!   awaitable anyway, that is awaited on the loop like an async handler;
//! - sync on the loop (`sync_to_thread=False`, for handlers that never block): the call is
//!   posted like an async one and runs right there, with no thread to wake and no
//!   interpreter lock to pass; a handler that blocks stalls the loop for as long.
//!
//! Either way the handler runs in a copy of the caller's `contextvars` context.

use crate::args::{Args, CtxArg, MakeContext};
use crate::context::PyToolContext;
use crate::host::{AbandonGuard, Awaitable, BatchHost, Msg, Start, TaskSlot};
use crate::outcome;
use crate::workers;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use tooljig::{
    BoxFuture, ErrorCode, Handler, HandlerError, HandlerResult, HostData, ToolContext, ToolError,
};

/// How a Python handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `def`: on a worker thread.
    Sync,
    /// `async def`: as a task on the caller's event loop.
    Async,
    /// `def` that never blocks: called on the caller's event loop thread.
    SyncOnLoop,
}

/// A tool handler written in Python.
pub struct PyHandler {
    invoke: Arc<Py<PyAny>>,
    kind: Kind,
    /// Whether the function declared a context parameter: if not, `invoke` gets `None` for it
    /// and no context object is made for the call.
    takes_ctx: bool,
}

impl PyHandler {
    /// A handler calling `invoke(arguments, ctx)`.
    pub fn new(invoke: Py<PyAny>, kind: Kind) -> Self {
        PyHandler {
            invoke: Arc::new(invoke),
            kind,
            takes_ctx: true,
        }
    }

    /// The same, calling `invoke(arguments, None)`: the function takes no context.
    pub fn without_ctx(self) -> Self {
        PyHandler {
            takes_ctx: false,
            ..self
        }
    }

    /// The callable it calls.
    pub fn callable(&self) -> &Arc<Py<PyAny>> {
        &self.invoke
    }

    fn run(&self, args: Cow<'_, Value>, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let host = ctx.host.clone();
        let ctx = match self.takes_ctx {
            true => Context::Given(ctx),
            false => Context::Unused(ctx),
        };
        call_python(&self.invoke, self.kind, host, args, ctx, "a Python handler")
    }
}

impl Handler for PyHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.run(Cow::Owned(args), ctx)
    }

    /// Lent arguments are copied only when they must wait for the loop: on the loop thread
    /// (a batch polled there) they become Python objects at once.
    fn call_ref(&self, args: &Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.run(Cow::Borrowed(args), ctx)
    }
}

/// What an app callable gets beside its JSON argument.
pub enum Context {
    /// Nothing: `invoke(args)`, for the policy hook, a resolver or an approval predicate.
    Absent,
    /// `None`: `invoke(args, None)`, for a handler that declared no context; the attempt's
    /// context is dropped here, where it was made, and none is made for Python.
    Unused(ToolContext),
    /// The attempt's context: `invoke(args, ctx)`.
    Given(ToolContext),
}

/// Calls an app callable written in Python with a JSON argument (and what `ctx` says) on the
/// batch's event loop (`Kind::Async`) or a worker thread (`Kind::Sync`), and resolves to what
/// it returned or raised, read as a handler's outcome. `host` is the batch's [`BatchHost`];
/// `what` names the callable in the error when there is none.
pub fn call_python(
    invoke: &Arc<Py<PyAny>>,
    kind: Kind,
    host: Option<HostData>,
    args: Cow<'_, Value>,
    ctx: Context,
    what: &'static str,
) -> BoxFuture<HandlerResult> {
    let host = host.and_then(|h| h.downcast::<BatchHost>().ok());
    let Some(host) = host else {
        return Box::pin(async move {
            Err(HandlerError::unexpected(format!(
                "{what} was called outside a batch started from Python"
            )))
        });
    };
    let args = Args::for_batch(args, host.serves_here());
    let (slot, rx) = TaskSlot::new();
    let guard = AbandonGuard::new(slot.clone(), host.clone());
    match kind {
        Kind::Async | Kind::SyncOnLoop => host.post(Msg::Start(Start {
            what: Awaitable::Call {
                invoke: invoke.clone(),
                args,
                ctx: match ctx {
                    Context::Absent => CtxArg::Absent,
                    Context::Unused(ctx) => CtxArg::Unused(ctx.tool.clone()),
                    Context::Given(ctx) => {
                        CtxArg::Given(ctx, PyToolContext::into_py as MakeContext)
                    }
                },
                sync: kind == Kind::SyncOnLoop,
            },
            slot,
        })),
        Kind::Sync => {
            let invoke = invoke.clone();
            let job: workers::Job =
                Box::new(move |py| run_sync(py, &invoke, args, ctx, slot, &host));
            if workers::submit(job).is_err() {
                return Box::pin(async {
                    Err(HandlerError::unexpected(
                        "the interpreter is shutting down; the handler did not run",
                    ))
                });
            }
        }
    }
    Box::pin(async move {
        let outcome = rx.await;
        drop(guard);
        outcome.unwrap_or_else(|_| {
            Err(HandlerError::unexpected(
                "the handler was dropped before it reported (the interpreter is exiting)",
            ))
        })
    })
}

/// Runs a sync handler on a worker thread, attached.
fn run_sync(
    py: Python<'_>,
    invoke: &Py<PyAny>,
    args: Args,
    ctx: Context,
    slot: Arc<TaskSlot>,
    host: &Arc<BatchHost>,
) {
    let cancelled = match &ctx {
        Context::Absent => false,
        Context::Unused(c) | Context::Given(c) => c.cancel.is_cancelled(),
    };
    if cancelled {
        // Timed out or cancelled while queued: nobody waits for it any more.
        slot.finish(Err(HandlerError::Tool(ToolError::new(
            ErrorCode::Cancelled,
            "the call was cancelled before its handler started",
        ))));
        return;
    }
    let called = args.into_py(py).and_then(|args| {
        let context = host.context(py).call_method0(pyo3::intern!(py, "copy"))?;
        let run = pyo3::intern!(py, "run");
        match ctx {
            Context::Given(ctx) => {
                let ctx = Py::new(py, PyToolContext::new(ctx))?;
                context.call_method1(run, (invoke.bind(py), args, ctx))
            }
            Context::Unused(_) => context.call_method1(run, (invoke.bind(py), args, py.None())),
            Context::Absent => context.call_method1(run, (invoke.bind(py), args)),
        }
    });
    match called {
        Ok(value) if is_awaitable(&value) => host.post(Msg::Start(Start {
            what: Awaitable::Object(value.unbind()),
            slot,
        })),
        Ok(value) => slot.finish(outcome::from_value(&value)),
        Err(e) => {
            if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                crate::interrupt::interrupt_main(py);
            }
            slot.finish(Err(outcome::from_error(py, &e)));
        }
    }
}

fn is_awaitable(value: &Bound<'_, PyAny>) -> bool {
    // Plain JSON types are the common case; skip the attribute lookup for them.
    if value.is_none()
        || value.is_instance_of::<pyo3::types::PyDict>()
        || value.is_instance_of::<pyo3::types::PyList>()
        || value.is_instance_of::<pyo3::types::PyString>()
        || value.is_instance_of::<pyo3::types::PyInt>()
        || value.is_instance_of::<pyo3::types::PyFloat>()
    {
        return false;
    }
    value.get_type().hasattr("__await__").unwrap_or(false)
}
