//! `JsHandler`: the core's [`Handler`] seam over a JavaScript function.
//!
//! The function itself stays on the JS side (the JS layer keeps registered handlers by
//! index); Rust holds the index and hands calls to the engine's [`Dispatcher`].

use crate::dispatcher::Dispatcher;
use crate::outcome::to_handler_result;
use serde_json::Value;
use std::sync::Arc;
use tooljig::{BoxFuture, Handler, HandlerResult, ToolContext};

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

impl Handler for JsHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.call_ref(&args, ctx)
    }

    /// The arguments are written out here, for the JS thread to read with the rest of its
    /// queue: no copy of them waits in the queue.
    fn call_ref(&self, args: &Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let (token, rx) = self.dispatcher.call(self.tool, args, &ctx);
        let dispatcher = self.dispatcher.clone();
        Box::pin(async move {
            let (kind, payload) = dispatcher.wait(token, rx, Some(ctx.cancel)).await;
            to_handler_result(kind, payload)
        })
    }
}
