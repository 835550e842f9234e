//! Human approval as a tool's policy declares it, and the engine-wide rules for tools that
//! leave it to the engine; `durable/approval.rs` asks and records the decisions.

use super::Risk;
use serde::{Deserialize, Serialize};

/// Whether calls of a tool need a human decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRequirement {
    /// The engine decides: its predicate if it has one, else its risk rule
    /// ([`ApprovalRules::min_risk`]); with neither, calls run without approval.
    #[default]
    Auto,
    /// Every call needs approval.
    Always,
    /// No call needs approval, whatever the engine's rules say.
    Never,
}

/// Per-tool approval policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalPolicy {
    /// Whether calls need approval.
    pub required: ApprovalRequirement,
    /// How long a request waits for a decision, in ms (default 24 h); then it ends
    /// `approval_expired`.
    pub expires_ms: u64,
    /// Roles allowed to decide. Empty: only the principal who asked (a confirmation).
    pub approver_roles: Vec<String>,
}

/// Default of [`ApprovalPolicy::expires_ms`]: 24 hours, a working day for someone to decide.
pub const DEFAULT_APPROVAL_EXPIRY_MS: u64 = 24 * 60 * 60 * 1000;

impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy {
            required: ApprovalRequirement::Auto,
            expires_ms: DEFAULT_APPROVAL_EXPIRY_MS,
            approver_roles: Vec::new(),
        }
    }
}

/// Engine-wide approval rules, for tools whose requirement is `auto`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalRules {
    /// Calls of tools at this risk or above need approval; lower risks are auto-approved.
    /// `None`: risk alone never requires approval.
    pub min_risk: Option<Risk>,
}
