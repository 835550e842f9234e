//! The model seam: anything that answers a [`ModelRequest`] with a [`ModelTurn`].
//!
//! tooljig's HTTP clients implement it, so do [`ScriptedModel`](super::ScriptedModel) and
//! [`FallbackChain`](super::FallbackChain); the Python and Node bindings implement it over a
//! callback, so apps keep their own SDKs. A model that streams sends [`StreamEvent`]s as
//! they arrive; one that does not simply returns the turn and the loop fills in the events.

use crate::handler::BoxFuture;
use crate::providers::{ModelRequest, ModelTurn};
use crate::stream::StreamEvent;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where a streaming model sends its events. Sending never blocks.
pub type StreamSender = UnboundedSender<StreamEvent>;

/// Answers model requests. `Any`, so that a binding finds its own model behind the trait
/// (what it must report to its language's cycle collector).
pub trait ModelClient: std::any::Any + Send + Sync {
    /// A short name for logs, counters and the fallback chain (`openai:gpt-4o-mini`).
    fn name(&self) -> String;

    /// Answers one request. `events`, when given, receives the answer as it streams.
    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>>;
}

/// What kind of failure a model call had; decides retries and fallbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// HTTP 429: too many requests.
    RateLimited,
    /// HTTP 5xx or an overloaded provider.
    Server,
    /// No answer in time.
    Timeout,
    /// The connection failed.
    Network,
    /// The API key is missing or refused (401, 403).
    Auth,
    /// The provider refused the request as malformed (400, 404, 422).
    InvalidRequest,
    /// The answer is not in the provider's format.
    BadResponse,
    /// Every model of a fallback chain is resting after repeated failures.
    CircuitOpen,
    /// Anything else (a callback's own error, a script that ran out).
    Other,
}

impl ModelErrorKind {
    /// The kind of a failed HTTP answer's status: what the HTTP clients and the bindings'
    /// model functions (an SDK error carrying a `status`) both go by.
    pub fn from_status(status: u16) -> Self {
        match status {
            429 => ModelErrorKind::RateLimited,
            401 | 403 => ModelErrorKind::Auth,
            408 => ModelErrorKind::Timeout,
            500..=599 => ModelErrorKind::Server,
            _ => ModelErrorKind::InvalidRequest,
        }
    }
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct ModelError {
    /// What kind of failure.
    pub kind: ModelErrorKind,
    /// What happened, for logs.
    pub message: String,
    /// The HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the provider asked to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ModelError {
    /// An error of `kind`.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
        }
    }

    /// The error for an HTTP status.
    pub fn from_status(status: u16, body: &str) -> Self {
        let kind = ModelErrorKind::from_status(status);
        let mut e = ModelError::new(kind, format!("HTTP {status}: {body:.500}"));
        e.status = Some(status);
        e
    }

    /// Whether the same request may succeed later.
    pub fn retryable(&self) -> bool {
        matches!(
            self.kind,
            ModelErrorKind::RateLimited
                | ModelErrorKind::Server
                | ModelErrorKind::Timeout
                | ModelErrorKind::Network
        )
    }
}

struct FnModel<F> {
    name: String,
    f: F,
}

impl<F, Fut> ModelClient for FnModel<F>
where
    F: Fn(ModelRequest, Option<StreamSender>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelTurn, ModelError>> + Send + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        Box::pin((self.f)(request, events))
    }
}

/// A model from an async closure: how apps plug in their own SDK.
pub fn model_fn<F, Fut>(name: impl Into<String>, f: F) -> Arc<dyn ModelClient>
where
    F: Fn(ModelRequest, Option<StreamSender>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ModelTurn, ModelError>> + Send + 'static,
{
    Arc::new(FnModel {
        name: name.into(),
        f,
    })
}
