//! The tools a turn offers the model: every tool the caller may use; with `offer_tools`, the
//! best matches of the user's latest message plus `search_tools`; and then, when the app gave
//! a selector, the ones it picks from those.
//!
//! The selector is app code called like a handler, with `{"message", "tools"}` (the specs as
//! the model would see them), and answers the names to offer, in order. Names it makes up are
//! ignored, so it can only narrow what the caller may use, never widen it. A selector that
//! fails, times out or answers something other than a list of names leaves the turn with the
//! tools it would have had (and says so in the log): a broken hook costs relevance, not the
//! conversation.

use super::Agent;
use super::context::Ctx;
use crate::spec::ToolSpec;
use serde_json::{Value, json};

impl Agent {
    /// The tools offered this turn.
    pub(super) async fn offered(&self, ctx: &Ctx<'_>) -> Vec<ToolSpec> {
        let candidates = self.candidates(ctx);
        let Some(selector) = &self.selector else {
            return candidates;
        };
        let request = json!({
            "message": ctx.state.last_user_text(),
            "tools": serde_json::to_value(&candidates).unwrap_or(Value::Null),
        });
        let picked = match self
            .ask_hook(ctx, "select_tools", selector.as_ref(), request)
            .await
        {
            Ok(Value::Array(names)) => names,
            Ok(other) => {
                tracing::warn!(answer = %other, "select_tools answered no list of names; offering every candidate");
                return candidates;
            }
            Err(why) => {
                tracing::warn!(error = %why, "select_tools failed; offering every candidate");
                return candidates;
            }
        };
        let mut offered = Vec::new();
        for name in picked.iter().filter_map(Value::as_str) {
            if let Some(spec) = candidates.iter().find(|s| s.name == name)
                && !offered.iter().any(|o: &ToolSpec| o.name == name)
            {
                offered.push(spec.clone());
            }
        }
        offered
    }

    /// Every tool the caller may use, or with `offer_tools` the best matches of the user's
    /// latest message and `search_tools` to find the rest.
    fn candidates(&self, ctx: &Ctx<'_>) -> Vec<ToolSpec> {
        let Some(n) = self.options.offer_tools else {
            return self.engine.specs_for(&ctx.caller);
        };
        let mut offered = self
            .engine
            .search_tools(ctx.state.last_user_text(), n, &ctx.caller);
        let search = self
            .engine
            .specs_for(&ctx.caller)
            .into_iter()
            .find(|s| s.name == "search_tools");
        if let Some(search) = search
            && !offered.iter().any(|s| s.name == "search_tools")
        {
            offered.push(search);
        }
        offered
    }
}
