//! The batched background writer shared by the file-backed sinks.
//!
//! Calls hand records over a channel and go on; one thread per sink drains the channel,
//! links the records into the hash chain (in the order it writes them, so the chain and the
//! file agree), and writes each drained batch in one go (one SQLite transaction, one
//! `write`). A flush request travels the same channel, so it is answered only after every
//! record sent before it is written: callers that await it get group commit for free.

use crate::audit::AuditError;
use crate::audit::chain::Chain;
use crate::audit::record::AuditRecord;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most records written in one transaction.
const MAX_BATCH: usize = 4096;

/// Longest a record waits for company before it is written when nobody asked for a flush.
const LINGER: Duration = Duration::from_millis(20);

/// What a sink's storage does: write linked records durably, in order, all or nothing.
pub(crate) trait Backend: Send + 'static {
    /// Writes one batch: each record with its body (see [`crate::audit::chain::body`]).
    fn append(&mut self, batch: &[(AuditRecord, String)]) -> Result<(), AuditError>;
}

enum Msg {
    Record(Box<AuditRecord>),
    Flush(oneshot::Sender<Result<(), AuditError>>),
}

/// The sending half and the thread.
pub(crate) struct Writer {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the thread over `backend`, continuing `chain`.
    pub(crate) fn start<B: Backend>(
        name: &str,
        backend: B,
        chain: Chain,
    ) -> Result<Writer, AuditError> {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(backend, chain, rx))
            .map_err(|e| AuditError::Storage(format!("cannot start the audit writer: {e}")))?;
        Ok(Writer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Hands a record over; never blocks.
    pub(crate) fn record(&self, record: AuditRecord) {
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Record(Box::new(record))).is_ok());
        if !sent {
            tracing::error!(target: "tooljig::audit", "the audit writer has stopped; a record was lost");
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

fn run<B: Backend>(mut backend: B, mut chain: Chain, rx: mpsc::Receiver<Msg>) {
    let mut pending: Vec<AuditRecord> = Vec::new();
    let mut waiters = Vec::new();
    loop {
        let mut closed = match rx.recv() {
            Ok(first) => {
                take(first, &mut pending, &mut waiters);
                false
            }
            Err(_) => true,
        };
        // Nothing is promised before a flush, so gather records until one is asked for (or
        // the batch is full, or a short linger passes): a batch of calls then costs one or
        // a few transactions instead of one per record.
        let until = Instant::now() + LINGER;
        while !closed && waiters.is_empty() && pending.len() < MAX_BATCH {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(m) => take(m, &mut pending, &mut waiters),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => closed = true,
            }
        }
        while pending.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(m) => take(m, &mut pending, &mut waiters),
                Err(_) => break,
            }
        }
        let outcome = if pending.is_empty() {
            Ok(())
        } else {
            let saved = chain.clone();
            let batch: Vec<(AuditRecord, String)> = pending
                .drain(..)
                .map(|mut r| {
                    let body = chain.link(&mut r);
                    (r, body)
                })
                .collect();
            match backend.append(&batch) {
                Ok(()) => Ok(()),
                Err(e) => {
                    // Keep the records and the chain as they were: the next round retries.
                    tracing::error!(target: "tooljig::audit", error = %e, records = batch.len(), "audit write failed; will retry");
                    chain = saved;
                    pending = batch.into_iter().map(|(r, _)| r).collect();
                    Err(e)
                }
            }
        };
        for w in waiters.drain(..) {
            let _ = w.send(outcome.clone());
        }
        if closed && (pending.is_empty() || outcome.is_err()) {
            return;
        }
    }
}

fn take(
    m: Msg,
    pending: &mut Vec<AuditRecord>,
    waiters: &mut Vec<oneshot::Sender<Result<(), AuditError>>>,
) {
    match m {
        Msg::Record(r) => pending.push(*r),
        Msg::Flush(w) => waiters.push(w),
    }
}
