//! A record on its way to a sink.

use crate::audit::chain::{self, Chain, Link};
use crate::audit::record::AuditRecord;

/// An audit record with its [`content`](chain::content) already serialized. The engine
/// builds entries where each call ran, in parallel with the other calls, so that a sink's
/// writer, which links records one after the other, only splices and hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    record: AuditRecord,
    content: String,
}

impl AuditEntry {
    /// Serializes the (not yet linked) record's content.
    pub fn new(record: AuditRecord) -> Self {
        let content = chain::content(&record);
        AuditEntry { record, content }
    }

    /// The record, without its chain fields.
    pub fn record(&self) -> &AuditRecord {
        &self.record
    }

    /// What the record's hash covers besides its chain fields.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Links the entry as the next record of `chain`: the record with its chain fields
    /// set, and its body.
    pub fn link(self, chain: &mut Chain) -> (AuditRecord, String) {
        let Link {
            seq,
            prev_hash,
            hash,
            body,
        } = chain.next(&self.content);
        let mut record = self.record;
        record.seq = seq;
        record.prev_hash = prev_hash;
        record.hash = hash;
        (record, body)
    }
}

impl From<AuditRecord> for AuditEntry {
    fn from(record: AuditRecord) -> Self {
        AuditEntry::new(record)
    }
}
