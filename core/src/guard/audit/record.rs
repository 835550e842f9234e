//! The audit record of one call (built from a settled result in `result_record`).
//!
//! The fields follow a typical `agent_tool_executions` table: who (principal, tenant,
//! session), what (tool, call id, arguments after redaction, hidden-argument injections),
//! how it ended (outcome, code, message, detail), risk, effect, timings, attempts, approval;
//! plus the chain fields (`seq`, `prev_hash`, `hash`) the sink fills in.

use crate::call::{CallResult, CallStatus};
use crate::caller::Caller;
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::guard::hidden::HiddenNote;
use crate::policy::{Effect, Risk};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// How a call ended, as the audit log and its queries see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool returned data (or the cache did).
    Ok,
    /// Required fields were missing.
    Needs,
    /// Refused or failed; `code` says why.
    Error,
    /// Waiting for a human decision.
    PendingApproval,
    /// Waiting for a client to run it.
    PendingExternal,
    /// Accepted as a background job that has not completed yet.
    PendingJob,
    /// Not started: waiting for a pending call it depends on.
    Waiting,
    /// A rollback undid this completed call: its compensation ran (a record of its own,
    /// written after the call's).
    RolledBack,
    /// A rollback could not undo this call: its tool has no compensation, the effect stays
    /// (an email cannot be unsent).
    NotReversible,
    /// A rollback tried to undo this call and its compensation failed; a later rollback
    /// tries again.
    RollbackFailed,
}

impl Outcome {
    /// The wire spelling, e.g. `"pending_approval"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Needs => "needs",
            Outcome::Error => "error",
            Outcome::PendingApproval => "pending_approval",
            Outcome::PendingExternal => "pending_external",
            Outcome::PendingJob => "pending_job",
            Outcome::Waiting => "waiting",
            Outcome::RolledBack => "rolled_back",
            Outcome::NotReversible => "not_reversible",
            Outcome::RollbackFailed => "rollback_failed",
        }
    }

    /// Whether the record is a rollback's, not a call's.
    pub fn is_rollback(self) -> bool {
        matches!(
            self,
            Outcome::RolledBack | Outcome::NotReversible | Outcome::RollbackFailed
        )
    }

    /// The outcome of a settled result.
    pub fn of(result: &CallResult) -> Outcome {
        match result.status {
            CallStatus::PendingApproval => Outcome::PendingApproval,
            CallStatus::PendingExternal => Outcome::PendingExternal,
            CallStatus::PendingJob => Outcome::PendingJob,
            CallStatus::Waiting => Outcome::Waiting,
            CallStatus::Done => match result.envelope {
                Envelope::Ok(_) => Outcome::Ok,
                Envelope::Needs(_) => Outcome::Needs,
                Envelope::Error(_) => Outcome::Error,
            },
        }
    }
}

/// One audited call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Position in the log, from 1, assigned by the sink. The chain fields (this one,
    /// `prev_hash`, `hash`) are left out of the serialization while unset: what remains is
    /// the record's [`content`](crate::guard::audit::chain::content).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: u64,
    /// When the call settled, in milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// Who acted.
    pub principal: Option<String>,
    /// In which tenant.
    pub tenant: Option<String>,
    /// In which session or conversation.
    pub session: Option<String>,
    /// The tool (as the model wrote it when unknown).
    pub tool: String,
    /// The call's id in its batch.
    pub call_id: String,
    /// The final arguments (after repair, references, hidden arguments), redacted per the
    /// tool's policy; the raw arguments when the call was refused before they were parsed.
    pub arguments: Option<Value>,
    /// Hidden parameters: what was injected, and what the model tried to set (dropped).
    #[serde(default)]
    pub hidden: Vec<HiddenNote>,
    /// How the call ended.
    pub outcome: Outcome,
    /// The error code, when `outcome` is `error`.
    pub code: Option<ErrorCode>,
    /// The error message the model saw.
    pub message: Option<String>,
    /// What only the app sees: an unexpected failure's detail.
    pub detail: Option<String>,
    /// The data returned, when the tool's policy sets `audit_output` (redacted).
    #[serde(default)]
    pub output: Option<Value>,
    /// The tool's risk (none for an unknown tool).
    pub risk: Option<Risk>,
    /// The tool's effect (none for an unknown tool).
    pub effect: Option<Effect>,
    /// Time spent in the handler, retries included, in µs.
    pub duration_us: u64,
    /// Handler attempts (0 when it never ran).
    pub attempts: u32,
    /// Served from the cache.
    pub cached: bool,
    /// Replayed from an earlier identical call.
    pub replayed: bool,
    /// The arguments had to be repaired.
    pub repaired: bool,
    /// The approval this call needed, as the approval step recorded it.
    #[serde(default)]
    pub approval: Option<Value>,
    /// The call whose handler made this one (`ctx.tools`). Left out when there is none, so
    /// the records written before it existed keep their hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<crate::call::ParentCall>,
    /// The previous record's hash (64 zeros for the first).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prev_hash: String,
    /// SHA-256 over the record's [`body`](crate::guard::audit::chain::body); see
    /// [`crate::guard::audit::chain`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl AuditRecord {
    /// The record of what a rollback did to one call of run `run_id` started by `caller`;
    /// none when there was nothing to do (a read, or undone before). The message says what
    /// happened; the compensation's envelope, when one ran, is the record's `output`.
    pub fn of_rollback(
        entry: &crate::batch::RollbackEntry,
        caller: &Caller,
        run_id: &str,
    ) -> Option<AuditRecord> {
        use crate::batch::RollbackOutcome;
        let outcome = match entry.outcome {
            RollbackOutcome::Compensated => Outcome::RolledBack,
            RollbackOutcome::NotReversible => Outcome::NotReversible,
            RollbackOutcome::Failed => Outcome::RollbackFailed,
            RollbackOutcome::NothingToUndo | RollbackOutcome::AlreadyRolledBack => return None,
        };
        Some(AuditRecord {
            seq: 0,
            time_ms: now_ms(),
            principal: caller.principal.clone(),
            tenant: caller.tenant.clone(),
            session: caller.session.clone(),
            tool: entry.tool.clone(),
            call_id: entry.call_id.clone(),
            arguments: None,
            hidden: Vec::new(),
            outcome,
            code: entry.envelope.as_ref().and_then(Envelope::code),
            message: Some(entry.message.clone()),
            detail: Some(match &entry.compensation {
                Some(by) => format!("rollback of run {run_id} by {by}"),
                None => format!("rollback of run {run_id}"),
            }),
            output: entry.envelope.as_ref().map(Envelope::to_value),
            risk: None,
            effect: None,
            duration_us: 0,
            attempts: 0,
            cached: false,
            replayed: false,
            repaired: false,
            approval: None,
            parent: None,
            prev_hash: String::new(),
            hash: String::new(),
        })
    }
}
