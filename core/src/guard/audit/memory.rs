//! An audit sink in memory: for tests, conformance vectors and apps that forward records
//! elsewhere themselves. Nothing survives the process.
//!
//! A record takes its place in the log as it is handed over, and is linked into the chain
//! (its text spliced, hashed) when the log is next read, with every record before it: a call
//! then pays for neither the copy nor the SHA-256, which a reader does for many records at
//! once. Nobody sees a record before it is linked, so the chain is the same either way.
//!
//! The log keeps each record as the text its hash covers, as the file and database sinks do,
//! and reads a record back only when asked for it: parsing every record as it was linked
//! cost a guarded MCP call about 10,000 instructions (of some 75,000 in rmcp's handler), for
//! records most apps forward or drop unread.

use crate::guard::audit::chain::{self, Chain, ChainReport, Verifier};
use crate::guard::audit::entry::Indexed;
use crate::guard::audit::jsonl;
use crate::guard::audit::query::AuditQuery;
use crate::guard::audit::record::AuditRecord;
use crate::guard::audit::{AuditEntry, AuditError, AuditSink, BrokenLink};
use crate::handler::BoxFuture;
use crate::seal::SealKey;
use std::sync::{Mutex, MutexGuard};

/// Records in a vector, chained.
#[derive(Debug, Default)]
pub struct MemoryAudit {
    inner: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    /// The end of the chain after the last record linked.
    chain: Chain,
    /// The end of the chain before the first record kept (the last one taken out, if any).
    start: Chain,
    kept: Vec<Kept>,
    /// Records handed over since the log was last read, in order, not linked yet.
    unlinked: Vec<AuditEntry>,
}

impl Log {
    /// Links the records handed over since the log was last read, in order.
    fn link(&mut self) {
        for entry in self.unlinked.drain(..) {
            let link = self.chain.next(entry.content());
            self.kept.push(Kept {
                seq: link.seq,
                indexed: entry.into_indexed(),
                hash: link.hash,
                body: link.body,
            });
        }
    }

    /// Every kept record, read back, in log order.
    fn records(&self) -> Vec<AuditRecord> {
        self.kept.iter().filter_map(|k| k.record().ok()).collect()
    }
}

/// One linked record as the log keeps it.
#[derive(Debug)]
struct Kept {
    seq: u64,
    indexed: Indexed,
    hash: String,
    body: String,
}

impl Kept {
    /// A record as the app handed it (through [`MemoryAudit::with_records`]): its text is
    /// what it serializes to now, so a record altered there no longer matches its hash.
    fn of(mut record: AuditRecord) -> Kept {
        let body = chain::body(&record);
        let hash = std::mem::take(&mut record.hash);
        Kept {
            seq: record.seq,
            indexed: Indexed::from(&record),
            hash,
            body,
        }
    }

    /// The record, read back from its text.
    fn record(&self) -> Result<AuditRecord, AuditError> {
        let mut record: AuditRecord =
            serde_json::from_str(&self.body).map_err(|e| AuditError::Corrupt {
                seq: self.seq,
                message: format!("the record does not read back: {e}"),
            })?;
        record.hash.clone_from(&self.hash);
        Ok(record)
    }
}

impl MemoryAudit {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log whose chain is sealed with `key`.
    pub fn sealed(key: SealKey) -> Self {
        MemoryAudit {
            inner: Mutex::new(Log {
                chain: Chain::sealed_after(None, Some(key.clone())),
                start: Chain::sealed_after(None, Some(key)),
                kept: Vec::new(),
                unlinked: Vec::new(),
            }),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The log with every record handed over linked: what every reader sees.
    fn linked(&self) -> MutexGuard<'_, Log> {
        let mut log = self.log();
        log.link();
        log
    }

    /// Every record so far, in log order.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.linked().records()
    }

    /// Runs `f` over the stored records, read back, and keeps what `f` leaves (tests use it
    /// to tamper: an altered record no longer matches its hash).
    pub fn with_records<T>(&self, f: impl FnOnce(&mut Vec<AuditRecord>) -> T) -> T {
        let mut log = self.linked();
        let mut records = log.records();
        let out = f(&mut records);
        log.kept = records.into_iter().map(Kept::of).collect();
        out
    }

    /// Takes every record so far out of the log, as JSON Lines (each line the record's text
    /// with its `hash` first, as [`JsonlAudit`](crate::guard::audit::JsonlAudit) writes it),
    /// for an app that forwards its records elsewhere. The chain goes on: the next record
    /// links to the last one taken, and [`verify`](AuditSink::verify) checks what the log
    /// holds from there.
    pub fn take_lines(&self) -> Vec<String> {
        let mut log = self.linked();
        log.start = log.chain.clone();
        let kept = std::mem::take(&mut log.kept);
        drop(log);
        kept.into_iter()
            .map(|k| {
                let mut line = String::with_capacity(k.body.len() + 80);
                jsonl::line(&k.hash, &k.body, &mut line);
                line.pop(); // the newline: each line is a string of its own here
                line
            })
            .collect()
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, entry: AuditEntry) {
        self.log().unlinked.push(entry);
    }

    fn record_all(&self, entries: Vec<AuditEntry>) {
        self.log().unlinked.extend(entries);
    }

    fn flush(&self) -> BoxFuture<Result<(), AuditError>> {
        // Every record is in the log as it is handed over: nothing to wait for.
        crate::handler::done(|| Ok(()))
    }

    fn query(&self, query: AuditQuery) -> BoxFuture<Result<Vec<AuditRecord>, AuditError>> {
        let log = self.linked();
        let hits: Vec<&Kept> = log
            .kept
            .iter()
            .filter(|k| query.matches_indexed(&k.indexed))
            .collect();
        let newest = hits.len().saturating_sub(query.limit.unwrap_or(usize::MAX));
        let out = hits[newest..].iter().map(|k| k.record()).collect();
        Box::pin(std::future::ready(out))
    }

    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>> {
        let log = self.linked();
        let mut verifier = Verifier::after(log.start.clone());
        let mut broken = None;
        for kept in &log.kept {
            let checked = match kept.record() {
                Ok(record) => verifier.check_stored(&record, &kept.body),
                Err(e) => Err(BrokenLink {
                    seq: kept.seq,
                    reason: e.to_string(),
                }),
            };
            if let Err(b) = checked {
                broken = Some(b);
                break;
            }
        }
        Box::pin(std::future::ready(Ok(verifier.report(broken))))
    }
}
