//! The batched background writer shared by the file-backed sinks.
//!
//! Calls hand records over a channel and go on; one thread per sink drains the channel,
//! links the records into the hash chain (in the order it writes them, so the chain and the
//! file agree) and writes them at once into an open unit of work (an SQLite transaction,
//! buffered lines), in parallel with the calls. The unit is committed when a flush is asked
//! for, when it is large, or when it has been open for 20 ms. A flush request travels the same
//! channel, so it is answered only after every record sent before it is committed: callers
//! that await it get group commit for free.

use crate::guard::audit::anchor::AnchorFile;
use crate::guard::audit::chain::{Chain, Link};
use crate::guard::audit::{AuditEntry, AuditError};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most records written in one transaction.
const MAX_BATCH: usize = 4096;

/// Longest a unit of work stays open (uncommitted) when nobody asks for a flush.
const LINGER: Duration = Duration::from_millis(20);

/// Most records taken from the channel before they are written.
const CHUNK: usize = 256;

/// What a sink's storage does: write linked records in order into an open unit of work, and
/// make everything written since the last commit durable, all or nothing.
pub(crate) trait Backend: Send + 'static {
    /// Writes records (each with its place in the chain and its body) into the open unit of
    /// work, opening one if need be.
    fn write(&mut self, batch: &[(&AuditEntry, Link)]) -> Result<(), AuditError>;
    /// Makes the open unit durable.
    fn commit(&mut self) -> Result<(), AuditError>;
    /// Drops the open unit (after a failed write or commit).
    fn rollback(&mut self);
}

enum Msg {
    Entries(Vec<AuditEntry>),
    Flush(oneshot::Sender<Result<(), AuditError>>),
}

/// The sending half and the thread.
pub(crate) struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the thread over `backend`, continuing `chain`; after every commit it replaces
    /// `anchor` with the new head.
    pub(crate) fn start<B: Backend>(
        name: &str,
        backend: B,
        chain: Chain,
        anchor: Option<AnchorFile>,
    ) -> Result<Writer, AuditError> {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(backend, chain, anchor, rx))
            .map_err(|e| AuditError::Storage(format!("cannot start the audit writer: {e}")))?;
        Ok(Writer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Hands records over, in order; never blocks.
    pub(crate) fn record_all(&self, entries: Vec<AuditEntry>) {
        let count = entries.len();
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Entries(entries)).is_ok());
        if !sent {
            tracing::error!(target: "tooljig::audit", count, "the audit writer has stopped; records were lost");
        }
    }

    /// Resolves once every record handed over before is written.
    pub(crate) fn flush(&self) -> oneshot::Receiver<Result<(), AuditError>> {
        let (done, wait) = oneshot::channel();
        if let Some(tx) = &self.tx {
            if let Err(mpsc::SendError(Msg::Flush(done))) = tx.send(Msg::Flush(done)) {
                let _ = done.send(Err(AuditError::Closed));
            }
        } else {
            let _ = done.send(Err(AuditError::Closed));
        }
        wait
    }
}

impl Drop for Writer {
    /// Closes the channel and waits for the thread to write what it still holds.
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Entries in the chunks they arrived in, kept as they are rather than copied into one
/// vector: the writer only reads them (and again after a failed write).
#[derive(Default)]
struct Chunks {
    chunks: Vec<Vec<AuditEntry>>,
    len: usize,
}

impl Chunks {
    fn push(&mut self, chunk: Vec<AuditEntry>) {
        self.len += chunk.len();
        self.chunks.push(chunk);
    }

    fn append(&mut self, other: &mut Chunks) {
        self.len += std::mem::take(&mut other.len);
        self.chunks.append(&mut other.chunks);
    }

    fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn iter(&self) -> impl Iterator<Item = &AuditEntry> {
        self.chunks.iter().flatten()
    }
}

fn run<B: Backend>(
    mut backend: B,
    mut chain: Chain,
    anchor: Option<AnchorFile>,
    rx: mpsc::Receiver<Msg>,
) {
    // Records written into the open unit but not committed, kept to retry after a failure,
    // and the chain as it was when the unit opened.
    let mut open = Chunks::default();
    let mut open_since = Instant::now();
    let mut chain_at_open = chain.clone();
    let mut pending = Chunks::default();
    let mut waiters = Vec::new();
    loop {
        // Block for the next message; while a unit is open, only until it must be committed.
        let mut closed = false;
        let first = if open.is_empty() {
            rx.recv().map_err(|_| ())
        } else {
            let left = (open_since + LINGER).saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(m) => Ok(m),
                Err(mpsc::RecvTimeoutError::Timeout) => Err(()),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    closed = true;
                    Err(())
                }
            }
        };
        match first {
            Ok(m) => take(m, &mut pending, &mut waiters),
            Err(()) if open.is_empty() => closed = true,
            Err(()) => {}
        }
        while pending.len < CHUNK {
            match rx.try_recv() {
                Ok(m) => take(m, &mut pending, &mut waiters),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        // Write what arrived now, while the calls go on: the work is done off the hot
        // path and in parallel with it; only the commit waits for a flush.
        let mut outcome = Ok(());
        if !pending.is_empty() {
            if open.is_empty() {
                open_since = Instant::now();
                chain_at_open = chain.clone();
            }
            let batch: Vec<(&AuditEntry, Link)> = pending
                .iter()
                .map(|e| (e, chain.next(e.content())))
                .collect();
            outcome = backend.write(&batch);
            drop(batch);
            open.append(&mut pending);
        }
        // Nothing is promised before a flush: commit when one is asked for, when the unit
        // is large, when it has been open for a while, or when the sink closes.
        let due = !waiters.is_empty()
            || open.len >= MAX_BATCH
            || open_since.elapsed() >= LINGER
            || closed;
        if outcome.is_ok() && due && !open.is_empty() {
            outcome = backend.commit();
            if outcome.is_ok() {
                open.clear();
                if let Some(anchor) = &anchor {
                    // The records are durable either way; a lagging anchor only holds the
                    // log to an earlier head, which `verify` still checks.
                    if let Err(e) = anchor.write(chain.next_seq - 1, &chain.last_hash) {
                        tracing::error!(target: "tooljig::audit", error = %e, "the audit anchor was not replaced");
                    }
                }
            }
        }
        if let Err(e) = &outcome {
            // Keep the records and the chain as they were: the next round writes them again.
            tracing::error!(target: "tooljig::audit", error = %e, records = open.len, "audit write failed; will retry");
            backend.rollback();
            chain = chain_at_open.clone();
            pending = std::mem::take(&mut open);
        }
        if due || outcome.is_err() {
            for w in waiters.drain(..) {
                let _ = w.send(outcome.clone());
            }
        }
        if closed && ((open.is_empty() && pending.is_empty()) || outcome.is_err()) {
            return;
        }
    }
}

fn take(m: Msg, pending: &mut Chunks, waiters: &mut Vec<oneshot::Sender<Result<(), AuditError>>>) {
    match m {
        Msg::Entries(e) => pending.push(e),
        Msg::Flush(w) => waiters.push(w),
    }
}
