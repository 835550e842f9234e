//! How a tool's arguments and output appear in the audit record, per field;
//! `guard/audit/redact.rs` applies it.

use serde::{Deserialize, Serialize};

/// What the audit record keeps of one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redaction {
    /// The value as is.
    #[default]
    Keep,
    /// The marker [`REDACTED`](crate::guard::audit::redact::REDACTED).
    Redact,
    /// `sha256:` and the hex SHA-256 of the value's canonical JSON.
    Hash,
}
