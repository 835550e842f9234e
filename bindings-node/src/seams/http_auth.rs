//! `JsHttpAuth`: the [`HttpAuth`] seam of a server (the MCP server, the approval inbox) over
//! the app's JS function.
//!
//! The function receives `{method, path, headers}` (header names lowercased) and returns the
//! caller (`{principal, tenant, roles, scopes, attributes, session}`); it may be async. A
//! throw or a rejection refuses the request: its message goes back with the 401.

use crate::convert::{keys, shape};
use crate::dispatcher::{AppFunction, Dispatcher};
use crate::outcome::{OK, to_failure};
use std::sync::Arc;
use tooljig::{BoxFuture, Caller, HandlerError, HostData, HttpAuth, HttpRequest};

/// Asks one of the JS layer's auth hooks.
pub struct JsHttpAuth {
    dispatcher: Arc<Dispatcher>,
    index: u32,
}

impl JsHttpAuth {
    /// The hook at `index` of the JS layer's table.
    pub fn new(dispatcher: Arc<Dispatcher>, index: u32) -> Self {
        JsHttpAuth { dispatcher, index }
    }
}

impl HttpAuth for JsHttpAuth {
    fn authenticate(
        &self,
        request: HttpRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>> {
        let request = serde_json::to_value(&request).unwrap_or_default();
        let (token, rx) = self
            .dispatcher
            .ask(AppFunction::HttpAuth(self.index), request);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            match dispatcher.wait(token, rx, None).await {
                (OK, value) => serde_json::from_value(keys::from_js(value, shape::CALLER))
                    .map_err(|e| format!("the auth hook returned no caller: {e}")),
                (kind, payload) => Err(match to_failure(kind, payload, "the auth hook") {
                    HandlerError::Tool(e) => e.message,
                    HandlerError::Unexpected { detail } => {
                        // The thrown error's first line (`Error: message`), not its stack.
                        let first = detail.lines().next().unwrap_or("refused");
                        first.split_once(": ").map_or(first, |(_, m)| m).to_string()
                    }
                    HandlerError::Needs(_) | HandlerError::Accepted { .. } => "refused".into(),
                }),
            }
        })
    }
}
