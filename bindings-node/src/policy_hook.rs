//! `JsPolicyHook`: the core's [`PolicyHook`] seam over the app's JS function.
//!
//! The hook receives the access request (camelCase keys: `tool`, `callId`, `arguments`,
//! `caller`, `risk`, `effect`) and returns `true` (allow), `false` (deny), or
//! `{allow, reason}`; it may be async. Anything else, a throw, or a rejection fails closed:
//! the core refuses the call.

use crate::dispatcher::{AppFunction, Dispatcher};
use crate::keys;
use crate::outcome::{OK, to_failure};
use serde_json::Value;
use std::sync::Arc;
use tooljig::{AccessDecision, AccessRequest, BoxFuture, HandlerError, PolicyHook};

/// Asks the JS layer's policy hook.
pub struct JsPolicyHook {
    dispatcher: Arc<Dispatcher>,
}

impl JsPolicyHook {
    /// The hook the JS layer registered with the engine.
    pub fn new(dispatcher: Arc<Dispatcher>) -> Self {
        JsPolicyHook { dispatcher }
    }
}

/// Reads what the hook returned.
fn decision(value: Value) -> Result<AccessDecision, HandlerError> {
    match value {
        Value::Bool(true) => Ok(AccessDecision::allow()),
        Value::Bool(false) => Ok(AccessDecision::deny(
            "the app's access policy refused this call",
        )),
        v @ Value::Object(_) => serde_json::from_value(v).map_err(|e| {
            HandlerError::unexpected(format!("the policy hook returned an invalid decision: {e}"))
        }),
        other => Err(HandlerError::unexpected(format!(
            "the policy hook returned {other}; return true, false or {{allow, reason}}"
        ))),
    }
}

impl PolicyHook for JsPolicyHook {
    fn check(&self, request: AccessRequest) -> BoxFuture<Result<AccessDecision, HandlerError>> {
        let mut request = keys::rename(
            serde_json::to_value(&request).unwrap_or(Value::Null),
            keys::camel,
            &[],
        );
        if let Some(caller) = request.get_mut("caller") {
            *caller = keys::rename(caller.take(), keys::camel, &[]);
        }
        let (token, rx) = self.dispatcher.ask(AppFunction::PolicyHook, request);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            match dispatcher.wait(token, rx, None).await {
                (OK, value) => decision(value),
                (kind, payload) => Err(to_failure(kind, payload, "the policy hook")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_read_from_js_values() {
        assert!(decision(json!(true)).unwrap().allow);
        assert!(!decision(json!(false)).unwrap().allow);
        let d = decision(json!({"allow": false, "reason": "not your department"})).unwrap();
        assert_eq!(d.reason.as_deref(), Some("not your department"));
        assert!(
            decision(Value::Null).is_err(),
            "forgetting to return fails closed"
        );
        assert!(decision(json!({"allowed": true})).is_err());
    }
}
