//! Step 11 of a call's path: one audit record for every call that reached the pipeline,
//! refusals included.
//!
//! Records are built where the engine settles a result (the one place planning refusals and
//! executed calls both pass), handed to an [`AuditSink`] without waiting, and written by the
//! sink's own thread in batches. `Engine::run` returns only after the sink has made the
//! batch's records durable ([`AuditSink::flush`]), so a record is never lost to a crash of
//! the process after the call returned (see `docs/guardrails.md` for what each sink gives).
//! Each record carries a hash chained to the previous one ([`chain`]), keyed when the app
//! gives a [`SealKey`](crate::seal::SealKey), and the head can be anchored out of band
//! ([`anchor`]); `verify` reports the first broken link.

pub mod anchor;
pub mod chain;
pub mod entry;
pub mod jsonl;
pub mod memory;
pub mod options;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod query;
pub mod record;
pub mod redact;
mod result_record;
pub mod sqlite;
mod writer;

pub use anchor::{Anchor, AnchorFile};
pub use chain::{BrokenLink, ChainReport};
pub use entry::{AuditEntry, Indexed};
pub use jsonl::JsonlAudit;
pub use memory::MemoryAudit;
pub use options::{AuditOptions, Durability};
#[cfg(feature = "postgres")]
pub use postgres::PostgresAudit;
pub use query::AuditQuery;
pub use record::{AuditRecord, Outcome};
pub use redact::Redaction;
pub use sqlite::SqliteAudit;

use crate::handler::BoxFuture;

/// Why an audit sink could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// The storage failed (disk full, file removed, database locked for too long).
    #[error("audit storage failed: {0}")]
    Storage(String),
    /// The sink's writer has stopped (it was closed, or its thread died).
    #[error("the audit writer has stopped")]
    Closed,
    /// A stored record could not be read back.
    #[error("audit record {seq} is unreadable: {message}")]
    Corrupt {
        /// The record's sequence number (or line number for JSON Lines).
        seq: u64,
        /// What is wrong.
        message: String,
    },
}

/// Where audit records go. [`record`](AuditSink::record) never blocks the call path;
/// [`flush`](AuditSink::flush) resolves once every record handed over before it is durable.
/// The shipped sinks are [`SqliteAudit`], [`JsonlAudit`] and [`MemoryAudit`].
pub trait AuditSink: Send + Sync + 'static {
    /// Takes one record, already serialized ([`AuditEntry`]); the sink assigns its sequence
    /// number and chain hash ([`chain::Chain::next`] splices and hashes the entry's content).
    fn record(&self, entry: AuditEntry);
    /// Takes records in order, as [`record`](AuditSink::record) does one by one. The engine
    /// hands a batch's records over in chunks; a sink with a queue overrides this to take
    /// a chunk in one step.
    fn record_all(&self, entries: Vec<AuditEntry>) {
        for e in entries {
            self.record(e);
        }
    }
    /// Resolves when every record taken before this call is durable.
    fn flush(&self) -> BoxFuture<Result<(), AuditError>>;
    /// Records matching `query`, in sequence order.
    fn query(&self, query: AuditQuery) -> BoxFuture<Result<Vec<AuditRecord>, AuditError>>;
    /// Walks the whole chain and reports the first broken link, if any.
    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>>;
}
