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
#[derive(Debug, Clone, PartialEq)]
pub struct Indexed {
    /// When the call settled, in milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// Who acted.
    pub principal: Option<String>,
    /// In which tenant.
    pub tenant: Option<String>,
    /// The tool.
    pub tool: String,
    /// The call's id in its batch.
    pub call_id: String,
    /// How the call ended.
    pub outcome: Outcome,
    /// The error code, when `outcome` is `error`.
    pub code: Option<ErrorCode>,
}

impl From<AuditRecord> for Indexed {
    /// The record's indexed fields, the rest dropped.
    fn from(record: AuditRecord) -> Self {
        Indexed {
            time_ms: record.time_ms,
            principal: record.principal,
            tenant: record.tenant,
            tool: record.tool,
            call_id: record.call_id,
            outcome: record.outcome,
            code: record.code,
        }
    }
}

impl From<&ResultRecord<'_>> for Indexed {
    /// The record's indexed fields, owned.
    fn from(record: &ResultRecord<'_>) -> Self {
        Indexed {
            time_ms: record.time_ms,
            principal: record.principal.map(str::to_string),
            tenant: record.tenant.map(str::to_string),
            tool: record.tool.to_string(),
            call_id: record.call_id.to_string(),
            outcome: record.outcome,
            code: record.code,
        }
    }
}

impl AuditEntry {
    /// Serializes the (not yet linked) record.
    pub fn new(record: AuditRecord) -> Self {
        let content = chain::content(&record);
        AuditEntry {
            indexed: Indexed::from(record),
            content,
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
        let Link {
            seq,
            prev_hash,
            hash,
            body,
        } = chain.next(&self.content);
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
