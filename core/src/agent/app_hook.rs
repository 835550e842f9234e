//! Asking one of the app's agent hooks (`select_tools`, `review_plan`): called like a
//! handler (`hook::run_hook`), with the turn's caller, bounded in time. A hook that fails
//! never ends the conversation: the caller of `ask_hook` goes on without its answer.

use super::Agent;
use super::context::Ctx;
use crate::handler::{Handler, ToolContext};
use serde_json::Value;
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
        crate::hook::run_hook(hook, request, hook_ctx, Some(HOOK_TIMEOUT)).await
    }
}
