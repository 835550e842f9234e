//! `JsPolicyHook`: the core's [`PolicyHook`] seam over the app's JS function.
//!
//! The hook receives the access request (camelCase keys: `tool`, `callId`, `arguments`,
//! `caller`, `risk`, `effect`) and returns `true` (allow), `false` (deny), or
//! `{allow, reason}`; it may be async. Anything else, a throw, or a rejection fails closed:
//! the core refuses the call.

use crate::convert::{keys, shape};
use crate::dispatcher::{AppFunction, Dispatcher};
use crate::outcome::{OK, to_failure};
use serde_json::Value;
use std::sync::Arc;
use tooljig::{AccessDecision, AccessRequest, BoxFuture, HandlerError, HostData, PolicyHook};

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

impl PolicyHook for JsPolicyHook {
    fn check(
        &self,
        request: AccessRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<AccessDecision, HandlerError>> {
        let request = keys::to_js(
            serde_json::to_value(&request).unwrap_or(Value::Null),
            shape::SEAM_REQUEST,
        );
        let (token, rx) = self.dispatcher.ask(AppFunction::PolicyHook, request);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            match dispatcher.wait(token, rx, None).await {
                (OK, value) => AccessDecision::from_answer(value, "true, false or {allow, reason}"),
                (kind, payload) => Err(to_failure(kind, payload, "the policy hook")),
            }
        })
    }
}
