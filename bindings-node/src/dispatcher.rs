//! The one way Rust calls JavaScript.
//!
//! Every JS handler call goes through one weak threadsafe function per engine. A call is
//! queued; the first call into an empty queue wakes the JS thread once, and the JS layer then
//! receives everything queued so far as one JSON text, runs each handler, and settles the
//! calls in bulk through [`Dispatcher::settle`]. A Rust → JS → Rust round trip costs tens of
//! µs; paid once per wake-up rather than once per call, it amortizes across a batch.
//!
//! The threadsafe function is built with `CalleeHandled = false` (the JS function gets the text
//! alone, not `(err, value)`) and `Weak = true` (an idle engine never keeps Node alive: a
//! running batch does, through the promise it returns). The JS dispatcher never throws; it
//! catches every handler failure itself and settles it as data.
//!
//! Cancellation travels the same queue: when the core drops or cancels an attempt, its token
//! is queued as an abort and the JS layer fires that call's `AbortSignal`.

use crate::keys;
use crate::outcome::{parse_settlements, to_handler_result};
use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;
use tooljig::{Caller, HandlerError, HandlerResult, ToolContext};

/// Wakes the JS thread; the argument handed to JS is the drained queue as JSON text.
type Wake = ThreadsafeFunction<(), (), String, Status, false, true>;

/// Why a call had no result from JavaScript.
const GONE: &str = "the JavaScript environment shut down before the handler finished";

/// One handler call waiting for the JS thread.
struct Request {
    token: u64,
    tool: u32,
    call_id: Arc<str>,
    attempt: u32,
    caller: Arc<Caller>,
    args: Value,
}

#[derive(Default)]
struct Queue {
    calls: Vec<Request>,
    aborts: Vec<u64>,
    scheduled: bool,
}

/// State shared by the engine's handlers and the wake-up callback on the JS thread.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    pending: Mutex<HashMap<u64, oneshot::Sender<HandlerResult>>>,
    next_token: AtomicU64,
}

/// What the JS layer receives per wake-up.
#[derive(Serialize)]
struct Drained<'a> {
    /// Distinct callers of the drained calls (camelCase keys), referenced by index.
    callers: Vec<Value>,
    /// `[token, toolIndex, callId, attempt, callerIndex, args]` per call.
    calls: Vec<(u64, u32, &'a str, u32, usize, &'a Value)>,
    /// Tokens whose signal must fire.
    aborts: Vec<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Takes everything queued and renders it for the JS layer (runs on the JS thread).
    fn drain(&self) -> String {
        let (calls, aborts) = {
            let mut q = lock(&self.queue);
            q.scheduled = false;
            (std::mem::take(&mut q.calls), std::mem::take(&mut q.aborts))
        };
        let mut seen: Vec<*const Caller> = Vec::new();
        let mut callers = Vec::new();
        let mut rows = Vec::with_capacity(calls.len());
        for r in &calls {
            let ptr = Arc::as_ptr(&r.caller);
            let index = match seen.iter().position(|&p| p == ptr) {
                Some(i) => i,
                None => {
                    seen.push(ptr);
                    let caller = serde_json::to_value(&*r.caller).unwrap_or(Value::Null);
                    callers.push(keys::rename(caller, keys::camel, &[]));
                    seen.len() - 1
                }
            };
            rows.push((
                r.token,
                r.tool,
                r.call_id.as_ref(),
                r.attempt,
                index,
                &r.args,
            ));
        }
        let drained = Drained {
            callers,
            calls: rows,
            aborts,
        };
        // Values came from serde_json and contain no non-string keys: this cannot fail.
        serde_json::to_string(&drained)
            .unwrap_or_else(|_| r#"{"callers":[],"calls":[],"aborts":[]}"#.into())
    }

    /// Ends every waiting call with an unexpected failure (the JS side is gone).
    fn fail_all(&self) {
        let senders: Vec<_> = lock(&self.pending).drain().map(|(_, s)| s).collect();
        for s in senders {
            let _ = s.send(Err(HandlerError::unexpected(GONE)));
        }
    }
}

/// Calls the JS handlers of one engine.
pub struct Dispatcher {
    shared: Arc<Shared>,
    wake: Wake,
}

impl Dispatcher {
    /// A dispatcher over the JS layer's `dispatch(text)` function.
    pub fn new(dispatch: Function<String, ()>) -> napi::Result<Self> {
        let shared = Arc::new(Shared::default());
        let on_js_thread = shared.clone();
        let wake = dispatch
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx| Ok(on_js_thread.drain()))?;
        Ok(Dispatcher { shared, wake })
    }

    /// Queues one call of the handler registered at `tool`; the receiver gets its result.
    pub fn call(
        &self,
        tool: u32,
        args: Value,
        ctx: &ToolContext,
    ) -> (u64, oneshot::Receiver<HandlerResult>) {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(token, tx);
        let wake = {
            let mut q = lock(&self.shared.queue);
            q.calls.push(Request {
                token,
                tool,
                call_id: ctx.call_id.clone(),
                attempt: ctx.attempt,
                caller: ctx.caller.clone(),
                args,
            });
            !std::mem::replace(&mut q.scheduled, true)
        };
        if wake {
            self.wake_js();
        }
        (token, rx)
    }

    /// Fires the call's `AbortSignal`. With `forget`, its result is no longer awaited.
    pub fn abort(&self, token: u64, forget: bool) {
        if forget {
            lock(&self.shared.pending).remove(&token);
        }
        let wake = {
            let mut q = lock(&self.shared.queue);
            q.aborts.push(token);
            !std::mem::replace(&mut q.scheduled, true)
        };
        if wake {
            self.wake_js();
        }
    }

    fn wake_js(&self) {
        let status = self.wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
        if status != Status::Ok {
            // Node is exiting (or the function was released): nobody will run these calls.
            lock(&self.shared.queue).calls.clear();
            self.shared.fail_all();
        }
    }

    /// Delivers results the JS layer settled, as `[[token, kind, payload], ...]` text.
    /// Tokens nobody waits for any more (timed out, cancelled) are ignored.
    pub fn settle(&self, text: &str) -> napi::Result<()> {
        let settled = parse_settlements(text).map_err(|e| {
            napi::Error::new(
                Status::InvalidArg,
                format!("malformed settlement text: {e}"),
            )
        })?;
        let senders: Vec<_> = {
            let mut pending = lock(&self.shared.pending);
            settled
                .into_iter()
                .filter_map(|(token, kind, payload)| {
                    pending.remove(&token).map(|s| (s, kind, payload))
                })
                .collect()
        };
        for (sender, kind, payload) in senders {
            let _ = sender.send(to_handler_result(kind, payload));
        }
        Ok(())
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.shared.fail_all();
    }
}
