//! The tokio runtime of the binding, its shutdown at interpreter exit, and fork safety.
//!
//! Threads. Batches run on one multi-threaded tokio runtime owned here. Its threads never
//! attach to the interpreter: whatever must happen in Python (start an async handler, cancel
//! its task, hand over events and results) is posted to the batch's event loop, which does it
//! on its own thread (see `host.rs`). Sync handlers run on the worker threads of `workers.rs`,
//! the only threads of this crate that attach.
//!
//! Exit. Python 3.11 aborts the process when a thread attaches (or returns to Python) while
//! the interpreter finalizes: the thread is unwound through Rust frames that cannot unwind.
//! `shutdown`, registered with `atexit` by the package, runs before finalization: it stops
//! new work, cancels every running batch, waits (detached, so the workers can finish) until no
//! worker is inside Python, and stops the runtime. A sync handler that never returns keeps the
//! process from exiting, as a non-daemon thread would; cancelled batches tell cooperative
//! handlers through `ToolContext.cancelled`.
//!
//! Fork. A forked child inherits this state but none of the threads. The runtime, the root
//! cancellation token and the worker pool remember the process id that made them; in a child
//! they are replaced (the parent's copies are leaked, never dropped, since dropping a runtime
//! whose threads are gone would wait for them forever), and the watchdog forgets the
//! parent's batches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::runtime::{Builder, Handle, Runtime};
use tokio_util::sync::CancellationToken;

/// Set once `shutdown` starts; nothing new starts after it.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

struct State {
    /// The process it was made in (`fork.rs`).
    process: u64,
    runtime: Option<Runtime>,
    root: CancellationToken,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the interpreter is exiting: nothing new may attach or start.
pub fn shutting_down() -> bool {
    SHUTTING_DOWN.load(Ordering::SeqCst)
}

/// The runtime's handle and a fresh child of the root token, for one batch. Fails once
/// shutdown has begun.
pub fn for_batch() -> Result<(Handle, CancellationToken), String> {
    if shutting_down() {
        return Err("tooljig is shutting down with the interpreter; no new batch starts".into());
    }
    let mut state = lock();
    let process = crate::fork::this_process();
    if state.as_ref().is_some_and(|s| s.process != process) {
        // A forked child: the parent's runtime has no threads here.
        if let Some(old) = state.take() {
            std::mem::forget(old);
        }
        crate::watchdog::forget_after_fork();
    }
    if state.is_none() {
        let runtime = Builder::new_multi_thread()
            .enable_all()
            .thread_name("tooljig-runtime")
            .build()
            .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
        *state = Some(State {
            process,
            runtime: Some(runtime),
            root: CancellationToken::new(),
        });
    }
    let s = state.as_ref().ok_or("the runtime is gone")?;
    let runtime = s
        .runtime
        .as_ref()
        .ok_or("tooljig is shutting down with the interpreter; no new batch starts")?;
    Ok((runtime.handle().clone(), s.root.child_token()))
}

/// Stops everything before the interpreter finalizes. Idempotent. `wait_workers` is called
/// while no lock is held; it returns when no worker thread is inside Python.
pub fn shutdown(wait_workers: impl FnOnce()) {
    if SHUTTING_DOWN.swap(true, Ordering::SeqCst) {
        return;
    }
    let runtime = {
        let mut state = lock();
        match state.as_mut() {
            Some(s) if s.process == crate::fork::this_process() => {
                s.root.cancel();
                s.runtime.take()
            }
            _ => None,
        }
    };
    wait_workers();
    if let Some(runtime) = runtime {
        // Tasks still running hold no Python state that needs the interpreter; give them
        // a moment to settle, then let the threads go.
        runtime.shutdown_timeout(Duration::from_millis(500));
    }
}
