//! Tools calling tools: a handler runs other tools of its engine (`ctx.tools`).
//!
//! A tool whose policy names the tools it may call (`may_call`, `"*"` for any) gets a
//! [`ToolCalls`] in its context. Calls made through it are an ordinary batch of the same
//! engine, for the same caller, so every guardrail applies (access, hidden arguments,
//! approvals, rate limits, idempotency, audit); each result and audit record names the
//! [`ParentCall`] it was made from. They inherit what is left of the parent's deadline and
//! its cancellation. A call of a tool the policy does not name is `permission_denied`; a call
//! of a tool already running up the chain (`a` → `b` → `a`) is `dependency_cycle`; nesting
//! deeper than [`ToolCalls::MAX_DEPTH`] is `invalid_request`. Each refusal is a result, like
//! any refused call, and is audited.
//!
//! The nested batch runs on the engine that runs the parent's: [`crate::Engine::run`] serves
//! the requests of its handlers while its own batch runs, so an engine need not live in an
//! `Arc` for its tools to call each other, and a batch whose tools call nothing pays nothing.

use crate::batch::{BatchOptions, BatchResult, HostData, Lineage};
pub use crate::call::ParentCall;
use crate::call::{Call, CallResult};
use crate::caller::Caller;
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// A batch a handler asks its engine to run.
pub(crate) struct NestedRequest {
    pub(crate) calls: Vec<Call>,
    pub(crate) caller: Caller,
    pub(crate) options: BatchOptions,
    pub(crate) reply: oneshot::Sender<BatchResult>,
}

/// Where a batch's handlers send the batches they ask for.
pub(crate) type NestedSender = mpsc::UnboundedSender<NestedRequest>;

/// What a batch hands its calls so their handlers can call tools.
#[derive(Clone)]
pub(crate) struct Door {
    pub(crate) sender: NestedSender,
    /// The batch's own lineage, when it is itself nested.
    pub(crate) lineage: Option<Arc<Lineage>>,
    /// When the batch's deadline passes.
    pub(crate) deadline: Option<Instant>,
}

/// How a handler's nested batch runs, beyond its calls ([`ToolCalls::run_with`]).
#[derive(Default, Clone)]
pub struct Nested {
    /// What the nested handlers run on (a binding's event loop); `None` keeps the parent's.
    pub host: Option<HostData>,
    /// Cancels this batch alone; must be a child of the attempt's token.
    pub cancel: Option<CancellationToken>,
    /// Stop at the first failure and compensate the completed calls (`BatchOptions::atomic`).
    pub atomic: bool,
}

/// A handler's way to run other tools of its engine ([`crate::ToolContext::tools`]). Cheap
/// to clone: one pointer, so a context without it stays small.
#[derive(Clone)]
pub struct ToolCalls(Arc<Reach>);

/// What [`ToolCalls`] holds.
struct Reach {
    sender: NestedSender,
    lineage: Lineage,
    caller: Arc<Caller>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    host: Option<HostData>,
}

impl std::fmt::Debug for ToolCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCalls")
            .field("parent", &self.0.lineage.parent)
            .field("may_call", &self.0.lineage.allowed)
            .finish()
    }
}

/// What a call's handler is, for [`Door::for_call`].
pub(crate) struct Calling<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) may_call: &'a [String],
    pub(crate) caller: Arc<Caller>,
    pub(crate) cancel: CancellationToken,
    /// The attempt's own timeout.
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) host: Option<HostData>,
}

impl Door {
    /// The tool calls of one attempt of a call whose policy names tools it may call.
    pub(crate) fn for_call(&self, c: Calling<'_>) -> Option<ToolCalls> {
        if c.may_call.is_empty() {
            return None;
        }
        let (depth, mut chain) = match &self.lineage {
            Some(l) => (l.parent.depth + 1, l.chain.to_vec()),
            None => (1, Vec::new()),
        };
        chain.push(c.tool.to_string());
        let attempt_ends = c.timeout.map(|t| Instant::now() + t);
        let deadline = match (self.deadline, attempt_ends) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Some(ToolCalls(Arc::new(Reach {
            sender: self.sender.clone(),
            lineage: Lineage {
                parent: ParentCall {
                    run_id: c.run_id.to_string(),
                    call_id: c.call_id.to_string(),
                    tool: c.tool.to_string(),
                    depth,
                },
                allowed: c.may_call.into(),
                chain: chain.into(),
            },
            caller: c.caller,
            cancel: c.cancel,
            deadline,
            host: c.host,
        })))
    }
}

impl ToolCalls {
    /// How deep tool calls may nest.
    pub const MAX_DEPTH: u32 = crate::batch::MAX_NESTING;

    /// The call these tool calls are made from.
    pub fn parent(&self) -> &ParentCall {
        &self.0.lineage.parent
    }

    /// Runs `calls` as one batch (dependencies and `$from` references work as in any batch)
    /// for the parent's caller, within what is left of its deadline, cancelled with it.
    /// `host` is what the nested handlers run on (a binding's event loop); `None` keeps the
    /// parent's. `cancel`, when given, must be a child of the attempt's token
    /// ([`crate::ToolContext::cancel`]): it lets the caller cancel this batch alone.
    pub async fn run(
        &self,
        calls: Vec<Call>,
        host: Option<HostData>,
        cancel: Option<CancellationToken>,
    ) -> BatchResult {
        let options = Nested {
            host,
            cancel,
            atomic: false,
        };
        self.run_with(calls, options).await
    }

    /// [`ToolCalls::run`] with every option of a nested batch: with `atomic`, once a call
    /// fails no further call starts and the completed ones are compensated (a hold released
    /// when the booking that needed it failed); the report is the result's `rollback`.
    pub async fn run_with(&self, calls: Vec<Call>, nested: Nested) -> BatchResult {
        let reach = &self.0;
        let ids: Vec<(String, String)> = calls
            .iter()
            .map(|c| (c.id.clone(), c.tool.clone()))
            .collect();
        let deadline_ms = reach
            .deadline
            .map(|at| at.saturating_duration_since(Instant::now()).as_millis() as u64);
        let options = BatchOptions {
            deadline_ms,
            cancel: Some(nested.cancel.unwrap_or_else(|| reach.cancel.child_token())),
            host: nested.host.or_else(|| reach.host.clone()),
            lineage: Some(Arc::new(reach.lineage.clone())),
            atomic: nested.atomic,
            ..BatchOptions::default()
        };
        let (reply, answer) = oneshot::channel();
        let request = NestedRequest {
            calls,
            caller: (*reach.caller).clone(),
            options,
            reply,
        };
        if reach.sender.send(request).is_ok()
            && let Ok(out) = answer.await
        {
            return out;
        }
        // The batch that served these calls has ended (its call was abandoned).
        let results = ids
            .into_iter()
            .map(|(id, tool)| {
                CallResult::refused(
                    id,
                    tool,
                    Envelope::error(
                        ErrorCode::Cancelled,
                        "the calling tool's batch ended before this call ran",
                    ),
                )
            })
            .collect();
        BatchResult {
            results,
            duration_us: 0,
            run_id: None,
            rollback: None,
        }
    }

    /// Runs one call of `tool` and answers its result.
    pub async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        let mut out = self
            .run(vec![Call::new("call_0", tool, arguments)], None, None)
            .await;
        out.results.pop().unwrap_or_else(|| {
            CallResult::refused(
                "call_0",
                tool,
                Envelope::error(
                    ErrorCode::InternalError,
                    "the nested batch returned no result",
                ),
            )
        })
    }
}
