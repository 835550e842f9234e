//! # tooljig-node
//!
//! The Node.js binding of tooljig: a thin mirror of the core. Behaviour lives in the `tooljig`
//! crate; this crate only carries data across (as JSON) and implements the core's
//! [`tooljig::Handler`] seam over JavaScript functions.
//!
//! The JavaScript layer in `lib/` is what users import; the classes exported here
//! (`NativeEngine`, `NativeCancel`, `NativeStream`) are its engine room.
//!
//! Map of the crate:
//! - `engine.rs`: `NativeEngine`, registering tools and running batches;
//! - `dispatcher.rs`: the one way Rust calls JavaScript (a weak threadsafe function fed by a
//!   queue, drained in bulk on the JS thread), and `drained.rs`, the text of what one drain
//!   hands to JS;
//! - `handler.rs`: `JsHandler`, the core's `Handler` over a registered JS function;
//! - `outcome.rs`: what a JS handler settled with, turned into a `HandlerResult`;
//! - `seams/`: the core's `PolicyHook`, `Resolver` and `ApprovalPredicate` over JS functions;
//! - `durable.rs`: durable runs on `NativeEngine` (decisions, client results, resume,
//!   rollback);
//! - `events.rs`: `NativeStream`, the events of a batch pulled from JavaScript;
//! - `cancel.rs`: `NativeCancel`, cancellation from an `AbortSignal`;
//! - `convert/`: the camelCase ↔ snake_case rule at the JS edge (`keys`, `neutral`), and the
//!   same rule applied while serializing results on the hot path (`camel_json`);
//! - `floor.rs` (feature `bench`, never in the shipped addon): the core's own per-call cost,
//!   the benchmark's floor;
//! - `error.rs`: registration mistakes as `{code, message}` problems;
//! - `providers.rs`, `stream.rs`, `model.rs`, `agent.rs`: provider formats, streams, models
//!   and the agent loop.

mod agent;
mod cancel;
mod cli;
pub use cli::cli;
mod convert;
mod dispatcher;
mod drained;
mod driven;
mod engine;
// After `engine`: napi-derive names the methods of a second `#[napi] impl JsEngine` block
// after the struct's js_name only when it has already expanded the struct.
mod durable;
mod error;
mod events;
#[cfg(feature = "bench")]
mod floor;
mod handler;
mod imports;
// Re-exported: napi registers it, and nothing in Rust calls it (a private item would be dead code).
pub use imports::import_tools;
pub use otel::{TraceExport, export_traces};
mod inbox;
mod mcp;
mod model;
mod otel;
mod outcome;
mod providers;
mod seams;
mod server;
mod stream;

use napi_derive::napi;

/// The extension's Rust allocations go to mimalloc. Calls allocate on one worker thread and
/// free on another (results, audit records, cache entries); glibc's allocator serializes that
/// on its arena locks, and made building audit records cost 1.6x more (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One error code of the closed set an envelope can carry.
#[napi(object)]
pub struct ErrorCodeInfo {
    /// The wire spelling, e.g. `unknown_tool`.
    pub code: String,
    /// Whether an error with this code is retryable by default.
    pub retryable: bool,
}

/// Every error code of the core, in declaration order, with its default retryability.
#[napi]
pub fn error_codes() -> Vec<ErrorCodeInfo> {
    tooljig::ErrorCode::ALL
        .iter()
        .map(|c| ErrorCodeInfo {
            code: c.as_str().to_string(),
            retryable: c.default_retryable(),
        })
        .collect()
}

/// The message a model sees for an unexpected handler failure (the detail stays on the result).
#[napi]
pub fn unexpected_message() -> String {
    tooljig::execute::UNEXPECTED_MESSAGE.to_string()
}

/// The idempotency key of a call from its parts: the core's
/// `ToolContext::idempotency_key`, for the JS layer's `ctx.idempotencyKey`.
#[napi]
pub fn idempotency_key(
    run_id: String,
    call_id: String,
    tool: String,
    app_key: Option<String>,
) -> String {
    tooljig::handler::idempotency_key(&run_id, &call_id, &tool, app_key.as_deref())
}

/// `"release"` or `"debug"`: how the addon was compiled (benchmarks refuse debug builds).
#[napi]
pub fn build_profile() -> String {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
    .to_string()
}
