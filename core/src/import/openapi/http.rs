//! The handler of an imported operation: one HTTP request built from the validated
//! arguments, with the caller's credentials, and its answer as the call's result.

use super::super::ImportError;
use crate::caller::Caller;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::handler::{BoxFuture, Handler, HandlerError, HandlerResult, ToolContext};
use crate::violation::Violation;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Where a request finds the caller's secret: a caller attribute the app set when it
/// authenticated the user, never an argument the model writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// The caller attribute holding the secret (`github_token`).
    pub attribute: String,
    /// The header it is sent in; default `Authorization`.
    #[serde(default = "authorization")]
    pub header: String,
    /// Written before the secret (`Bearer`, `token`); unset, `Bearer` in `Authorization` and
    /// nothing in any other header.
    #[serde(default)]
    pub scheme: Option<String>,
}

fn authorization() -> String {
    "Authorization".into()
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Location {
    Path,
    Query,
    Header,
}

impl Location {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
        }
    }
}

/// One parameter: its argument's name, its name on the wire, where it goes.
#[derive(Debug, Clone)]
pub(super) struct Param {
    pub(super) arg: String,
    pub(super) name: String,
    pub(super) location: Location,
}

/// An operation, ready to call.
pub(super) struct Endpoint {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) params: Vec<Param>,
    pub(super) body: bool,
    pub(super) base: String,
    pub(super) credentials: Option<Credentials>,
    pub(super) headers: BTreeMap<String, String>,
    pub(super) client: reqwest::Client,
}

/// Everything but what a path segment may hold unescaped: `.` too, so `..` stays a name.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// The largest answer read, so a runaway API cannot exhaust memory.
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The API's address: `base` when given, else the first server's URL with its variables at
/// their defaults. It must be absolute (http or https).
pub(super) fn base_url(doc: &Value, base: Option<&str>) -> Result<String, ImportError> {
    let url = match base {
        Some(b) => b.to_string(),
        None => {
            let server = doc.pointer("/servers/0");
            let mut url = server
                .and_then(|s| s.get("url"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let vars = server
                .and_then(|s| s.get("variables"))
                .and_then(Value::as_object);
            for (name, var) in vars.into_iter().flatten() {
                let default = var.get("default").and_then(Value::as_str).unwrap_or("");
                url = url.replace(&format!("{{{name}}}"), default);
            }
            url
        }
    };
    match Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(url.trim_end_matches('/').into()),
        _ => Err(ImportError::at(
            "/servers/0/url",
            format!("the API's address {url:?} is not an absolute http(s) URL; give `base_url`"),
        )),
    }
}

/// The client every imported operation shares.
pub(super) fn client() -> Result<reqwest::Client, ImportError> {
    reqwest::Client::builder()
        .user_agent(concat!("tooljig/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ImportError::at("", format!("the HTTP client did not start: {e}")))
}

impl Handler for Endpoint {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let request = self.request(&args, &ctx.caller);
        Box::pin(async move {
            let response = request?.send().await.map_err(|e| {
                HandlerError::Tool(
                    ToolError::new(
                        ErrorCode::ExternalApiError,
                        format!("the API could not be reached: {}", e.without_url()),
                    )
                    .retryable(true),
                )
            })?;
            answer(response).await
        })
    }
}

impl Endpoint {
    fn request(
        &self,
        args: &Value,
        caller: &Caller,
    ) -> Result<reqwest::RequestBuilder, HandlerError> {
        let mut path = self.path.clone();
        let mut query = Vec::new();
        let mut headers = Vec::new();
        for p in &self.params {
            let Some(value) = args.get(&p.arg).filter(|v| !v.is_null()) else {
                continue;
            };
            match p.location {
                Location::Path => {
                    let text = utf8_percent_encode(&text_of(value, ","), SEGMENT).to_string();
                    path = path.replace(&format!("{{{}}}", p.name), &text);
                }
                Location::Query => match value {
                    Value::Array(items) => {
                        query.extend(items.iter().map(|v| (p.name.clone(), text_of(v, ","))))
                    }
                    v => query.push((p.name.clone(), text_of(v, ","))),
                },
                Location::Header => {
                    let text = text_of(value, ",");
                    // The model's text may not split a header or start another.
                    if reqwest::header::HeaderValue::from_str(&text).is_err() {
                        return Err(HandlerError::invalid_arguments(&[Violation::at_path(
                            &[Value::String(p.arg.clone())],
                            "is not a valid HTTP header value (control characters or line breaks)",
                        )]));
                    }
                    headers.push((p.name.clone(), text));
                }
            }
        }
        let mut url = Url::parse(&format!("{}{path}", self.base))
            .map_err(|e| HandlerError::unexpected(format!("the request URL did not form: {e}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let method = reqwest::Method::from_bytes(self.method.as_bytes())
            .map_err(|e| HandlerError::unexpected(format!("bad method: {e}")))?;
        let mut request = self.client.request(method, url);
        for (name, value) in self
            .headers
            .iter()
            .chain(headers.iter().map(|(n, v)| (n, v)))
        {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(c) = &self.credentials {
            let secret = caller.attributes.get(&c.attribute).and_then(Value::as_str);
            let Some(secret) = secret.filter(|s| !s.is_empty()) else {
                return Err(HandlerError::Tool(
                    ToolError::new(
                        ErrorCode::PermissionDenied,
                        "the caller has no credentials for this API",
                    )
                    .with("reason", "missing_credentials"),
                ));
            };
            let scheme = match (
                c.scheme.as_deref(),
                c.header.eq_ignore_ascii_case("authorization"),
            ) {
                (Some(""), _) | (None, false) => String::new(),
                (Some(s), _) => format!("{s} "),
                (None, true) => "Bearer ".into(),
            };
            request = request.header(c.header.as_str(), format!("{scheme}{secret}"));
        }
        if self.body
            && let Some(body) = args.get("body")
        {
            let bytes = serde_json::to_vec(body)
                .map_err(|e| HandlerError::unexpected(format!("the body did not encode: {e}")))?;
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(bytes);
        }
        Ok(request)
    }
}

/// A value as it goes in a path, query or header: strings as they are, arrays joined.
fn text_of(value: &Value, sep: &str) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| text_of(v, sep))
            .collect::<Vec<_>>()
            .join(sep),
        other => other.to_string(),
    }
}

/// The call's result from the API's answer: its JSON (or text) when it succeeded, else an
/// `external_api_error` with the status and the start of the answer.
async fn answer(mut response: reqwest::Response) -> HandlerResult {
    let status = response.status();
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if bytes.len() + chunk.len() > MAX_ANSWER_BYTES => {
                return Err(HandlerError::tool(
                    ErrorCode::ExternalApiError,
                    format!("the API's answer is larger than {MAX_ANSWER_BYTES} bytes"),
                ));
            }
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) => break,
            Err(e) => {
                return Err(HandlerError::Tool(
                    ToolError::new(
                        ErrorCode::ExternalApiError,
                        format!("the API's answer broke off: {}", e.without_url()),
                    )
                    .retryable(true),
                ));
            }
        }
    }
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    if status.is_success() {
        return Ok(body);
    }
    let code = status.as_u16();
    let shown = match &body {
        Value::String(s) => s.chars().take(2000).collect::<String>().into(),
        other if other.to_string().len() <= 2000 => other.clone(),
        other => other
            .to_string()
            .chars()
            .take(2000)
            .collect::<String>()
            .into(),
    };
    Err(HandlerError::Tool(
        ToolError::new(
            ErrorCode::ExternalApiError,
            format!("the API answered {status}"),
        )
        .with("status", code)
        .with("answer", shown)
        .retryable(code == 408 || code == 429 || status.is_server_error()),
    ))
}
