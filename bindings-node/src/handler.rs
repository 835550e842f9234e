//! `JsHandler`: the core's [`Handler`] seam over a JavaScript function.
//!
//! The function itself stays on the JS side (the JS layer keeps registered handlers by
//! index); Rust holds the index and hands calls to the engine's [`Dispatcher`].

use crate::dispatcher::Dispatcher;
use serde_json::Value;
use std::sync::Arc;
use tooljig::{BoxFuture, Handler, HandlerError, HandlerResult, ToolContext};

/// Runs the JS handler registered at `tool` in the JS layer's handler table.
pub struct JsHandler {
    dispatcher: Arc<Dispatcher>,
    tool: u32,
}

impl JsHandler {
    /// A handler for the JS function at index `tool`.
    pub fn new(dispatcher: Arc<Dispatcher>, tool: u32) -> Self {
        JsHandler { dispatcher, tool }
    }
}

/// Fires the JS call's `AbortSignal` when the core drops the attempt before it settled
/// (a timeout drops the future; a cancelled batch aborts its tasks).
struct AbortOnDrop {
    dispatcher: Arc<Dispatcher>,
    token: u64,
    armed: bool,
}

impl AbortOnDrop {
    /// The call settled: nothing to abort.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.dispatcher.abort(self.token, true);
        }
    }
}

impl Handler for JsHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let (token, mut rx) = self.dispatcher.call(self.tool, args, &ctx);
        let guard = AbortOnDrop {
            dispatcher: self.dispatcher.clone(),
            token,
            armed: true,
        };
        Box::pin(async move {
            let settled = tokio::select! {
                biased;
                r = &mut rx => r,
                _ = ctx.cancel.cancelled() => {
                    // Tell the handler, then keep listening: the core decides when to stop.
                    guard.dispatcher.abort(token, false);
                    rx.await
                }
            };
            guard.disarm();
            settled.unwrap_or_else(|_| {
                Err(HandlerError::unexpected(
                    "the JavaScript handler's result was lost (the engine was dropped)",
                ))
            })
        })
    }
}
