//! `JsApprovalPredicate`: the core's [`ApprovalPredicate`] seam over the app's JS function.
//!
//! The predicate receives `{tool, arguments, caller, risk}` (camelCase caller keys) and returns
//! (or resolves to) `true` when the call needs a human decision, `false` when it may run. Any
//! other value, a throw or a rejection is an error, which the core counts as "needs approval":
//! the rule fails closed.

use crate::convert::{keys, shape};
use crate::dispatcher::{AppFunction, Dispatcher};
use crate::outcome::OK;
use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::{ApprovalPredicate, ApprovalQuery, BoxFuture, HostData};

/// Asks the JS layer's approval predicate.
pub struct JsApprovalPredicate {
    dispatcher: Arc<Dispatcher>,
}

impl JsApprovalPredicate {
    /// The predicate the JS layer registered with the engine.
    pub fn new(dispatcher: Arc<Dispatcher>) -> Self {
        JsApprovalPredicate { dispatcher }
    }
}

/// Reads what the predicate returned.
fn needed(value: Value) -> Result<bool, String> {
    match value {
        Value::Bool(b) => Ok(b),
        other => Err(format!(
            "the approval predicate returned {other}; return true (needs approval) or false"
        )),
    }
}

impl ApprovalPredicate for JsApprovalPredicate {
    fn requires_approval(
        &self,
        query: ApprovalQuery,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<bool, String>> {
        let caller = serde_json::to_value(&*query.caller).unwrap_or(Value::Null);
        let request = json!({
            "tool": query.tool,
            "arguments": query.arguments,
            "caller": keys::to_js(caller, shape::CALLER),
            "risk": query.risk,
        });
        let (token, rx) = self.dispatcher.ask(AppFunction::ApprovalPredicate, request);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            match dispatcher.wait(token, rx, None).await {
                (OK, value) => needed(value),
                (_, payload) => Err(format!("the approval predicate failed: {payload}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_booleans_decide() {
        assert_eq!(needed(Value::Bool(true)), Ok(true));
        assert_eq!(needed(Value::Bool(false)), Ok(false));
        assert!(
            needed(Value::Null).is_err(),
            "forgetting to return fails closed"
        );
        assert!(needed(json!("yes")).is_err());
    }
}
