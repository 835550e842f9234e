//! Tamper evidence: each record's hash covers its content and the previous record's hash.
//!
//! `hash = sha256(body)`, where the body is the record serialized as JSON without its `hash`
//! field, `seq` and `prev_hash` first, and the record's `prev_hash` is the hash of the record
//! before it (64 zeros for the first), so altering, removing or reordering any record breaks
//! the chain at that point.
//! Stores keep the body byte for byte and verification hashes those bytes, so the check does
//! not depend on how a JSON library would serialize the record again.
//!
//! With a [`SealKey`] the hash is HMAC-SHA256 under the key instead: without the key nobody
//! can append a record or alter one and recompute the hashes after it. Cutting records off
//! the end leaves a shorter chain that still links; the [`Anchor`]
//! the sink writes out of band catches that.

use crate::digest::hex;
use crate::guard::audit::anchor::Anchor;
use crate::guard::audit::record::AuditRecord;
use crate::seal::SealKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The text a record's hash covers: `{"seq":N,"prev_hash":"…",` followed by the record's
/// [`content`]. Stores keep this text.
pub fn body(record: &AuditRecord) -> String {
    splice(record.seq, &record.prev_hash, &content(record))
}

/// The record as JSON without its chain fields (`seq`, `prev_hash`, `hash`): everything a
/// record says that does not depend on its place in the log, so it can be serialized where
/// the call ran, in parallel with other calls, and only spliced and hashed by the sink's
/// writer, which links records one after the other.
pub fn content(record: &AuditRecord) -> String {
    if record.seq == 0 && record.prev_hash.is_empty() && record.hash.is_empty() {
        return to_json(record);
    }
    let mut unlinked = record.clone();
    unlinked.seq = 0;
    unlinked.prev_hash.clear();
    unlinked.hash.clear();
    to_json(&unlinked)
}

/// A body from its chain fields and its [`content`].
pub fn splice(seq: u64, prev_hash: &str, content: &str) -> String {
    use std::fmt::Write;
    let rest = content.strip_prefix('{').unwrap_or(content);
    let sep = if rest == "}" { "" } else { "," };
    let mut out = String::with_capacity(content.len() + prev_hash.len() + 40);
    let _ = write!(out, r#"{{"seq":{seq},"prev_hash":"{prev_hash}"{sep}{rest}"#);
    out
}

/// The record as JSON (its chain fields are left out while unset), written into a buffer
/// sized for a typical record at once (growing a small one cost a fifth of the writer
/// thread's time).
pub(crate) fn to_json(record: &impl Serialize) -> String {
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

/// The hash a record must carry in an unkeyed chain.
pub fn hash_of(record: &AuditRecord) -> String {
    hash_body(&body(record))
}

/// The hash of a body in a chain sealed with `key` (HMAC-SHA256), or unkeyed (SHA-256).
pub fn seal_body(key: Option<&SealKey>, body: &str) -> String {
    match key {
        Some(key) => key.mac_text(body),
        None => hash_body(body),
    }
}

fn body_checks(key: Option<&SealKey>, body: &str, hash: &str) -> bool {
    match key {
        Some(key) => key.verify_text(body, hash),
        None => hash_body(body) == hash,
    }
}

/// The end of a chain: the next sequence number and the last hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The sequence number the next record gets.
    pub next_seq: u64,
    /// The hash of the last record.
    pub last_hash: String,
    /// The key records are sealed with; `None` for an unkeyed chain.
    pub key: Option<SealKey>,
}

impl Default for Chain {
    fn default() -> Self {
        Chain {
            next_seq: 1,
            last_hash: GENESIS.to_string(),
            key: None,
        }
    }
}

impl Chain {
    /// Continues an unkeyed chain whose last record is `last` (none: an empty log).
    pub fn after(last: Option<(u64, String)>) -> Chain {
        Chain::sealed_after(last, None)
    }

    /// Continues a chain sealed with `key` whose last record is `last`.
    pub fn sealed_after(last: Option<(u64, String)>, key: Option<SealKey>) -> Chain {
        match last {
            Some((seq, hash)) => Chain {
                next_seq: seq + 1,
                last_hash: hash,
                key,
            },
            None => Chain {
                key,
                ..Chain::default()
            },
        }
    }

    /// Continues the chain of a stored log whose last record has `body` and `hash`: refused
    /// when that record was not sealed the way this chain seals (another key, or a key on
    /// one side only), since the records written next would not verify.
    pub fn resume(
        last: Option<(u64, String, String)>,
        key: Option<SealKey>,
    ) -> Result<Chain, String> {
        if let Some((_, body, hash)) = &last
            && !body_checks(key.as_ref(), body, hash)
        {
            return Err(match key {
                    Some(_) => "its last record was not sealed with this key (another key, no key, or the record was altered)".into(),
                    None => "its last record does not match its hash: it was sealed with a key (give the key) or altered".into(),
                });
        }
        Ok(Chain::sealed_after(
            last.map(|(seq, _, hash)| (seq, hash)),
            key,
        ))
    }

    /// Links the next record, given its [`content`], and moves the end on.
    pub fn next(&mut self, content: &str) -> Link {
        let seq = self.next_seq;
        let body = splice(seq, &self.last_hash, content);
        let hash = seal_body(self.key.as_ref(), &body);
        // Into the old hash's room: a link costs no second copy of its hash.
        self.last_hash.clone_from(&hash);
        self.next_seq += 1;
        Link { seq, hash, body }
    }

    /// Gives `record` its sequence number, `prev_hash` and `hash`, moves the end on, and
    /// returns the record's [`body`].
    pub fn link(&mut self, record: &mut AuditRecord) -> String {
        let prev_hash = self.last_hash.clone();
        let link = self.next(&content(record));
        record.seq = link.seq;
        record.prev_hash = prev_hash;
        record.hash = link.hash;
        link.body
    }
}

/// A record's place in the chain, as [`Chain::next`] gives it. The hash of the record
/// before it is the chain's `last_hash` before the call (and in the body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The record's sequence number.
    pub seq: u64,
    /// The record's own hash.
    pub hash: String,
    /// The text the hash covers, which stores keep.
    pub body: String,
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
    anchor: Option<Anchor>,
    anchor_missing: bool,
}

impl Verifier {
    /// A verifier for a chain sealed with `key` (none: unkeyed) whose head was anchored as
    /// `anchor` (none: no anchor to hold it to).
    pub fn new(key: Option<SealKey>, anchor: Option<Anchor>) -> Self {
        Verifier {
            expected: Chain::sealed_after(None, key),
            checked: 0,
            anchor,
            anchor_missing: false,
        }
    }

    /// A verifier for the records that follow the end of `chain` (what a log holds after
    /// records before it were taken out).
    pub fn after(chain: Chain) -> Self {
        Verifier {
            expected: chain,
            ..Verifier::default()
        }
    }

    /// This verifier for a log whose anchor file is missing: a log with records then
    /// reports it (the anchor may have been removed to hide a cut).
    pub fn anchor_missing(mut self) -> Self {
        self.anchor_missing = true;
        self
    }

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
        if !body_checks(self.expected.key.as_ref(), body, &record.hash) {
            return Err(broken(match self.expected.key {
                Some(_) => "the record's content does not match its keyed hash: it was altered, \
                            or written by someone without the key"
                    .into(),
                None => "the record's content does not match its hash: it was altered".into(),
            }));
        }
        if let Some(a) = &self.anchor
            && a.records == record.seq
            && a.hash != record.hash
        {
            return Err(broken(
                "the record is not the one the anchor holds for this place: the log \
                     was cut back and written again"
                    .into(),
            ));
        }
        self.expected.next_seq += 1;
        self.expected.last_hash = record.hash.clone();
        self.checked += 1;
        Ok(())
    }

    /// The report after the records checked so far; `broken` is the break found, if any.
    /// With no break, a log shorter than its anchor is one: records were cut off the end.
    pub fn report(&self, broken: Option<BrokenLink>) -> ChainReport {
        let broken = broken.or_else(|| {
            if self.anchor_missing && self.checked > 0 {
                return Some(BrokenLink {
                    seq: 1,
                    reason: "the log holds records but its anchor file is missing: it was \
                             removed (perhaps to hide records cut from the end)"
                        .into(),
                });
            }
            let anchor = self.anchor.as_ref()?;
            (self.checked < anchor.records).then(|| BrokenLink {
                seq: self.checked + 1,
                reason: format!(
                    "the log ends after record {} but its anchor says {} were written: \
                     records were removed from the end",
                    self.checked, anchor.records
                ),
            })
        });
        ChainReport {
            records: self.checked,
            broken,
        }
    }
}

/// Verifies records of an unkeyed chain given in log order.
pub fn verify<'a>(records: impl IntoIterator<Item = &'a AuditRecord>) -> ChainReport {
    verify_sealed(records, None)
}

/// Verifies records given in log order, of a chain sealed with `key` (none: unkeyed).
pub fn verify_sealed<'a>(
    records: impl IntoIterator<Item = &'a AuditRecord>,
    key: Option<&SealKey>,
) -> ChainReport {
    let mut v = Verifier::new(key.cloned(), None);
    for r in records {
        if let Err(b) = v.check(r) {
            return v.report(Some(b));
        }
    }
    v.report(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::audit::{AuditEntry, Outcome};

    fn record(call_id: &str) -> AuditRecord {
        AuditRecord {
            seq: 0,
            time_ms: 1_700_000_000_000,
            principal: Some("u1".into()),
            tenant: None,
            session: None,
            tool: "noop".into(),
            call_id: call_id.into(),
            arguments: Some(serde_json::json!({"city": "Paris \"centre\"", "n": 1.5})),
            hidden: Vec::new(),
            outcome: Outcome::Ok,
            code: None,
            message: None,
            detail: None,
            output: None,
            risk: None,
            effect: None,
            duration_us: 3,
            attempts: 1,
            cached: false,
            replayed: false,
            repaired: false,
            approval: None,
            parent: None,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    #[test]
    fn an_entry_links_to_the_body_its_record_has() {
        let mut chain = Chain::default();
        let (first, first_body) = AuditEntry::new(record("a")).link(&mut chain).unwrap();
        let (second, second_body) = AuditEntry::new(record("b")).link(&mut chain).unwrap();
        assert!(first_body.starts_with(&format!(r#"{{"seq":1,"prev_hash":"{GENESIS}","#)));
        assert_eq!(body(&first), first_body);
        assert_eq!(body(&second), second_body);
        assert_eq!(second.prev_hash, first.hash);
        assert_eq!(hash_of(&second), second.hash);
        let parsed: AuditRecord = serde_json::from_str(&second_body).unwrap();
        assert_eq!(
            parsed,
            AuditRecord {
                hash: String::new(),
                ..second.clone()
            }
        );
        assert!(verify([&first, &second]).is_intact());
        // Linking the record itself gives the same result as linking its entry.
        let mut again = Chain::default();
        let mut r = record("a");
        assert_eq!(again.link(&mut r), first_body);
        assert_eq!(r, first);
    }

    #[test]
    fn a_record_with_nothing_but_its_chain_fields_still_splices() {
        assert_eq!(splice(7, "h", "{}"), r#"{"seq":7,"prev_hash":"h"}"#);
        assert_eq!(
            splice(7, "h", r#"{"a":1}"#),
            r#"{"seq":7,"prev_hash":"h","a":1}"#
        );
    }
}
