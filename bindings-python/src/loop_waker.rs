//! The wake-up channel of one event loop, shared by every batch that runs on it.
//!
//! A tokio thread wakes the loop by writing a byte to a socket the loop watches
//! (`loop.add_reader`); the loop thread then serves the inboxes of the batches posted to
//! (`host.rs`). One socket a loop, made when its first batch starts and kept while the loop is
//! open: a socket and a reader for each batch cost five system calls and two selector updates,
//! a good part of what a one-call batch cost.
//!
//! Loops are known by identity. A closed loop's waker is dropped (its socket closed) when the
//! next loop's is made, so a program that runs `run_sync` in a loop holds one or two; in a
//! forked child, the parent's are dropped the same way. No lock is held while Python runs:
//! another thread could take the interpreter meanwhile and wait for it.

use pyo3::exceptions::PyNotImplementedError;
use pyo3::intern;
use pyo3::prelude::*;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What a loop's thread serves when woken (a batch's inbox).
pub trait Woken: Send + Sync {
    /// Handles what was posted since the wake-up. Runs on the loop thread.
    fn serve_woken(self: Arc<Self>, py: Python<'_>);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain lists behind these locks: a panic elsewhere leaves nothing half-done.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wakes one event loop's thread to serve the batches that have messages.
pub struct LoopWaker {
    reader: UnixStream,
    writer: UnixStream,
    /// A byte is in the socket and the loop has not read it yet.
    pending: AtomicBool,
    /// Batches with messages since the loop last read the socket.
    ready: Mutex<Vec<Arc<dyn Woken>>>,
}

/// A loop this process has a waker for (`None`: it cannot watch a socket).
struct Known {
    /// The process it was made in (`fork.rs`).
    process: u64,
    event_loop: Py<PyAny>,
    waker: Option<Arc<LoopWaker>>,
}

static KNOWN: Mutex<Vec<Known>> = Mutex::new(Vec::new());

impl LoopWaker {
    /// The waker of `event_loop`, made on first use. `None` when the loop cannot watch a
    /// socket (no `add_reader`, like Windows' proactor loop): its batches are woken through
    /// `call_soon_threadsafe`. Called on the loop's thread.
    pub fn of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<LoopWaker>>> {
        let process = crate::fork::this_process();
        // Every batch asks: its loop is found by identity, without a copy of the table.
        if let Some(k) = lock(&KNOWN)
            .iter()
            .find(|k| k.process == process && k.event_loop.bind(py).is(event_loop))
        {
            return Ok(k.waker.clone());
        }
        let known: Vec<(Py<PyAny>, Option<Arc<LoopWaker>>)> = lock(&KNOWN)
            .iter()
            .filter(|k| k.process == process)
            .map(|k| (k.event_loop.clone_ref(py), k.waker.clone()))
            .collect();
        // A loop not seen before: forget those closed since (and a parent's, after a fork).
        let mut closed = Vec::new();
        for (l, _) in &known {
            if l.bind(py)
                .call_method0(intern!(py, "is_closed"))?
                .is_truthy()?
            {
                closed.push(l.as_ptr());
            }
        }
        let waker = LoopWaker::watch(py, event_loop)?;
        let gone: Vec<Known> = {
            let mut all = lock(&KNOWN);
            let (kept, gone) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|k| k.process == process && !closed.contains(&k.event_loop.as_ptr()));
            *all = kept;
            all.push(Known {
                process,
                event_loop: event_loop.clone().unbind(),
                waker: waker.clone(),
            });
            gone
        };
        // Dropped here, with no lock held: a loop's last reference may run Python code.
        drop(gone);
        Ok(waker)
    }

    fn watch(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<LoopWaker>>> {
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        let waker = Arc::new(LoopWaker {
            reader,
            writer,
            pending: AtomicBool::new(false),
            ready: Mutex::new(Vec::new()),
        });
        let serve = Py::new(py, ServeReady(waker.clone()))?;
        match event_loop.call_method1("add_reader", (waker.reader.as_raw_fd(), serve)) {
            Ok(_) => Ok(Some(waker)),
            Err(e) if e.is_instance_of::<PyNotImplementedError>(py) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Asks the loop's thread to serve `woken`. Never attaches to the interpreter.
    pub fn wake(&self, woken: Arc<dyn Woken>) {
        lock(&self.ready).push(woken);
        if !self.pending.swap(true, Ordering::SeqCst) {
            // A full socket buffer means a wake-up is already pending.
            let _ = (&self.writer).write(&[1]);
        }
    }

    /// Serves every batch woken since the last time. Runs on the loop thread.
    fn serve(&self, py: Python<'_>) {
        // Read the bytes, then clear the flag, then take the batches: a wake after the clear
        // writes a byte that stays for the next time, and one before it is taken below.
        let mut buf = [0u8; 256];
        while matches!((&self.reader).read(&mut buf), Ok(n) if n > 0) {}
        self.pending.store(false, Ordering::SeqCst);
        let ready = std::mem::take(&mut *lock(&self.ready));
        for woken in ready {
            woken.serve_woken(py);
        }
    }
}

/// The loop's reader callback.
#[pyclass(frozen)]
struct ServeReady(Arc<LoopWaker>);

#[pymethods]
impl ServeReady {
    fn __call__(&self, py: Python<'_>) {
        self.0.serve(py);
    }
}
