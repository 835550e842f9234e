//! An audit sink in memory: for tests, conformance vectors and apps that forward records
//! elsewhere themselves. Records are linked at once; nothing survives the process.

use crate::guard::audit::chain::{Chain, ChainReport, verify_sealed};
use crate::guard::audit::query::AuditQuery;
use crate::guard::audit::record::AuditRecord;
use crate::guard::audit::{AuditEntry, AuditError, AuditSink};
use crate::handler::BoxFuture;
use crate::seal::SealKey;
use std::sync::Mutex;

/// Records in a vector, chained.
#[derive(Debug, Default)]
pub struct MemoryAudit {
    inner: Mutex<(Chain, Vec<AuditRecord>)>,
}

impl MemoryAudit {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log whose chain is sealed with `key`.
    pub fn sealed(key: SealKey) -> Self {
        MemoryAudit {
            inner: Mutex::new((Chain::sealed_after(None, Some(key)), Vec::new())),
        }
    }

    /// Every record so far, in log order.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }

    /// Runs `f` over the stored records, in place (tests use it to tamper).
    pub fn with_records<T>(&self, f: impl FnOnce(&mut Vec<AuditRecord>) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()).1)
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, entry: AuditEntry) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match entry.link(&mut inner.0) {
            Ok((record, _body)) => inner.1.push(record),
            Err(e) => {
                tracing::error!(target: "tooljig::audit", error = %e, "an audit record was lost")
            }
        }
    }

    fn flush(&self) -> BoxFuture<Result<(), AuditError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn query(&self, query: AuditQuery) -> BoxFuture<Result<Vec<AuditRecord>, AuditError>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let out = query.apply(&inner.1);
        Box::pin(std::future::ready(Ok(out)))
    }

    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let report = verify_sealed(&inner.1, inner.0.key.as_ref());
        Box::pin(std::future::ready(Ok(report)))
    }
}
