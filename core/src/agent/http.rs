//! Built-in HTTP model clients (feature `http`, on by default): OpenAI-compatible Chat
//! Completions (OpenAI, Ollama, vLLM, llama.cpp's server, ...) and Anthropic Messages, plus
//! OpenAI Responses and Gemini.
//!
//! One [`HttpModel`] serves them all through their [`ProviderFormat`]: requests are streamed
//! (server-sent events parsed as they arrive and forwarded as [`StreamEvent`]s) or not;
//! 429 and 5xx answers and connection failures are retried with exponential backoff and
//! jitter, honouring `retry-after-ms` / `Retry-After`; every request has a connect timeout
//! and an overall timeout; the API key is read from the environment at each request unless
//! given. Retries stop once a stream has started: its events were already delivered.
//!
//! [`StreamEvent`]: crate::stream::StreamEvent

use super::model::{ModelClient, ModelError, ModelErrorKind, StreamSender};
use crate::handler::BoxFuture;
use crate::providers::{
    Anthropic, Gemini, ModelRequest, ModelTurn, OpenAiChat, OpenAiResponses, Provider,
    ProviderFormat,
};
use crate::stream::StreamParser;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// How an [`HttpModel`] reaches its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The API's base URL (`https://api.openai.com/v1`, `http://localhost:11434/v1`).
    pub base_url: String,
    /// The API key; when `None`, read from `api_key_env` at each request.
    pub api_key: Option<String>,
    /// The environment variable holding the key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
    pub api_key_env: Option<String>,
    /// Time allowed for one request, streaming included.
    pub timeout: Duration,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Retries after the first attempt, for 429, 5xx and connection failures.
    pub max_retries: u32,
    /// First backoff; doubles each retry.
    pub initial_backoff: Duration,
    /// Longest backoff (and longest `Retry-After` honoured).
    pub max_backoff: Duration,
    /// Ask for a server-sent-event stream.
    pub stream: bool,
    /// Extra headers on every request.
    pub headers: Vec<(String, String)>,
}

impl HttpOptions {
    fn new(base_url: &str, env: &str) -> Self {
        HttpOptions {
            base_url: base_url.to_string(),
            api_key: None,
            api_key_env: Some(env.to_string()),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            stream: true,
            headers: Vec::new(),
        }
    }
}

/// The options of an HTTP model as data: what Python's keyword arguments and JavaScript's
/// options object hold, read by [`HttpModel::from_config`]. Durations are in milliseconds;
/// every unset option keeps the provider's default of [`HttpOptions`] (the key from the
/// provider's environment variable, streaming, 3 retries with backoff from 500 ms to 20 s,
/// 120 s request and 10 s connect timeouts).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpModelConfig {
    /// The API's base URL.
    pub base_url: Option<String>,
    /// The API key; read from the environment when unset.
    pub api_key: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Time allowed for one request, streaming included.
    pub timeout_ms: Option<u64>,
    /// Time allowed to connect.
    pub connect_timeout_ms: Option<u64>,
    /// Retries after the first attempt.
    pub max_retries: Option<u32>,
    /// First backoff; doubles each retry.
    pub initial_backoff_ms: Option<u64>,
    /// Longest backoff.
    pub max_backoff_ms: Option<u64>,
    /// Ask for a server-sent-event stream.
    pub stream: Option<bool>,
    /// OpenAI strict mode (see [`HttpModel::strict`]).
    pub strict: bool,
    /// Extra headers (names to string values), replacing defaults of the same name.
    pub headers: serde_json::Map<String, serde_json::Value>,
}

/// A model behind an HTTP API.
pub struct HttpModel {
    model: String,
    format: Arc<dyn ProviderFormat>,
    strict: bool,
    options: HttpOptions,
    client: reqwest::Client,
}

impl HttpModel {
    /// A Chat Completions model at OpenAI, key from `OPENAI_API_KEY`. Point it at any
    /// compatible server with [`HttpModel::base_url`].
    pub fn openai_compatible(model: impl Into<String>) -> Self {
        HttpModel::build(
            model,
            Arc::new(OpenAiChat::default()),
            HttpOptions::new("https://api.openai.com/v1", "OPENAI_API_KEY"),
        )
    }

    /// An OpenAI Responses model, key from `OPENAI_API_KEY`.
    pub fn openai_responses(model: impl Into<String>) -> Self {
        HttpModel::build(
            model,
            Arc::new(OpenAiResponses::default()),
            HttpOptions::new("https://api.openai.com/v1", "OPENAI_API_KEY"),
        )
    }

    /// A Gemini model (`generateContent`, `streamGenerateContent?alt=sse`), key from
    /// `GEMINI_API_KEY`.
    pub fn gemini(model: impl Into<String>) -> Self {
        HttpModel::build(
            model,
            Arc::new(Gemini::default()),
            HttpOptions::new(
                "https://generativelanguage.googleapis.com/v1beta",
                "GEMINI_API_KEY",
            ),
        )
    }

    /// An Anthropic Messages model, key from `ANTHROPIC_API_KEY`.
    pub fn anthropic(model: impl Into<String>) -> Self {
        let mut options = HttpOptions::new("https://api.anthropic.com", "ANTHROPIC_API_KEY");
        options
            .headers
            .push(("anthropic-version".into(), "2023-06-01".into()));
        HttpModel::build(model, Arc::new(Anthropic::default()), options)
    }

    /// The provider's model with its default options.
    pub fn for_provider(provider: Provider, model: impl Into<String>) -> Self {
        match provider {
            Provider::OpenAiChat => HttpModel::openai_compatible(model),
            Provider::OpenAiResponses => HttpModel::openai_responses(model),
            Provider::Anthropic => HttpModel::anthropic(model),
            Provider::Gemini => HttpModel::gemini(model),
        }
    }

    /// The provider's model with the options of `config` over its defaults; a header that
    /// is not valid HTTP (or not a string) is refused as `invalid_request`.
    pub fn from_config(
        provider: Provider,
        model: impl Into<String>,
        config: HttpModelConfig,
    ) -> Result<Self, ModelError> {
        let mut m = HttpModel::for_provider(provider, model);
        if let Some(url) = config.base_url {
            m = m.base_url(url);
        }
        let o = &mut m.options;
        o.api_key = config.api_key.or(o.api_key.take());
        if let Some(var) = config.api_key_env {
            o.api_key_env = Some(var);
        }
        let ms = Duration::from_millis;
        o.timeout = config.timeout_ms.map_or(o.timeout, ms);
        o.connect_timeout = config.connect_timeout_ms.map_or(o.connect_timeout, ms);
        o.max_retries = config.max_retries.unwrap_or(o.max_retries);
        o.initial_backoff = config.initial_backoff_ms.map_or(o.initial_backoff, ms);
        o.max_backoff = config.max_backoff_ms.map_or(o.max_backoff, ms);
        o.stream = config.stream.unwrap_or(o.stream);
        m.rebuild_client();
        if config.strict {
            m = m.strict();
        }
        for (name, value) in config.headers {
            let serde_json::Value::String(value) = value else {
                return Err(ModelError::new(
                    ModelErrorKind::InvalidRequest,
                    format!("the value of header {name:?} must be a string"),
                ));
            };
            m = m.header(name, value)?;
        }
        Ok(m)
    }

    /// The options in effect.
    pub fn http_options(&self) -> &HttpOptions {
        &self.options
    }

    fn build(
        model: impl Into<String>,
        format: Arc<dyn ProviderFormat>,
        options: HttpOptions,
    ) -> Self {
        let mut m = HttpModel {
            model: model.into(),
            format,
            strict: false,
            client: reqwest::Client::new(),
            options,
        };
        m.rebuild_client();
        m
    }

    fn rebuild_client(&mut self) {
        // Building fails only when the TLS backend cannot start; keep the default client then.
        if let Ok(c) = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .timeout(self.options.timeout)
            .build()
        {
            self.client = c;
        }
    }

    /// Sets the base URL.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.options.base_url = url.into().trim_end_matches('/').to_string();
        self
    }

    /// Sets the API key instead of reading the environment.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.options.api_key = Some(key.into());
        self
    }

    /// Reads the API key from this environment variable.
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.options.api_key_env = Some(var.into());
        self
    }

    /// Adds a header to every request (a gateway's key, an organization or project id),
    /// replacing one of the same name set before, `anthropic-version` included. Refused as
    /// `invalid_request` when it is not a valid HTTP header: checked here, because a request
    /// built with it would fail at every attempt as if the network did.
    pub fn header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, ModelError> {
        let (name, value) = (name.into(), value.into());
        if let Err(e) = reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
            return Err(ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("{name:?} is not a valid HTTP header name: {e}"),
            ));
        }
        if let Err(e) = reqwest::header::HeaderValue::from_str(&value) {
            return Err(ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the value of header {name:?} is not a valid HTTP header value: {e}"),
            ));
        }
        self.options
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
        self.options.headers.push((name, value));
        Ok(self)
    }

    /// Replaces every option at once.
    pub fn options(mut self, options: HttpOptions) -> Self {
        self.options = options;
        self.rebuild_client();
        self
    }

    /// Sets the timeouts: overall per request, and to connect.
    pub fn timeouts(mut self, request: Duration, connect: Duration) -> Self {
        self.options.timeout = request;
        self.options.connect_timeout = connect;
        self.rebuild_client();
        self
    }

    /// Sets retries and backoff.
    pub fn retries(mut self, max_retries: u32, initial: Duration, max: Duration) -> Self {
        self.options.max_retries = max_retries;
        self.options.initial_backoff = initial;
        self.options.max_backoff = max;
        self
    }

    /// Streams (default) or not.
    pub fn stream(mut self, stream: bool) -> Self {
        self.options.stream = stream;
        self
    }

    /// Offers tools in OpenAI strict mode and removes the nulls strict mode makes the model
    /// send for optional fields (OpenAI formats only).
    pub fn strict(mut self) -> Self {
        match self.format.provider() {
            Provider::OpenAiChat => self.format = Arc::new(OpenAiChat::strict()),
            Provider::OpenAiResponses => {
                self.format = Arc::new(OpenAiResponses {
                    strict: true,
                    ..Default::default()
                })
            }
            _ => return self,
        }
        self.strict = true;
        self
    }

    /// The endpoint for this provider and model.
    fn url(&self, model: &str) -> String {
        let base = &self.options.base_url;
        match self.format.provider() {
            Provider::OpenAiChat => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
            Provider::Anthropic => format!("{base}/v1/messages"),
            Provider::Gemini if self.options.stream => {
                format!("{base}/models/{model}:streamGenerateContent?alt=sse")
            }
            Provider::Gemini => format!("{base}/models/{model}:generateContent"),
        }
    }

    fn key(&self) -> Option<String> {
        self.options.api_key.clone().or_else(|| {
            self.options
                .api_key_env
                .as_ref()
                .and_then(|v| std::env::var(v).ok())
                .filter(|k| !k.is_empty())
        })
    }
}

/// The backoff before retry `attempt` (1 for the first retry): exponential, ±25% jitter,
/// or what the server asked for.
pub fn backoff(options: &HttpOptions, attempt: u32, retry_after_ms: Option<u64>) -> Duration {
    if let Some(ms) = retry_after_ms {
        return Duration::from_millis(ms).min(options.max_backoff);
    }
    let base = options
        .initial_backoff
        .saturating_mul(1u32 << (attempt.saturating_sub(1)).min(16))
        .min(options.max_backoff);
    let jitter = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        (h.finish() % 500) as f64 / 1000.0 + 0.75
    };
    base.mul_f64(jitter).min(options.max_backoff)
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(ms.max(0.0) as u64);
    }
    get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|s| (s.max(0.0) * 1000.0) as u64)
}

fn transport_error(e: &reqwest::Error) -> ModelError {
    let kind = if e.is_timeout() {
        ModelErrorKind::Timeout
    } else {
        ModelErrorKind::Network
    };
    ModelError::new(kind, e.to_string())
}

impl ModelClient for HttpModel {
    fn name(&self) -> String {
        let p = match self.format.provider() {
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::OpenAiResponses => "openai-responses",
            Provider::OpenAiChat => "openai",
        };
        format!("{p}:{}", self.model)
    }

    fn respond(
        &self,
        mut request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        if request.model.is_empty() {
            request.model = self.model.clone();
        }
        request.stream = self.options.stream;
        let body = serde_json::to_vec(&self.format.request(&request)).unwrap_or_default();
        let url = self.url(&request.model);
        let provider = self.format.provider();
        let format = self.format.clone();
        let options = self.options.clone();
        let client = self.client.clone();
        let key = self.key();
        let strict = self.strict;
        Box::pin(async move {
            let mut attempt = 0u32;
            let response = loop {
                let mut req = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone());
                if let Some(key) = &key {
                    req = match provider {
                        Provider::Anthropic => req.header("x-api-key", key),
                        Provider::Gemini => req.header("x-goog-api-key", key),
                        _ => req.header("authorization", format!("Bearer {key}")),
                    };
                }
                for (k, v) in &options.headers {
                    req = req.header(k, v);
                }
                let failure = match req.send().await {
                    Ok(r) if r.status().is_success() => break r,
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let after = retry_after(r.headers());
                        let text = r.text().await.unwrap_or_default();
                        let mut e = ModelError::from_status(status, &text);
                        e.retry_after_ms = after;
                        e
                    }
                    Err(e) => transport_error(&e),
                };
                attempt += 1;
                if !failure.retryable() || attempt > options.max_retries {
                    return Err(failure);
                }
                let wait = backoff(&options, attempt, failure.retry_after_ms);
                tracing::info!(attempt, ?wait, error = %failure, "retrying the model request");
                tokio::time::sleep(wait).await;
            };
            // A server may answer a streaming request with one JSON body (an error, or no
            // streaming support): read it as such rather than as an empty stream.
            let is_json = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("application/json"));
            let mut turn = if options.stream && !is_json {
                let mut parser = StreamParser::new(provider);
                let mut body = response.bytes_stream();
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(|e| transport_error(&e))?;
                    let evs = parser
                        .push(&chunk)
                        .map_err(|e| ModelError::new(ModelErrorKind::BadResponse, e.to_string()))?;
                    if let Some(tx) = &events {
                        for e in evs {
                            let _ = tx.send(e);
                        }
                    }
                }
                let (evs, turn) = parser
                    .finish()
                    .map_err(|e| ModelError::new(ModelErrorKind::BadResponse, e.to_string()))?;
                if let Some(tx) = &events {
                    for e in evs {
                        let _ = tx.send(e);
                    }
                }
                turn
            } else {
                let bytes = response.bytes().await.map_err(|e| transport_error(&e))?;
                let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                    ModelError::new(
                        ModelErrorKind::BadResponse,
                        format!("the response is not JSON: {e}"),
                    )
                })?;
                format
                    .parse_response(&value)
                    .map_err(|e| ModelError::new(ModelErrorKind::BadResponse, e.to_string()))?
            };
            if strict {
                turn.drop_strict_nulls(&request.tools);
            }
            Ok(turn)
        })
    }
}
