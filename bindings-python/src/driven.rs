//! A batch polled on the caller's event loop thread instead of on a runtime thread.
//!
//! Handed to a tokio worker, a one-call batch cost two thread hand-overs more than its work
//! (the worker woken to start it, the loop woken to start the handler's task, the worker woken
//! by the task's end, the loop woken by the batch's end): nearly all of the ~100 µs it took.
//! Polled on the loop thread, the batch starts an async handler's task right there and hears
//! of its end from the task's last step on the same thread. Batches of up to 32 calls are
//! polled so (`engine.rs` says why not larger ones). What the batch hands to the runtime
//! (timers, the stores' threads) still runs there: the runtime is entered while polling, and
//! a wake from any thread reaches the loop through the batch's inbox (`host.rs`).
//!
//! A loop can stop for good with a batch in flight (an app that closes its loop without
//! awaiting or cancelling the batch) or stall (a long blocking call on its thread). So a wake
//! from outside the loop's own serving arms a take-over: if the loop has not polled within
//! [`TAKE_OVER`], the runtime takes the future and runs it to its end there, as it ran every
//! batch before; its results and audit records are never left to a loop that is gone. One
//! thread watches every armed batch (`watchdog.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::runtime::Handle;

/// How long a wake waits for the loop to poll before the runtime takes the batch over.
pub const TAKE_OVER: Duration = Duration::from_secs(1);

/// The batch's future, run to its end by polls on the loop thread.
pub type BatchFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The future of one batch and what polling it needs.
#[derive(Default)]
pub struct Driven {
    future: Mutex<Option<BatchFuture>>,
    /// A poll is queued in the inbox: further wakes add none.
    pub(crate) queued: AtomicBool,
    /// Polls begun so far: a take-over checks that none came since the wake that armed it.
    pub(crate) polls: AtomicU64,
    /// Recorded for the watchdog to check (`watchdog.rs`): further wakes record nothing.
    pub(crate) armed: AtomicBool,
    /// The runtime, entered while polling; apart from the future, since a wake (which may
    /// come while the loop polls, holding the future's lock) must never wait for that lock.
    runtime: OnceLock<Handle>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while polling is caught below; what it leaves is a finished batch.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Driven {
    /// Takes the future to poll; the host queues its first poll.
    pub fn set(&self, future: BatchFuture, runtime: Handle) {
        let _ = self.runtime.set(runtime);
        *lock(&self.future) = Some(future);
    }

    /// Whether the batch is run by polls on the loop thread (it was [`Driven::set`]).
    pub fn is_set(&self) -> bool {
        self.runtime.get().is_some()
    }

    /// Whether a poll must be queued for a wake (none is yet).
    pub fn should_queue(&self) -> bool {
        !self.queued.swap(true, Ordering::SeqCst)
    }

    /// Polls the future once, on the loop thread; `waker` queues the next poll. A panic (a
    /// bug of the core) ends the batch with it, as a task's panic would; `Err` carries its
    /// message.
    pub fn poll(&self, waker: &Waker) -> Result<(), String> {
        self.queued.store(false, Ordering::SeqCst);
        let mut slot = lock(&self.future);
        self.polls.fetch_add(1, Ordering::SeqCst);
        let (Some(future), Some(runtime)) = (slot.as_mut(), self.runtime.get()) else {
            return Ok(());
        };
        let _entered = runtime.enter();
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            future.as_mut().poll(&mut Context::from_waker(waker))
        }));
        match polled {
            Ok(Poll::Pending) => Ok(()),
            Ok(Poll::Ready(())) => {
                *slot = None;
                Ok(())
            }
            Err(panic) => {
                *slot = None;
                let why = tooljig::execute::panic_message(&panic);
                Err(format!("the batch stopped on an internal error: {why}"))
            }
        }
    }

    /// Takes the future from a loop that has not polled since `polls` and runs it on the
    /// runtime; `false` when the loop is polling right now (so it is alive) or has no future.
    pub fn take_over(&self, polls: u64) -> bool {
        let Some(runtime) = self.runtime.get() else {
            return false;
        };
        let taken = {
            // Held: the loop is polling it right now, so it is alive.
            let Ok(mut slot) = self.future.try_lock() else {
                return false;
            };
            if self.polls.load(Ordering::SeqCst) != polls {
                return false;
            }
            slot.take()
        };
        match taken {
            Some(future) => {
                runtime.spawn(future);
                true
            }
            None => false,
        }
    }
}
