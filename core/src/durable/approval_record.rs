//! An approval request as stored, and the decision on it: data that [`super::approval`]
//! (asking and deciding) and [`super::decision`] (a decision's checks) both read.

use crate::call::{ApprovalInfo, ApprovalStatus};
use crate::caller::Caller;
use crate::digest::hash_value;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::policy::Risk;
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// Principal who decided.
    pub by: String,
    /// When, ms since the epoch.
    pub at_ms: u64,
    /// The rejection message, if rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What will run, if approved or edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_arguments: Option<Value>,
    /// Hash of `approved_arguments`, checked again before they run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_hash: Option<String>,
    /// HMAC under the engine's seal key over the decision and what it is bound to (see
    /// [`seal`](super::decision::seal)); set when the engine has a key, and required then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

/// An approval request as stored: what will run, who asked, and the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The request's id: derived from the run (a random id), the call, the arguments hash and
    /// the spec hash, so a pass that takes over a run finds its predecessor's request.
    pub id: String,
    /// The run the call belongs to.
    pub run_id: String,
    /// The call's id in its run.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The final arguments, after hidden arguments and resolvers.
    pub arguments: Value,
    /// SHA-256 of their canonical form; every decision must name it.
    pub arguments_hash: String,
    /// The tool's risk level.
    pub risk: Risk,
    /// SHA-256 of the tool's spec (schema and policy) when the request was made: a decision
    /// holds for that spec alone, and is asked again if the tool changed before it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    /// The tool's spec itself, so an edit can be checked against its schema by a process
    /// that does not register the tool (an operator's command line or inbox). The app's
    /// resume checks the decided arguments again against the tool it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<crate::spec::ToolSpec>,
    /// Who asked.
    pub requested_by: Caller,
    /// When, ms since the epoch.
    pub requested_at_ms: u64,
    /// When it expires, ms since the epoch.
    pub expires_at_ms: u64,
    /// Roles allowed to decide (empty: the principal who asked).
    pub approver_roles: Vec<String>,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionRecord>,
}

impl ApprovalRecord {
    /// The approval side of a result for this record.
    pub fn info(&self) -> ApprovalInfo {
        ApprovalInfo {
            id: Some(self.id.clone()),
            status: self.status,
            arguments_hash: self.arguments_hash.clone(),
            risk: self.risk,
            requested_by: self.requested_by.principal.clone(),
            expires_at_ms: Some(self.expires_at_ms),
            decided_by: self.decision.as_ref().map(|d| d.by.clone()),
            decided_at_ms: self.decision.as_ref().map(|d| d.at_ms),
            preference_id: None,
            reason: self.decision.as_ref().and_then(|d| d.message.clone()),
        }
    }

    /// The envelope a call ends with when this request is rejected or expired.
    pub fn refusal(&self) -> Option<Envelope> {
        match self.status {
            ApprovalStatus::Rejected => {
                let message = self
                    .decision
                    .as_ref()
                    .and_then(|d| d.message.clone())
                    .unwrap_or_else(|| "no reason was given".into());
                Some(Envelope::Error(
                    ToolError::new(
                        ErrorCode::ApprovalRejected,
                        format!("a reviewer rejected this call: {message}"),
                    )
                    .with("approval_id", self.id.clone()),
                ))
            }
            ApprovalStatus::Expired => Some(Envelope::Error(
                ToolError::new(
                    ErrorCode::ApprovalExpired,
                    "nobody approved this call before its approval request expired; it did not run",
                )
                .with("approval_id", self.id.clone()),
            )),
            _ => None,
        }
    }
}

/// SHA-256 of a spec's canonical form: what an approval is pinned to.
pub fn spec_hash(spec: &ToolSpec) -> String {
    hash_value(&serde_json::to_value(spec).unwrap_or(Value::Null))
}
