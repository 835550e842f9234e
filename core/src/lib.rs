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

// The data a call is made of, from the ground up: nothing here imports a step.
pub mod batch;
pub mod call;
pub mod caller;
pub mod depth;
pub mod digest;
pub mod envelope;
pub mod error_code;
pub mod events;
pub mod handler;
pub mod http_auth;
pub(crate) mod json_text;
pub mod policy;
pub mod process;
pub(crate) mod random_id;
pub mod registration_error;
pub mod spec;
pub mod tool;
pub mod tool_calls;
pub mod tool_search;
pub mod violation;

// The path of one call: plan (steps 1–2), then per call the guards, durable steps and
// execution (steps 3–11), driven by the engine.
pub mod arguments;
pub mod durable;
pub mod engine;
pub mod execute;
pub mod guard;
pub(crate) mod hook;
pub mod job;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model_output;
pub(crate) mod on_success;
#[cfg(feature = "otel")]
pub mod otel;
pub mod output;
pub mod place;
pub mod plan;
#[cfg(feature = "postgres")]
mod postgres;
pub mod progress;
#[cfg(feature = "redis")]
mod redis;
pub mod registry;
pub mod schema;
pub mod seal;
pub(crate) mod spans;
mod sqlite;

// Beyond one batch: provider formats, streams, the agent loop, importers.
pub mod agent;
pub mod import;
pub mod providers;
pub mod stream;

// Module paths of earlier releases, kept working.
pub use durable::{
    approval, background_job, external, idempotency, preference, rollback, run, store, wakeup,
};
pub use guard::{access, audit, cache, hidden, rate_limit, telemetry};

pub use access::{AccessDecision, AccessRequest, Effect, PolicyHook, Settings, policy_hook_fn};
pub use approval::{
    ApprovalInfo, ApprovalPolicy, ApprovalPredicate, ApprovalQuery, ApprovalRecord,
    ApprovalRequirement, ApprovalRules, ApprovalStatus, Decision, approval_predicate_fn,
};
pub use arguments::Limits;
#[cfg(feature = "postgres")]
pub use audit::PostgresAudit;
pub use audit::{
    AuditEntry, AuditOptions, AuditQuery, AuditRecord, AuditSink, JsonlAudit, MemoryAudit,
    Redaction, SqliteAudit,
};
pub use background_job::{JobState, JobStatus};
pub use batch::{BatchOptions, BatchResult, RollbackEntry, RollbackOutcome, RollbackReport};
pub use cache::{CachePolicy, CacheScope};
pub use call::{Call, CallResult, CallStatus};
pub use caller::Caller;
pub use durable::operator_request::{OperatorAction, OperatorRequest, RequestState};
pub use engine::{AuditSpec, CoordinationSpec, Engine, EngineOptions, OptionsError, StoreSpec};
pub use envelope::{Envelope, ToolError};
pub use error_code::ErrorCode;
pub use events::{Event, EventSender};
pub use external::{ExternalCall, ExternalStatus};
#[cfg(feature = "redis")]
pub use guard::{cache_redis::RedisCache, rate_limit_redis::RedisLimiter};
pub use handler::{
    BoxFuture, Handler, HandlerError, HandlerResult, HostData, ToolContext, handler_fn,
    stream_handler_fn,
};
pub use hidden::{HiddenParam, Resolution, ResolveRequest, Resolver, resolver_fn};
pub use http_auth::{BearerTokens, HttpAuth, HttpRequest, http_auth_fn};
pub use idempotency::{IdempotencyMode, IdempotencyPolicy};
pub use policy::{EffectClass, OversizeOutput, Policy, RetryPolicy, Risk};
pub use preference::{Preference, Remember};
pub use progress::Progress;
pub use rate_limit::{RateLimit, RateLimiter, RateScope};
pub use registry::{RegistrationError, Registry};
pub use run::{RunRecord, RunState, RunStep};
pub use schema::SchemaResources;
pub use seal::SealKey;
pub use spec::ToolSpec;
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{MemoryStore, SqliteStore, StateStore};
pub use telemetry::TelemetrySnapshot;
pub use tokio_util::sync::CancellationToken;
pub use tool::Tool;
pub use tool_calls::{Nested, ParentCall, ToolCalls};
pub use violation::Violation;
pub use wakeup::WakeBus;
