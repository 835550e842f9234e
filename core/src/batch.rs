//! A batch as the app hands it over and gets it back: its options, and its results (with
//! the report of an atomic batch's automatic rollback).

use crate::call::{CallResult, ParentCall};
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::events::EventSender;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Opaque data that whoever starts a batch hands to every handler of it. The Python binding
/// puts the caller's event loop here, since handler tasks do not inherit task-locals.
pub type HostData = Arc<dyn std::any::Any + Send + Sync>;

/// Options of one batch. Typical limits for an interactive turn (5 calls, 5 s a tool, 15 s in all) are
/// `max_calls: 5`, a 5 s tool timeout and `deadline_ms: 15000`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchOptions {
    /// Most calls running the app's code (hooks, resolvers, handlers) at once (default 256).
    /// A call waiting for the state store gives its place up meanwhile, except in an atomic
    /// batch, where a call holds it from start to end (docs/deployment.md).
    pub concurrency: Option<usize>,
    /// Wall-time budget of the whole batch, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Most calls a batch may hold; later calls are refused with `too_many_calls`.
    pub max_calls: Option<usize>,
    /// Cancels the batch when fired: running calls end as `cancelled`.
    #[serde(skip)]
    pub cancel: Option<CancellationToken>,
    /// Receives the batch's events as they happen.
    #[serde(skip)]
    pub events: Option<EventSender>,
    /// Receives the handlers' progress reports alone ([`crate::Event::CallProgress`]), for a
    /// listener that wants nothing else of the batch (an MCP client's progress
    /// notifications): a batch whose handlers report nothing sends it nothing. `events`,
    /// when set too, gets the reports as well.
    #[serde(skip)]
    pub progress: Option<EventSender>,
    /// Handed to the app code the batch runs (handlers as [`crate::ToolContext::host`], hooks,
    /// resolvers and predicates as their `host`): a binding's event loop.
    #[serde(skip)]
    pub host: Option<HostData>,
    /// All or nothing: once a call fails, no further call starts, and the calls that
    /// completed are compensated (see `docs/durable-runs.md`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
    /// The W3C Trace Context of the app's request (`00-<trace id>-<span id>-<flags>`): the
    /// batch's span becomes its child, in the first pass and in every resume (the run keeps
    /// it). See `spans.rs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Set on a batch a handler asked for through [`crate::ToolContext::tools`]: the call it
    /// comes from and what it may call.
    #[serde(skip)]
    pub lineage: Option<Arc<Lineage>>,
}

/// Default of [`BatchOptions::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 256;

/// The results of a batch, in call order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchResult {
    /// One per call, in the order the calls were given.
    pub results: Vec<CallResult>,
    /// Wall time of the batch, in µs.
    pub duration_us: u64,
    /// The run's id, when it was persisted (it suspended, can be rolled back, or the
    /// engine has a state store): pass it to `resume` or `rollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What an atomic batch's automatic rollback did, when a call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackReport>,
}

impl BatchResult {
    /// The result of the call with this id.
    pub fn get(&self, call_id: &str) -> Option<&CallResult> {
        self.results.iter().find(|r| r.call_id == call_id)
    }

    /// The envelopes, in call order.
    pub fn envelopes(&self) -> Vec<&Envelope> {
        self.results.iter().map(|r| &r.envelope).collect()
    }
}

/// What rollback did for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RollbackOutcome {
    /// Its compensation ran and succeeded.
    Compensated,
    /// Its tool has no compensation: the effect stays.
    NotReversible,
    /// Its tool only reads (`Effect::Read`): it changed nothing, so there is nothing to undo.
    NothingToUndo,
    /// Its compensation failed (see the envelope); a later rollback tries it again.
    Failed,
    /// An earlier rollback already compensated it.
    AlreadyRolledBack,
}

/// One call's line in a rollback report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollbackEntry {
    /// The call undone (or not).
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// What happened.
    pub outcome: RollbackOutcome,
    /// The compensation that ran: a tool name, or `handler`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compensation: Option<String>,
    /// What the compensation returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Envelope>,
    /// In words, for people and audit.
    pub message: String,
    /// When, ms since the epoch.
    pub at_ms: u64,
}

/// What a rollback did, in the order it did it (latest completion first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollbackReport {
    /// The run rolled back.
    pub run_id: String,
    /// One entry per completed call considered.
    pub entries: Vec<RollbackEntry>,
}

impl RollbackReport {
    /// Whether every completed call was undone (or had been).
    pub fn complete(&self) -> bool {
        self.entries.iter().all(|e| {
            matches!(
                e.outcome,
                RollbackOutcome::Compensated
                    | RollbackOutcome::AlreadyRolledBack
                    | RollbackOutcome::NothingToUndo
            )
        })
    }
}

/// How deep tool calls may nest (`ctx.tools`, `tool_calls.rs`).
pub const MAX_NESTING: u32 = 8;

/// Where a nested batch comes from: what its calls may be, and the chain above it.
#[derive(Debug, Clone)]
pub struct Lineage {
    pub(crate) parent: ParentCall,
    /// Tools the parent may call (`*`: any).
    pub(crate) allowed: Arc<[String]>,
    /// Tools running from the top-level call down to the parent, inclusive.
    pub(crate) chain: Arc<[String]>,
}

impl Lineage {
    /// The call it was made from.
    pub fn parent(&self) -> &ParentCall {
        &self.parent
    }

    /// Why a call of `tool` is refused here, if it is.
    pub(crate) fn refusal(&self, tool: &str) -> Option<(ErrorCode, String)> {
        let parent = &self.parent.tool;
        if !self.allowed.iter().any(|t| t == "*" || t == tool) {
            return Some((
                ErrorCode::PermissionDenied,
                format!("{parent} may not call {tool}: its policy's may_call does not name it"),
            ));
        }
        if self.chain.iter().any(|t| t == tool) {
            let path = self.chain.join(" → ");
            return Some((
                ErrorCode::DependencyCycle,
                format!("calling {tool} from {parent} would loop: {path} → {tool}"),
            ));
        }
        if self.parent.depth >= MAX_NESTING {
            return Some((
                ErrorCode::InvalidRequest,
                format!(
                    "tool calls nest at most {} deep; {tool} was not run",
                    MAX_NESTING
                ),
            ));
        }
        None
    }
}
