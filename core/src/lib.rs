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

pub mod access;
pub mod agent;
pub mod approval;
pub mod arguments;
pub mod audit;
pub mod cache;
pub mod call;
pub mod caller;
pub mod digest;
pub mod durable;
pub mod engine;
pub mod envelope;
pub mod error_code;
pub mod events;
pub mod execute;
pub mod external;
pub mod guards;
pub mod handler;
pub mod hidden;
pub mod idempotency;
pub mod import;
pub mod output;
pub mod plan;
pub mod policy;
pub mod preference;
pub mod providers;
pub mod rate_limit;
pub mod registry;
pub mod rollback;
pub mod run;
pub mod schema;
pub mod spec;
mod sqlite_wal;
pub mod store;
pub mod stream;
pub mod telemetry;
pub mod tool;

pub use access::{AccessDecision, AccessRequest, Effect, PolicyHook, Settings, policy_hook_fn};
pub use approval::{
    ApprovalInfo, ApprovalPolicy, ApprovalPredicate, ApprovalQuery, ApprovalRecord,
    ApprovalRequirement, ApprovalRules, ApprovalStatus, Decision, approval_predicate_fn,
};
pub use arguments::Limits;
pub use audit::{
    AuditEntry, AuditQuery, AuditRecord, AuditSink, JsonlAudit, MemoryAudit, Redaction, SqliteAudit,
};
pub use cache::{CachePolicy, CacheScope};
pub use call::{Call, CallResult, CallStatus};
pub use caller::Caller;
pub use engine::{BatchOptions, BatchResult, Engine};
pub use envelope::{Envelope, ToolError};
pub use error_code::ErrorCode;
pub use events::{Event, EventSender};
pub use external::{ExternalCall, ExternalStatus};
pub use handler::{
    BoxFuture, Handler, HandlerError, HandlerResult, HostData, ToolContext, handler_fn,
};
pub use hidden::{HiddenParam, Resolution, ResolveRequest, Resolver, resolver_fn};
pub use idempotency::{IdempotencyMode, IdempotencyPolicy};
pub use policy::{OversizeOutput, Policy, RetryPolicy, Risk};
pub use preference::{Preference, Remember};
pub use rate_limit::{RateLimit, RateLimiter, RateScope};
pub use registry::{RegistrationError, Registry};
pub use rollback::{RollbackEntry, RollbackOutcome, RollbackReport};
pub use run::{RunRecord, RunState, RunStep};
pub use schema::SchemaResources;
pub use spec::ToolSpec;
pub use store::{MemoryStore, SqliteStore, StateStore};
pub use telemetry::TelemetrySnapshot;
pub use tokio_util::sync::CancellationToken;
pub use tool::Tool;
