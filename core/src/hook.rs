//! An app's hook on one call's result, run as a handler runs: with the call's caller and
//! context, under the tool's timeout, its panics caught. `to_model_output` and `on_success`
//! run this way, and the agent's hooks (`agent/app_hook.rs`) through the same `run_hook`.

use crate::caller::Caller;
use crate::depth;
use crate::handler::{BoxFuture, Handler, HandlerError, HandlerResult, HostData, ToolContext};
use crate::job::Job;
use crate::registry::RegisteredTool;
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where a call's hooks run: its tool, caller, cancellation and host.
pub(crate) struct HookSite {
    pub(crate) tool: Arc<RegisteredTool>,
    caller: Arc<Caller>,
    cancel: CancellationToken,
    host: Option<HostData>,
}

impl HookSite {
    /// The site of `job`'s hooks.
    pub(crate) fn of(job: &Job) -> Self {
        HookSite {
            tool: job.tool.clone(),
            caller: job.caller.clone(),
            cancel: job.cancel.clone(),
            host: job.host.clone(),
        }
    }

    /// Runs `hook` on `input` for call `call_id` of run `run_id`; `Err` says why it failed
    /// (it threw, panicked, timed out, answered what only a handler may, or returned data
    /// nested too deep to keep).
    pub(crate) async fn run(
        &self,
        hook: &dyn Handler,
        input: Value,
        call_id: &str,
        run_id: &Arc<str>,
    ) -> Result<Value, String> {
        let ctx = ToolContext::for_hook(
            Arc::from(call_id),
            self.tool.name.clone(),
            self.caller.clone(),
            self.cancel.child_token(),
            self.host.clone(),
            run_id.clone(),
        );
        run_hook(hook, input, ctx, self.tool.spec.policy.timeout_duration()).await
    }
}

/// Runs `hook` on `input` with `ctx` as a handler runs, within `limit` (cancelling `ctx` when
/// it passes), its panics caught; `Err` says why it gave no answer: it threw, panicked, timed
/// out, answered what only a handler may, or returned data nested too deep to keep. Every
/// app hook runs through here (a tool's `to_model_output` and `on_success`, an agent's
/// `select_tools` and `review_plan`).
pub(crate) async fn run_hook(
    hook: &dyn Handler,
    input: Value,
    ctx: ToolContext,
    limit: Option<std::time::Duration>,
) -> Result<Value, String> {
    let cancel = ctx.cancel.clone();
    let run: BoxFuture<HandlerResult> = hook.call(input, ctx);
    let run = AssertUnwindSafe(run).catch_unwind();
    let outcome = match limit {
        Some(limit) => match tokio::time::timeout(limit, run).await {
            Ok(done) => done,
            Err(_) => {
                cancel.cancel();
                return Err(format!("it did not finish within {} ms", limit.as_millis()));
            }
        },
        None => run.await,
    };
    match outcome {
        Ok(Ok(view)) if depth::deeper_than(&view, depth::MAX_DEPTH) => Err(format!(
            "it returned data nested deeper than {} levels",
            depth::MAX_DEPTH
        )),
        Ok(Ok(view)) => Ok(view),
        Ok(Err(HandlerError::Tool(e))) => Err(format!("{}: {}", e.code, e.message)),
        Ok(Err(HandlerError::Unexpected { detail })) => Err(detail),
        Ok(Err(other)) => Err(format!("it answered {other:?}, which only a handler may")),
        Err(_) => Err("it panicked".into()),
    }
}

/// Appends `note` to a result's `detail` (what only the app sees).
pub(crate) fn note_detail(detail: &mut Option<String>, note: String) {
    *detail = Some(match detail.take() {
        Some(d) => format!("{d}\n{note}"),
        None => note,
    });
}
