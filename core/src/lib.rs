//! # tooljig
//!
//! Runs the tool calls that language models propose: parsed, repaired, validated, run in
//! dependency order and in parallel, with timeouts and retries, each ending as an envelope
//! the model can read. See `ARCHITECTURE.md` for the path of one call.
//!
//! ```
//! use tooljig::{Call, Caller, Engine, Tool, BatchOptions, HandlerError};
//! # tokio_test_block(async {
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//! let engine = Engine::new();
//! engine.register(Tool::typed("add", "Adds two numbers.", |x: Add, _ctx| async move {
//!     Ok::<_, HandlerError>(x.a + x.b)
//! })).unwrap();
//! let out = engine.run(vec![Call::new("1", "add", r#"{"a": 1, "b": 2,}"#)], Caller::default(), BatchOptions::default()).await;
//! assert_eq!(serde_json::to_string(&out.results[0].envelope).unwrap(), r#"{"ok":true,"data":3}"#);
//! assert!(out.results[0].repaired);
//! # });
//! # fn tokio_test_block<F: std::future::Future>(f: F) { tokio::runtime::Runtime::new().unwrap().block_on(f); }
//! ```

pub mod agent;
pub mod arguments;
pub mod call;
pub mod caller;
pub mod engine;
pub mod envelope;
pub mod error_code;
pub mod events;
pub mod execute;
pub mod handler;
pub mod import;
pub mod output;
pub mod plan;
pub mod policy;
pub mod providers;
pub mod registry;
pub mod schema;
pub mod spec;
pub mod stream;
pub mod tool;

pub use arguments::Limits;
pub use call::{Call, CallResult, CallStatus};
pub use caller::Caller;
pub use engine::{BatchOptions, BatchResult, Engine};
pub use envelope::{Envelope, ToolError};
pub use error_code::ErrorCode;
pub use events::{Event, EventSender};
pub use handler::{
    BoxFuture, Handler, HandlerError, HandlerResult, HostData, ToolContext, handler_fn,
};
pub use policy::{OversizeOutput, Policy, RetryPolicy};
pub use registry::{RegistrationError, Registry};
pub use schema::SchemaResources;
pub use spec::ToolSpec;
pub use tokio_util::sync::CancellationToken;
pub use tool::Tool;
