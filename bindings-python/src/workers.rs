//! The threads that run sync (`def`) handlers, off the event loop.
//!
//! A sync handler may block (`time.sleep`, a database driver), so each one needs a thread of
//! its own while it blocks; and a trivial one should cost a few µs, so threads must not be
//! started or attached per call. The pool does both: jobs go through one queue; an idle
//! worker takes a job, attaches to the interpreter once and keeps running queued jobs while it
//! stays attached, detaching only when the queue is empty. A new worker starts whenever more
//! jobs wait than workers are idle (up to [`MAX_WORKERS`]), checked when a job is queued and
//! again when a worker takes one, so a burst of blocking handlers runs in parallel rather
//! than queueing behind the few workers that took the first jobs; idle workers leave after
//! [`IDLE_TIMEOUT`]. (`spawn_blocking` plus an attach per
//! call measured 60–130 µs a call on this project's machine; see BENCHMARKS.md for the pool.)

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most worker threads alive at once; further jobs wait for a free worker.
pub const MAX_WORKERS: usize = 64;

/// How long an idle worker waits for a job before its thread ends.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// One unit of work, run attached to the interpreter.
pub type Job = Box<dyn for<'py> FnOnce(Python<'py>) + Send>;

struct Pool {
    /// The process it was made in (`fork.rs`).
    process: u64,
    tx: Sender<Job>,
    rx: Receiver<Job>,
    /// Workers alive.
    workers: AtomicUsize,
    /// Workers waiting for a job.
    idle: AtomicUsize,
    /// Workers attached to the interpreter right now.
    attached: AtomicUsize,
}

static POOL: Mutex<Option<Arc<Pool>>> = Mutex::new(None);

fn pool() -> Arc<Pool> {
    let mut slot = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let process = crate::fork::this_process();
    match slot.as_ref() {
        Some(p) if p.process == process => p.clone(),
        stale => {
            // A forked child inherits the counters but not the threads: start over.
            if let Some(old) = stale {
                std::mem::forget(old.clone());
            }
            let (tx, rx) = crossbeam_channel::unbounded();
            let p = Arc::new(Pool {
                process,
                tx,
                rx,
                workers: AtomicUsize::new(0),
                idle: AtomicUsize::new(0),
                attached: AtomicUsize::new(0),
            });
            *slot = Some(p.clone());
            p
        }
    }
}

/// Queues a job. Returns the job back when the interpreter is shutting down or no thread
/// could be started, so the caller can answer for it.
pub fn submit(job: Job) -> Result<(), Job> {
    if crate::runtime::shutting_down() {
        return Err(job);
    }
    let pool = pool();
    pool.tx.send(job).map_err(|e| e.into_inner())?;
    if !ensure_workers(&pool) && pool.workers.load(Ordering::SeqCst) == 0 {
        // No thread could be started and none exists: take the job back.
        if let Ok(job) = pool.rx.try_recv() {
            return Err(job);
        }
    }
    Ok(())
}

/// Starts a worker when more jobs wait than workers are idle. Called after every event that
/// can leave a job waiting: a job queued, and a worker taking one (an idle worker counted by
/// a submitter may be the one that just took another job, so the taker checks again).
/// Returns false when a needed thread could not be started.
fn ensure_workers(pool: &Arc<Pool>) -> bool {
    if pool.rx.len() <= pool.idle.load(Ordering::SeqCst)
        || pool.workers.load(Ordering::SeqCst) >= MAX_WORKERS
    {
        return true;
    }
    pool.workers.fetch_add(1, Ordering::SeqCst);
    let worker = pool.clone();
    let spawned = std::thread::Builder::new()
        .name("tooljig-sync".into())
        .spawn(move || work(worker));
    if spawned.is_err() {
        pool.workers.fetch_sub(1, Ordering::SeqCst);
        return false;
    }
    true
}

fn work(pool: Arc<Pool>) {
    loop {
        pool.idle.fetch_add(1, Ordering::SeqCst);
        let next = pool.rx.recv_timeout(IDLE_TIMEOUT);
        pool.idle.fetch_sub(1, Ordering::SeqCst);
        match next {
            Ok(job) => {
                ensure_workers(&pool);
                run_attached(&pool, job);
            }
            Err(RecvTimeoutError::Timeout) => {
                pool.workers.fetch_sub(1, Ordering::SeqCst);
                // A job may have arrived after the timeout while this worker still counted
                // as idle, so nobody started a thread for it: stay for it.
                if pool.rx.is_empty() {
                    return;
                }
                pool.workers.fetch_add(1, Ordering::SeqCst);
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs `first` and every job queued meanwhile, attached once.
fn run_attached(pool: &Arc<Pool>, first: Job) {
    pool.attached.fetch_add(1, Ordering::SeqCst);
    // Checked after counting ourselves in, so `wait_detached` cannot miss this worker.
    if !crate::runtime::shutting_down() {
        let _ = Python::try_attach(|py| {
            let mut job = first;
            loop {
                job(py);
                if crate::runtime::shutting_down() {
                    break;
                }
                match pool.rx.try_recv() {
                    Ok(next) => {
                        job = next;
                        // A blocking handler may follow: the jobs after it get workers.
                        ensure_workers(pool);
                    }
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
        });
    }
    pool.attached.fetch_sub(1, Ordering::SeqCst);
}

/// Blocks until no worker is attached (called at exit, detached from the interpreter).
pub fn wait_detached() {
    let Some(pool) = POOL
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .filter(|p| p.process == crate::fork::this_process())
        .cloned()
    else {
        return;
    };
    while pool.attached.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(2));
    }
}
