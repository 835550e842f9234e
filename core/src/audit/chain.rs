//! Tamper evidence: each record's hash covers its content and the previous record's hash.
//!
//! `hash = sha256(body)`, where the body is the record serialized as JSON without its `hash`
//! field, and the record's `prev_hash` is the hash of the record before it (64 zeros for the
//! first), so altering, removing or reordering any record breaks the chain at that point.
//! Stores keep the body byte for byte and verification hashes those bytes, so the check does
//! not depend on how a JSON library would serialize the record again.

use crate::audit::record::AuditRecord;
use crate::digest::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The text a record's hash covers: the record as JSON, without its `hash` field (which
/// is left out of the serialization while empty). Stores keep this text.
pub fn body(record: &AuditRecord) -> String {
    if record.hash.is_empty() {
        to_json(record)
    } else {
        let mut unhashed = record.clone();
        unhashed.hash.clear();
        to_json(&unhashed)
    }
}

/// The record as JSON, written into a buffer sized for a typical record at once (growing a
/// small one cost a fifth of the writer thread's time).
fn to_json(record: &AuditRecord) -> String {
    let mut out = Vec::with_capacity(1024);
    match serde_json::to_writer(&mut out, record) {
        Ok(()) => crate::digest::into_string(out),
        Err(_) => String::new(),
    }
}

/// The SHA-256 (hex) of a body.
pub fn hash_body(body: &str) -> String {
    hex(&Sha256::digest(body.as_bytes()))
}

/// The hash a record must carry.
pub fn hash_of(record: &AuditRecord) -> String {
    hash_body(&body(record))
}

/// The end of a chain: the next sequence number and the last hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The sequence number the next record gets.
    pub next_seq: u64,
    /// The hash of the last record.
    pub last_hash: String,
}

impl Default for Chain {
    fn default() -> Self {
        Chain {
            next_seq: 1,
            last_hash: GENESIS.to_string(),
        }
    }
}

impl Chain {
    /// Continues a chain whose last record is `last` (none: an empty log).
    pub fn after(last: Option<(u64, String)>) -> Chain {
        match last {
            Some((seq, hash)) => Chain {
                next_seq: seq + 1,
                last_hash: hash,
            },
            None => Chain::default(),
        }
    }

    /// Gives `record` its sequence number, `prev_hash` and `hash`, moves the end on, and
    /// returns the record's [`body`].
    pub fn link(&mut self, record: &mut AuditRecord) -> String {
        record.seq = self.next_seq;
        record.prev_hash = std::mem::take(&mut self.last_hash);
        record.hash.clear();
        let body = body(record);
        record.hash = hash_body(&body);
        self.last_hash = record.hash.clone();
        self.next_seq += 1;
        body
    }
}

/// Where and why a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenLink {
    /// The sequence number of the first record that does not check out.
    pub seq: u64,
    /// What is wrong with it.
    pub reason: String,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainReport {
    /// Records checked before the first break (all of them when intact).
    pub records: u64,
    /// The first broken link; `None` when the chain is intact.
    pub broken: Option<BrokenLink>,
}

impl ChainReport {
    /// Whether the chain is intact.
    pub fn is_intact(&self) -> bool {
        self.broken.is_none()
    }
}

/// Checks records in log order and stops at the first broken link.
#[derive(Default)]
pub struct Verifier {
    expected: Chain,
    checked: u64,
}

impl Verifier {
    /// Checks the next record; `Err` is the first broken link.
    pub fn check(&mut self, record: &AuditRecord) -> Result<(), BrokenLink> {
        self.check_stored(record, &body(record))
    }

    /// Checks the next record against the body text a store kept for it. Hashing the stored
    /// text itself (rather than a re-serialization) makes the check exact whatever the
    /// numbers in the record look like after a round trip.
    pub fn check_stored(&mut self, record: &AuditRecord, body: &str) -> Result<(), BrokenLink> {
        let broken = |reason: String| BrokenLink {
            seq: record.seq,
            reason,
        };
        if record.seq != self.expected.next_seq {
            return Err(broken(format!(
                "expected record {} here, found record {}: records are missing or out of order",
                self.expected.next_seq, record.seq
            )));
        }
        if record.prev_hash != self.expected.last_hash {
            return Err(broken(
                "prev_hash is not the hash of the record before it: a record was removed, \
                 inserted or replaced"
                    .into(),
            ));
        }
        if hash_body(body) != record.hash {
            return Err(broken(
                "the record's content does not match its hash: it was altered".into(),
            ));
        }
        self.expected.next_seq += 1;
        self.expected.last_hash = record.hash.clone();
        self.checked += 1;
        Ok(())
    }

    /// The report after the records checked so far.
    pub fn report(&self, broken: Option<BrokenLink>) -> ChainReport {
        ChainReport {
            records: self.checked,
            broken,
        }
    }
}

/// Verifies records given in log order.
pub fn verify<'a>(records: impl IntoIterator<Item = &'a AuditRecord>) -> ChainReport {
    let mut v = Verifier::default();
    for r in records {
        if let Err(b) = v.check(r) {
            return v.report(Some(b));
        }
    }
    v.report(None)
}
