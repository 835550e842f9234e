//! Batches polled on the JS thread instead of on a runtime thread.
//!
//! Handed to a tokio worker, a one-call batch cost four thread hand-overs more than its work
//! (a worker woken to start it, the JS thread woken to run the handler, a worker woken by its
//! result, the JS thread woken by the batch's end): nearly all of the 60–120 µs it took.
//! Polled on the JS thread, the batch queues its handler call there, the JS layer runs it at
//! once, and its settlement wakes the batch on the same thread, which finishes it in the same
//! turn. A batch's calls run in the batch's own future (the core spawns none), so every
//! batch is polled here whatever its size. What the batch hands to the runtime (timers, the
//! stores' threads) still runs there: the runtime is entered while polling, and a wake from
//! another thread queues a poll and wakes the JS thread like a queued handler call does
//! (`dispatcher.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use tokio::runtime::Handle;

/// A batch's future; it ends with the batch's result as JSON text, or why it has none.
pub type BatchFuture = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// The batches of one engine still running, by the JS layer's ids.
pub struct Batches {
    running: Mutex<HashMap<u64, (BatchFuture, Waker)>>,
    runtime: Handle,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Batches {
    /// No batches yet; polls enter `runtime`.
    pub fn new(runtime: Handle) -> Self {
        Batches {
            running: Mutex::default(),
            runtime,
        }
    }

    /// Adds batch `id`, whose wakes call `wake(id)`; false when one with that id runs
    /// already. Poll it next.
    pub fn add(
        &self,
        id: u64,
        future: BatchFuture,
        wake: impl Fn(u64) + Send + Sync + 'static,
    ) -> bool {
        let mut running = lock(&self.running);
        if running.contains_key(&id) {
            return false;
        }
        let waker = Waker::from(Arc::new(BatchWaker { id, wake }));
        running.insert(id, (future, waker));
        true
    }

    /// Polls the batches `ids` once each, on the JS thread; returns those that ended, with
    /// their results. A panic (a bug of the core) ends its batch with an error text.
    pub fn poll(&self, ids: impl IntoIterator<Item = u64>) -> Vec<(u64, Result<String, String>)> {
        let _entered = self.runtime.enter();
        let mut done = Vec::new();
        for id in ids {
            // Out of the table while polled: a wake during the poll only queues another.
            let Some((mut future, waker)) = lock(&self.running).remove(&id) else {
                continue;
            };
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                future.as_mut().poll(&mut Context::from_waker(&waker))
            }));
            match polled {
                Ok(Poll::Pending) => {
                    lock(&self.running).insert(id, (future, waker));
                }
                Ok(Poll::Ready(ended)) => done.push((id, ended)),
                Err(panic) => {
                    let why = tooljig::execute::panic_message(&panic);
                    done.push((
                        id,
                        Err(format!("the batch stopped on an internal error: {why}")),
                    ));
                }
            }
        }
        done
    }
}

struct BatchWaker<F> {
    id: u64,
    wake: F,
}

impl<F: Fn(u64) + Send + Sync + 'static> Wake for BatchWaker<F> {
    fn wake(self: Arc<Self>) {
        (self.wake)(self.id);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        (self.wake)(self.id);
    }
}
