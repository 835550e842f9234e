//! The handler seam: what a tool runs. Bindings implement [`Handler`] over a foreign callable.

use crate::caller::Caller;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::violation::Violation;
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The message a model sees for an unexpected failure of app code (a handler, a hook, a
/// resolver, a compensation); the detail stays on the result and in the audit record.
pub const UNEXPECTED_MESSAGE: &str =
    "the tool failed unexpectedly; the details were logged for the app";

/// A boxed, sendable future, as handlers return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A [`BoxFuture`] that is done at once with what `answer` makes, for a seam whose
/// implementation never waits. Given a closure that captures nothing, the box holds nothing
/// and costs no allocation, where `Box::pin(std::future::ready(..))` costs one a call.
pub(crate) fn done<T, F>(answer: F) -> BoxFuture<T>
where
    F: Fn() -> T + Send + 'static,
{
    Box::pin(std::future::poll_fn(move |_| {
        std::task::Poll::Ready(answer())
    }))
}

/// What a handler hands back: data, or a [`HandlerError`].
pub type HandlerResult = Result<Value, HandlerError>;

pub use crate::batch::HostData;

/// Runs one attempt of one call. Implemented by Rust closures ([`handler_fn`]) and by the
/// Python and Node bindings over their callables.
/// `Any`, so that a binding finds its own among an engine's parts
/// ([`Engine::visit_sole_parts`](crate::Engine::visit_sole_parts)).
pub trait Handler: Any + Send + Sync {
    /// Runs the tool with validated arguments. The future may be dropped (timeout,
    /// cancellation); `ctx.cancel` fires first so foreign handlers can stop too.
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult>;

    /// [`Handler::call`] with arguments lent rather than given: what the engine calls, since
    /// the call's result keeps its arguments. By default it hands `call` a copy; a handler
    /// that only reads them (one that writes them out for another language, or reads them
    /// into a type) overrides it and skips the copy.
    fn call_ref(&self, args: &Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.call(args.clone(), ctx)
    }
}

/// What a handler knows about the call it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The call's id in its batch.
    pub call_id: Arc<str>,
    /// The tool's registered name.
    pub tool: Arc<str>,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// Who the batch runs for.
    pub caller: Arc<Caller>,
    /// Fires when this attempt times out or the batch is cancelled.
    pub cancel: CancellationToken,
    /// What the batch's starter attached ([`crate::BatchOptions::host`]).
    pub host: Option<HostData>,
    /// The run the call belongs to: its id stays the same across resumes and processes.
    pub run_id: Arc<str>,
    /// The app's idempotency key of the call, when it gave one.
    pub app_key: Option<Arc<str>>,
    /// Reports progress and partial outputs to whoever watches the batch.
    pub progress: crate::progress::Progress,
    /// Runs other tools of the engine, when the tool's policy names some (`may_call`).
    pub tools: Option<crate::tool_calls::ToolCalls>,
}

impl ToolContext {
    /// The context of app code that runs beside calls rather than as one (a hook called like
    /// a handler): attempt 1, no app key, nobody listening to progress, no tools to call.
    pub fn for_hook(
        call_id: Arc<str>,
        tool: Arc<str>,
        caller: Arc<Caller>,
        cancel: CancellationToken,
        host: Option<HostData>,
        run_id: Arc<str>,
    ) -> Self {
        ToolContext {
            call_id,
            tool,
            attempt: 1,
            caller,
            cancel,
            host,
            run_id,
            app_key: None,
            progress: Default::default(),
            tools: None,
        }
    }

    /// A key that is the same every time this call runs — a retry, a resume after a crash,
    /// another process — for the handler to hand to a downstream API that deduplicates on
    /// it (payment and email APIs do), so that running the call again has its effect once.
    /// Derived from the app's idempotency key of the call when it gave one (a retried
    /// request then gets the same key), else from the run and the call's id.
    pub fn idempotency_key(&self) -> String {
        idempotency_key(
            &self.run_id,
            &self.call_id,
            &self.tool,
            self.app_key.as_deref(),
        )
    }
}

/// [`ToolContext::idempotency_key`] from its parts, for bindings that build their context
/// apart from the core's.
pub fn idempotency_key(run_id: &str, call_id: &str, tool: &str, app_key: Option<&str>) -> String {
    let seed = match app_key {
        Some(key) => format!("tooljig-idempotency\0app\0{tool}\0{key}"),
        None => format!("tooljig-idempotency\0run\0{run_id}\0{call_id}"),
    };
    let digest = crate::digest::hex(&<sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes()));
    format!("tj_{}", &digest[..32])
}

/// Why a handler did not return data (yet).
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerError {
    /// The work goes on in the background as the job `job` (the app's own reference, e.g. a
    /// queue's task id): the call ends `pending_job` until the app reports how the job ended
    /// ([`Engine::complete_job`](crate::Engine::complete_job)). Not a failure; it is an error
    /// here because the handler has no data to return yet.
    Accepted {
        /// The job's reference, unique across the app's pending jobs.
        job: String,
    },
    /// A deliberate refusal or failure, with a code the handler chose; shown to the model as is.
    Tool(ToolError),
    /// Required information is missing; the model should ask for these fields.
    Needs(Vec<String>),
    /// Anything unexpected. The model sees a sanitized message; `detail` (a message, a
    /// traceback, a stack) stays on the result for the app.
    Unexpected {
        /// The full detail, for logs and the audit record.
        detail: String,
    },
}

impl HandlerError {
    /// A deliberate error with a code and a message for the model.
    pub fn tool(code: ErrorCode, message: impl Into<String>) -> Self {
        HandlerError::Tool(ToolError::new(code, message))
    }

    /// Missing fields the model should ask the user for.
    pub fn needs<I: IntoIterator<Item = S>, S: Into<String>>(fields: I) -> Self {
        HandlerError::Needs(fields.into_iter().map(Into::into).collect())
    }

    /// Arguments that passed the JSON Schema but not the handler's own validation (pydantic,
    /// zod, refinements): the same `invalid_arguments` error the schema check gives.
    pub fn invalid_arguments(violations: &[Violation]) -> Self {
        HandlerError::Tool(crate::violation::invalid_arguments(violations))
    }

    /// The work was accepted as the background job `job`: see [`HandlerError::Accepted`].
    pub fn accepted(job: impl Into<String>) -> Self {
        HandlerError::Accepted { job: job.into() }
    }

    /// An unexpected failure; `detail` never reaches the model.
    pub fn unexpected(detail: impl std::fmt::Display) -> Self {
        HandlerError::Unexpected {
            detail: detail.to_string(),
        }
    }
}

impl From<ToolError> for HandlerError {
    fn from(e: ToolError) -> Self {
        HandlerError::Tool(e)
    }
}

impl From<serde_json::Error> for HandlerError {
    fn from(e: serde_json::Error) -> Self {
        HandlerError::unexpected(e)
    }
}

struct FnHandler<F>(F);

impl<F, Fut> Handler for FnHandler<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        Box::pin((self.0)(args, ctx))
    }
}

/// A handler from an async closure over raw JSON arguments.
pub fn handler_fn<F, Fut>(f: F) -> Arc<dyn Handler>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    Arc::new(FnHandler(f))
}

/// A handler whose outputs come as a stream: each item is a partial output, the last one is
/// the result (as an async generator is in Python and Node). An error item ends the call
/// with that error; a stream that ends empty answers `null`.
pub fn stream_handler_fn<F, S>(f: F) -> Arc<dyn Handler>
where
    F: Fn(Value, ToolContext) -> S + Send + Sync + 'static,
    S: Stream<Item = HandlerResult> + Send + 'static,
{
    struct Streamed<F>(F);
    impl<F, S> Handler for Streamed<F>
    where
        F: Fn(Value, ToolContext) -> S + Send + Sync + 'static,
        S: Stream<Item = HandlerResult> + Send + 'static,
    {
        fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
            let progress = ctx.progress.clone();
            let stream = (self.0)(args, ctx);
            Box::pin(async move {
                let mut stream = std::pin::pin!(stream);
                let mut last = Value::Null;
                while let Some(item) = stream.next().await {
                    let value = item?;
                    progress.partial(value.clone());
                    last = value;
                }
                Ok::<_, HandlerError>(last)
            })
        }
    }
    Arc::new(Streamed(f))
}
