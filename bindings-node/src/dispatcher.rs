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
//!
//! Besides tool handlers, the same queue carries the app's policy hook and resolvers (the
//! core's `PolicyHook` and `Resolver` seams): each is a JS function the JS layer keeps in a
//! table, asked with a JSON request and settled like a handler.

pub use crate::drained::AppFunction;
use crate::drained::{Ask, Callers, Drain, Request};
use crate::driven::{BatchFuture, Batches};
use crate::outcome::{UNEXPECTED, parse_settlements};
use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tooljig::{CancellationToken, Progress, ToolCalls, ToolContext};

/// Wakes the JS thread; the argument handed to JS is the drained queue as JSON text.
type Wake = ThreadsafeFunction<(), (), String, Status, false, true>;

/// Why a call had no result from JavaScript.
const GONE: &str = "the JavaScript environment shut down before the handler finished";
/// A drain with nothing in it.
const EMPTY: &str = "[]";
/// Why a call's result never arrived.
const LOST: &str = "the JavaScript function's result was lost (the engine was dropped)";

#[derive(Default)]
struct Queue {
    calls: Vec<Request>,
    asks: Vec<Ask>,
    aborts: Vec<u64>,
    /// Driven batches woken since the last drain (`driven.rs`).
    polls: Vec<u64>,
    /// Something is queued that no drain has taken yet.
    scheduled: bool,
    /// A wake-up is on its way to the JS thread, which drains whatever is queued when it
    /// arrives. Direct drains (a settle, a batch's start) clear `scheduled` but not this, so
    /// while the JS thread runs a long chain of promise jobs without returning to its event
    /// loop, wake-ups are not queued again and again behind the one it has yet to deliver
    /// (they piled up by the hundred, and an exit found them all undelivered).
    wake_in_flight: bool,
}

thread_local! {
    /// The dispatcher whose queue the JS thread is serving now, if any: what is queued to it
    /// meanwhile is drained before serving ends, so it needs no wake-up.
    static SERVING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How a JS function ended: `(kind, payload)` as `outcome.rs` describes.
pub type Settled = (u8, Value);

/// State shared by the engine's handlers and the wake-up callback on the JS thread.
struct Shared {
    queue: Mutex<Queue>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Settled>>>,
    /// What running calls may reach besides their outcome: where their progress goes (when
    /// someone listens) and the tools they may call (when their policy names some).
    reach: Mutex<HashMap<u64, Reach>>,
    next_token: AtomicU64,
    batches: Batches,
    /// The callers the JS layer holds (`drained.rs`); only drains touch it.
    callers: Mutex<Callers>,
}

/// What a running call may reach besides its outcome.
#[derive(Clone)]
struct Reach {
    progress: Option<Progress>,
    tools: Option<ToolCalls>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Polls the woken batches, takes everything queued and renders it for the JS layer;
    /// `None` when there is nothing. Runs on the JS thread.
    fn drain(&self) -> Option<String> {
        let outer = SERVING.replace(self as *const Shared as usize);
        let mut done = Vec::new();
        let (calls, asks, aborts) = loop {
            let polls = {
                let mut q = lock(&self.queue);
                if q.polls.is_empty() {
                    // Cleared with the last take: whatever is queued after it wakes us again.
                    q.scheduled = false;
                    break (
                        std::mem::take(&mut q.calls),
                        std::mem::take(&mut q.asks),
                        std::mem::take(&mut q.aborts),
                    );
                }
                std::mem::take(&mut q.polls)
            };
            for (id, ended) in self.batches.poll(polls) {
                done.push(match ended {
                    Ok(text) => (id, true, text),
                    Err(why) => (id, false, Value::String(why).to_string()),
                });
            }
        };
        SERVING.set(outer);
        let drain = Drain {
            done: &done,
            calls: &calls,
            asks: &asks,
            aborts: &aborts,
        };
        if drain.is_empty() {
            return None;
        }
        Some(drain.text(&mut lock(&self.callers)))
    }

    /// Whether this queue is being drained on this thread right now.
    fn serving(&self) -> bool {
        SERVING.get() == self as *const Shared as usize
    }

    /// Drops what is queued for JS and fails every waiting call: nobody will run them.
    fn abandon(&self) {
        let mut q = lock(&self.queue);
        q.calls.clear();
        q.wake_in_flight = false;
        drop(q);
        self.fail_all(GONE);
    }

    /// Ends every waiting call with an unexpected failure, saying why; how many there were.
    fn fail_all(&self, why: &str) -> usize {
        let senders: Vec<_> = lock(&self.pending).drain().map(|(_, s)| s).collect();
        let failed = senders.len();
        for s in senders {
            let _ = s.send((UNEXPECTED, Value::String(why.into())));
        }
        failed
    }
}

/// Calls the JS handlers of one engine.
pub struct Dispatcher {
    shared: Arc<Shared>,
    /// `None` once released: the threadsafe function holds the JS layer's `dispatch` (and so
    /// everything it reaches) strongly, so it must go for the engine to be freed.
    wake: Mutex<Option<Wake>>,
}

impl Dispatcher {
    /// A dispatcher over the JS layer's `dispatch(text)` function. Called on the JS thread.
    pub fn new(dispatch: Function<String, ()>) -> napi::Result<Self> {
        let runtime = napi::bindgen_prelude::within_runtime_if_available(Handle::current);
        let shared = Arc::new(Shared {
            queue: Mutex::default(),
            pending: Mutex::default(),
            reach: Mutex::default(),
            next_token: AtomicU64::new(0),
            batches: Batches::new(runtime),
            callers: Mutex::default(),
        });
        let on_js_thread = shared.clone();
        let wake = dispatch
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx| {
                lock(&on_js_thread.queue).wake_in_flight = false;
                Ok(on_js_thread.drain().unwrap_or_else(|| EMPTY.into()))
            })?;
        Ok(Dispatcher {
            shared,
            wake: Mutex::new(Some(wake)),
        })
    }

    /// Lets go of the JS layer: what is queued or waits for it fails, and nothing wakes it
    /// again. Called once the app no longer holds its engine (`NativeEngine.release`), when
    /// nobody is left to run a handler.
    pub fn release(&self) {
        let wake = lock(&self.wake).take();
        drop(wake);
        self.shared.abandon();
    }

    /// Starts batch `id` (the JS layer's number) on the JS thread: polls it once and returns
    /// what the JS layer must do now, as [`Dispatcher::settle`] does. Its end comes back in
    /// `done` of a later drain.
    pub fn start_batch(
        self: &Arc<Self>,
        id: u64,
        batch: BatchFuture,
    ) -> napi::Result<Option<String>> {
        let me = Arc::downgrade(self);
        let added = self.shared.batches.add(id, batch, move |id| {
            if let Some(dispatcher) = me.upgrade() {
                dispatcher.queue_poll(id);
            }
        });
        if !added {
            return Err(napi::Error::new(
                Status::InvalidArg,
                format!("batch {id} is already running"),
            ));
        }
        lock(&self.shared.queue).polls.push(id);
        Ok(self.shared.drain())
    }

    /// Queues a poll of a woken batch.
    fn queue_poll(&self, id: u64) {
        let wake = {
            let mut q = lock(&self.shared.queue);
            q.polls.push(id);
            !std::mem::replace(&mut q.scheduled, true)
        };
        self.woken(wake);
    }

    /// Wakes the JS thread for what was just queued, unless it is awake already (`wake`
    /// false), draining this queue right now, or has a wake-up on its way.
    fn woken(&self, wake: bool) {
        if wake
            && !self.shared.serving()
            && !std::mem::replace(&mut lock(&self.shared.queue).wake_in_flight, true)
        {
            self.wake_js();
        }
    }

    fn pending(&self) -> (u64, oneshot::Receiver<Settled>) {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(token, tx);
        (token, rx)
    }

    /// Queues one call of the handler registered at `tool`; the receiver gets how it ended.
    pub fn call(
        &self,
        tool: u32,
        args: &Value,
        ctx: &ToolContext,
    ) -> (u64, oneshot::Receiver<Settled>) {
        let (token, rx) = self.pending();
        let listened = ctx.progress.is_listened();
        let calls = ctx.tools.is_some();
        if listened || calls {
            let reach = Reach {
                progress: listened.then(|| ctx.progress.clone()),
                tools: ctx.tools.clone(),
            };
            lock(&self.shared.reach).insert(token, reach);
        }
        // Written out before the queue is locked. A `Value` always writes out: its keys
        // are strings.
        let text =
            serde_json::value::to_raw_value(args).unwrap_or_else(|_| RawValue::NULL.to_owned());
        let wake = {
            let mut q = lock(&self.shared.queue);
            q.calls.push(Request {
                token,
                tool,
                call_id: ctx.call_id.clone(),
                attempt: ctx.attempt,
                caller: ctx.caller.clone(),
                run_id: ctx.run_id.clone(),
                app_key: ctx.app_key.clone(),
                args: text,
                listened,
                calls,
            });
            !std::mem::replace(&mut q.scheduled, true)
        };
        self.woken(wake);
        (token, rx)
    }

    /// Queues a call of the policy hook or a resolver with a JSON request.
    pub fn ask(&self, function: AppFunction, request: Value) -> (u64, oneshot::Receiver<Settled>) {
        let (token, rx) = self.pending();
        let wake = {
            let mut q = lock(&self.shared.queue);
            q.asks.push(Ask {
                token,
                function,
                request,
            });
            !std::mem::replace(&mut q.scheduled, true)
        };
        self.woken(wake);
        (token, rx)
    }

    /// Waits for a queued call to settle. If the waiting future is dropped first (a timeout,
    /// a cancelled batch), the JS side is told to abort the call; when `cancel` fires, it is
    /// told too, and the wait goes on (the core decides when to stop).
    pub async fn wait(
        self: Arc<Self>,
        token: u64,
        mut rx: oneshot::Receiver<Settled>,
        cancel: Option<CancellationToken>,
    ) -> Settled {
        let guard = AbortOnDrop {
            dispatcher: self,
            token,
            armed: true,
        };
        let settled = match cancel {
            Some(cancel) => tokio::select! {
                biased;
                r = &mut rx => r,
                _ = cancel.cancelled() => {
                    guard.dispatcher.abort(token, false);
                    rx.await
                }
            },
            None => rx.await,
        };
        guard.disarm();
        settled.unwrap_or_else(|_| (UNEXPECTED, Value::String(LOST.into())))
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
        self.woken(wake);
    }

    fn wake_js(&self) {
        // With a return callback, a throw out of the JS dispatcher (a bug of the JS layer: it
        // catches every handler failure itself) is handed to Rust instead of crashing Node.
        let shared = self.shared.clone();
        let status = match lock(&self.wake).as_ref() {
            None => Status::Closing,
            Some(wake) => wake.call_with_return_value(
                (),
                ThreadsafeFunctionCallMode::NonBlocking,
                move |returned: napi::Result<()>, _env| {
                    if let Err(e) = returned {
                        // Also how a wake-up still undelivered when Node exits ends: loud
                        // only when calls wait, which it fails.
                        let failed =
                            shared.fail_all(&format!("the JS dispatcher of tooljig threw: {e}"));
                        if failed > 0 {
                            eprintln!("tooljig: the JS dispatcher threw: {e}; failed its {failed} pending calls");
                        }
                    }
                    Ok(())
                },
            ),
        };
        if status != Status::Ok {
            // Node is exiting (or the engine was released): nobody will run these calls.
            self.shared.abandon();
        }
    }

    /// A running call's progress report, as `[token, fraction, message, output]` text (`null`
    /// for what it leaves out; an output is present only as a fourth element). Reports of
    /// calls that ended, or nobody hears, are dropped.
    pub fn progress(&self, text: &str) -> napi::Result<()> {
        let (token, fraction, message, output): (u64, Option<f64>, Option<String>, Option<Value>) =
            match serde_json::from_str::<Vec<Value>>(text) {
                Ok(mut parts) if (3..=4).contains(&parts.len()) => {
                    let output = (parts.len() == 4).then(|| parts.remove(3));
                    let message = parts[2].as_str().map(str::to_string);
                    (
                        parts[0].as_u64().unwrap_or(u64::MAX),
                        parts[1].as_f64(),
                        message,
                        output,
                    )
                }
                _ => {
                    return Err(napi::Error::new(
                        Status::InvalidArg,
                        format!("malformed progress text: {text}"),
                    ));
                }
            };
        let progress = lock(&self.shared.reach)
            .get(&token)
            .and_then(|r| r.progress.clone());
        let Some(progress) = progress else {
            return Ok(());
        };
        match output {
            Some(output) => progress.partial(output),
            None => progress.report(fraction, message),
        }
        Ok(())
    }

    /// The tools the running call `token` may call, if any.
    pub fn tools(&self, token: u64) -> Option<ToolCalls> {
        lock(&self.shared.reach)
            .get(&token)
            .and_then(|r| r.tools.clone())
    }

    /// Delivers results the JS layer settled, as `[[token, kind, payload], ...]` text, and
    /// returns what the JS layer must do next (the drained queue: the batches this ended,
    /// the calls they queued), or `None`. Tokens nobody waits for any more (timed out,
    /// cancelled) are ignored. Runs on the JS thread.
    pub fn settle(&self, text: &str) -> napi::Result<Option<String>> {
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
        // The batches these wake are polled below rather than woken through the queue.
        let outer = SERVING.replace(Arc::as_ptr(&self.shared) as usize);
        for (sender, kind, payload) in senders {
            let _ = sender.send((kind, payload));
        }
        SERVING.set(outer);
        Ok(self.shared.drain())
    }
}

/// Fires the JS call's `AbortSignal` when the core drops the wait before the call settled.
struct AbortOnDrop {
    dispatcher: Arc<Dispatcher>,
    token: u64,
    armed: bool,
}

impl AbortOnDrop {
    /// The call settled: nothing to abort.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        // Settled or abandoned, the call reports no more.
        lock(&self.dispatcher.shared.reach).remove(&self.token);
        if self.armed {
            self.dispatcher.abort(self.token, true);
        }
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.shared.fail_all(GONE);
    }
}
