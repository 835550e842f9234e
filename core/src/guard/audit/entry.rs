//! A record on its way to a sink.

use crate::call::CallResult;
use crate::caller::Caller;
use crate::error_code::ErrorCode;
use crate::guard::audit::AuditError;
use crate::guard::audit::chain::{self, Chain, Link};
use crate::guard::audit::record::{AuditRecord, Outcome};
use crate::guard::audit::result_record::ResultRecord;
use crate::policy::Policy;
use serde_json::Value;

/// An audit record, serialized where its call ran: its [`content`](chain::content) as JSON and
/// the few fields stores index it by. The engine builds entries in each call's task, in
/// parallel with the other calls, and the record itself is dropped there; a sink's writer,
/// which links records one after the other, only splices and hashes the text and stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    indexed: Indexed,
    content: String,
}

/// The fields of a record that stores keep in columns of their own, to answer queries.
///
/// Its four texts share one allocation: an entry is made where its call ran and dropped by
/// the sink's writer on another thread, where each allocation freed costs more than where
/// it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Indexed {
    /// When the call settled, in milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// How the call ended.
    pub outcome: Outcome,
    /// The error code, when `outcome` is `error`.
    pub code: Option<ErrorCode>,
    /// The principal, tenant, tool and call id, one after the other.
    text: Box<str>,
    /// Where the principal, the tenant and the tool end in `text`; the call id runs to its end.
    ends: [usize; 3],
    /// Whether there is a principal and a tenant (an empty one is not a missing one).
    given: [bool; 2],
}

impl Indexed {
    /// The indexed fields of a record.
    pub fn new(
        time_ms: u64,
        principal: Option<&str>,
        tenant: Option<&str>,
        tool: &str,
        call_id: &str,
        outcome: Outcome,
        code: Option<ErrorCode>,
    ) -> Self {
        let (p, t) = (principal.unwrap_or_default(), tenant.unwrap_or_default());
        let mut text = String::with_capacity(p.len() + t.len() + tool.len() + call_id.len());
        let mut ends = [0; 3];
        for (end, part) in ends.iter_mut().zip([p, t, tool]) {
            text.push_str(part);
            *end = text.len();
        }
        text.push_str(call_id);
        Indexed {
            time_ms,
            outcome,
            code,
            text: text.into_boxed_str(),
            ends,
            given: [principal.is_some(), tenant.is_some()],
        }
    }

    /// Who acted.
    pub fn principal(&self) -> Option<&str> {
        self.given[0].then(|| &self.text[..self.ends[0]])
    }

    /// In which tenant.
    pub fn tenant(&self) -> Option<&str> {
        self.given[1].then(|| &self.text[self.ends[0]..self.ends[1]])
    }

    /// The tool.
    pub fn tool(&self) -> &str {
        &self.text[self.ends[1]..self.ends[2]]
    }

    /// The call's id in its batch.
    pub fn call_id(&self) -> &str {
        &self.text[self.ends[2]..]
    }
}

impl From<&AuditRecord> for Indexed {
    /// The record's indexed fields.
    fn from(r: &AuditRecord) -> Self {
        let (principal, tenant) = (r.principal.as_deref(), r.tenant.as_deref());
        Indexed::new(
            r.time_ms, principal, tenant, &r.tool, &r.call_id, r.outcome, r.code,
        )
    }
}

impl From<&ResultRecord<'_>> for Indexed {
    /// The record's indexed fields.
    fn from(r: &ResultRecord<'_>) -> Self {
        Indexed::new(
            r.time_ms,
            r.principal,
            r.tenant,
            r.tool,
            r.call_id,
            r.outcome,
            r.code,
        )
    }
}

impl AuditEntry {
    /// Serializes the (not yet linked) record.
    pub fn new(record: AuditRecord) -> Self {
        AuditEntry {
            indexed: Indexed::from(&record),
            content: chain::content(&record),
        }
    }

    /// The entry of a settled result's record (see [`AuditRecord::from_result`]), serialized
    /// from the result itself rather than from a record built and dropped for it.
    pub fn of_result(
        result: &CallResult,
        caller: &Caller,
        policy: Option<&Policy>,
        raw_arguments: Option<&Value>,
    ) -> Self {
        let record = ResultRecord::new(result, caller, policy, raw_arguments);
        AuditEntry {
            content: record.to_json(),
            indexed: Indexed::from(&record),
        }
    }

    /// The fields stores index the record by.
    pub fn indexed(&self) -> &Indexed {
        &self.indexed
    }

    /// The fields stores index the record by, the rest dropped (once its content is linked).
    pub fn into_indexed(self) -> Indexed {
        self.indexed
    }

    /// What the record's hash covers besides its chain fields.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Links the entry as the next record of `chain`: the record, read back from its body,
    /// with its chain fields set, and the body. `Err` (the chain unmoved) only if the body
    /// does not read back, which a body this type wrote always does.
    pub fn link(&self, chain: &mut Chain) -> Result<(AuditRecord, String), AuditError> {
        let mut record: AuditRecord =
            serde_json::from_str(&self.content).map_err(|e| AuditError::Corrupt {
                seq: chain.next_seq,
                message: format!("the record does not read back: {e}"),
            })?;
        let prev_hash = chain.last_hash.clone();
        let Link { seq, hash, body } = chain.next(&self.content);
        record.seq = seq;
        record.prev_hash = prev_hash;
        record.hash = hash;
        Ok((record, body))
    }
}

impl From<AuditRecord> for AuditEntry {
    fn from(record: AuditRecord) -> Self {
        AuditEntry::new(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_fields_read_back_as_given() {
        let i = Indexed::new(7, Some("ann"), None, "search", "c1", Outcome::Ok, None);
        assert_eq!(
            (i.principal(), i.tenant(), i.tool(), i.call_id()),
            (Some("ann"), None, "search", "c1")
        );
        // An empty text is a value of its own, not a missing one.
        let i = Indexed::new(7, None, Some(""), "", "é", Outcome::Error, None);
        assert_eq!(
            (i.principal(), i.tenant(), i.tool(), i.call_id()),
            (None, Some(""), "", "é")
        );
    }
}
