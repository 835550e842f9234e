//! `JsResolver`: the core's [`Resolver`] seam over one of the app's JS resolver functions.
//!
//! A resolver receives `{tool, parameter, input, value, caller}` and returns (or resolves to)
//! `{status: 'found', value}`, `{status: 'not_found'}` or `{status: 'ambiguous', candidates}`;
//! a thrown `ToolError` keeps its code, anything else is an unexpected failure.

use crate::convert::{keys, shape};
use crate::dispatcher::{AppFunction, Dispatcher};
use crate::outcome::{OK, to_failure};
use serde_json::Value;
use std::sync::Arc;
use tooljig::{BoxFuture, HandlerError, HostData, Resolution, ResolveRequest, Resolver};

/// Asks the JS resolver at an index of the JS layer's resolver table.
pub struct JsResolver {
    dispatcher: Arc<Dispatcher>,
    index: u32,
}

impl JsResolver {
    /// The resolver at `index`.
    pub fn new(dispatcher: Arc<Dispatcher>, index: u32) -> Self {
        JsResolver { dispatcher, index }
    }
}

impl Resolver for JsResolver {
    fn resolve(
        &self,
        request: ResolveRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<Resolution, HandlerError>> {
        let request = keys::to_js(
            serde_json::to_value(&request).unwrap_or(Value::Null),
            shape::SEAM_REQUEST,
        );
        let (token, rx) = self
            .dispatcher
            .ask(AppFunction::Resolver(self.index), request);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            match dispatcher.wait(token, rx, None).await {
                (OK, value) => serde_json::from_value(value).map_err(|e| {
                    HandlerError::unexpected(format!(
                        "a resolver returned an invalid resolution ({e}); return {{status: 'found', value}}, {{status: 'not_found'}} or {{status: 'ambiguous', candidates}}"
                    ))
                }),
                (kind, payload) => Err(to_failure(kind, payload, "a resolver")),
            }
        })
    }
}
