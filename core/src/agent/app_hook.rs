//! Asking one of the app's agent hooks (`select_tools`, `review_plan`): called like a
//! handler, with the turn's caller, bounded in time, its panics caught. A hook that fails
//! never ends the conversation: the caller of `ask` goes on without its answer.

use super::Agent;
use super::context::Ctx;
use crate::handler::{Handler, HandlerError, ToolContext};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// How long a hook may take before the turn goes on without it.
const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

impl Agent {
    /// `hook`'s answer to `request`, or why there is none.
    pub(super) async fn ask_hook(
        &self,
        ctx: &Ctx<'_>,
        name: &'static str,
        hook: &dyn Handler,
        request: Value,
    ) -> Result<Value, String> {
        let hook_ctx = ToolContext::for_hook(
            Arc::from(name),
            Arc::from(name),
            Arc::new(ctx.caller.clone()),
            Default::default(),
            self.host.clone(),
            Arc::from(ctx.state.run_id.as_str()),
        );
        let run = AssertUnwindSafe(hook.call(request, hook_ctx)).catch_unwind();
        match tokio::time::timeout(HOOK_TIMEOUT, run).await {
            Ok(Ok(Ok(answer))) => Ok(answer),
            Ok(Ok(Err(HandlerError::Tool(e)))) => Err(e.message),
            Ok(Ok(Err(HandlerError::Unexpected { detail }))) => Err(detail),
            Ok(Ok(Err(other))) => Err(format!("{other:?}")),
            Ok(Err(_)) => Err("it panicked".into()),
            Err(_) => Err(format!(
                "it did not answer within {} s",
                HOOK_TIMEOUT.as_secs()
            )),
        }
    }
}
