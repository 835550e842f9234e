//! Who calls a server that tooljig runs over HTTP (an MCP endpoint, the approval inbox): the
//! app's hook maps each request to a [`Caller`].
//!
//! The hook sees the request's method, path and headers (its `Authorization` header, usually)
//! and answers a caller or a refusal, which the client receives as `401 Unauthorized`. The
//! simplest hook is a table of [`BearerTokens`]. A server without a hook serves only on a
//! loopback address, so a server on a network never acts for anyone who can reach it.

use crate::caller::Caller;
use crate::handler::{BoxFuture, HostData};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

/// What the auth hook sees of one HTTP request.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HttpRequest {
    /// `GET`, `POST`, `DELETE`...
    pub method: String,
    /// The request path.
    pub path: String,
    /// The headers, names lowercased; a header given twice keeps its last value.
    pub headers: BTreeMap<String, String>,
}

impl HttpRequest {
    /// The request a hook sees, from its method, path and headers (names are lowercased;
    /// headers that are not text are left out).
    pub fn new<'a>(
        method: &str,
        path: &str,
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Self {
        let headers = headers
            .into_iter()
            .filter_map(|(k, v)| {
                Some((
                    k.to_ascii_lowercase(),
                    std::str::from_utf8(v).ok()?.to_string(),
                ))
            })
            .collect();
        HttpRequest {
            method: method.to_string(),
            path: path.to_string(),
            headers,
        }
    }

    /// The bearer token of the `Authorization` header, if it carries one.
    pub fn bearer(&self) -> Option<&str> {
        bearer_of(self.headers.get("authorization")?)
    }
}

/// The token of an `Authorization` header's value of the `Bearer` scheme.
fn bearer_of(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Maps an HTTP request to the caller it acts for. App code in any language;
/// bindings implement it over a foreign callable. `Err` refuses the request (the message
/// goes back with the 401).
pub trait HttpAuth: Send + Sync + 'static {
    /// The caller of `request`, or why it is refused. `host` is the server's host (a
    /// binding's event loop).
    fn authenticate(
        &self,
        request: HttpRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>>;

    /// The caller from the request's `Authorization` header alone (its last one; `None` when
    /// it has none that is text), for a hook that needs nothing else of the request; the
    /// default, `None`, asks for [`HttpAuth::authenticate`] with the whole request. A server
    /// asks this first, so a table of tokens answers without the request's headers copied
    /// into an [`HttpRequest`] for it (two strings a header).
    fn authenticate_header(&self, _authorization: Option<&str>) -> Option<Result<Caller, String>> {
        None
    }
}

/// An auth hook from an async closure.
pub fn http_auth_fn<F, Fut>(f: F) -> Arc<dyn HttpAuth>
where
    F: Fn(HttpRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Caller, String>> + Send + 'static,
{
    struct FnAuth<F>(F);
    impl<F, Fut> HttpAuth for FnAuth<F>
    where
        F: Fn(HttpRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Caller, String>> + Send + 'static,
    {
        fn authenticate(
            &self,
            request: HttpRequest,
            _host: Option<HostData>,
        ) -> BoxFuture<Result<Caller, String>> {
            Box::pin((self.0)(request))
        }
    }
    Arc::new(FnAuth(f))
}

/// A table of bearer tokens and the callers they stand for.
#[derive(Debug, Clone, Default)]
pub struct BearerTokens(pub HashMap<String, Caller>);

impl BearerTokens {
    /// The caller `token` stands for. Every token is compared in full, so response times do
    /// not tell an attacker how much of one they guessed.
    pub fn caller_of(&self, token: &str) -> Option<Caller> {
        self.0
            .iter()
            .find(|(known, _)| constant_time_eq(known.as_bytes(), token.as_bytes()))
            .map(|(_, caller)| caller.clone())
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The simplest hook: a table of bearer tokens, each standing for one caller.
impl HttpAuth for BearerTokens {
    fn authenticate(
        &self,
        request: HttpRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>> {
        Box::pin(std::future::ready(self.answer(request.bearer())))
    }

    fn authenticate_header(&self, authorization: Option<&str>) -> Option<Result<Caller, String>> {
        Some(self.answer(authorization.and_then(bearer_of)))
    }
}

impl BearerTokens {
    /// The caller of a request with bearer token `token`, or why it is refused.
    fn answer(&self, token: Option<&str>) -> Result<Caller, String> {
        match token {
            None => Err("a bearer token is required".to_string()),
            Some(token) => self
                .caller_of(token)
                .ok_or_else(|| "unknown bearer token".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: &str) -> HttpRequest {
        let mut headers = BTreeMap::new();
        headers.insert("authorization".into(), authorization.into());
        HttpRequest {
            headers,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn bearer_tokens_map_to_their_caller_and_refuse_the_rest() {
        let tokens = BearerTokens(HashMap::from([(
            "s3cret".to_string(),
            Caller::principal("ada"),
        )]));
        let ok = tokens.authenticate(request("Bearer s3cret"), None).await;
        assert_eq!(ok.unwrap().principal.as_deref(), Some("ada"));
        assert!(
            tokens
                .authenticate(request("bearer s3cret"), None)
                .await
                .is_ok()
        );
        let wrong = tokens.authenticate(request("Bearer s3cre"), None).await;
        assert_eq!(wrong.unwrap_err(), "unknown bearer token");
        let none = tokens.authenticate(HttpRequest::default(), None).await;
        assert_eq!(none.unwrap_err(), "a bearer token is required");
        assert!(
            tokens
                .authenticate(request("Basic s3cret"), None)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_token_table_answers_from_the_header_as_from_the_request() {
        let tokens = BearerTokens(HashMap::from([(
            "s3cret".to_string(),
            Caller::principal("ada"),
        )]));
        for header in [
            "Bearer s3cret",
            "bearer  s3cret ",
            "Bearer s3cre",
            "Basic s3cret",
            "",
        ] {
            let whole = tokens.authenticate(request(header), None).await;
            let alone = tokens.authenticate_header(Some(header));
            assert_eq!(alone, Some(whole), "{header:?}");
        }
        let none = tokens.authenticate(HttpRequest::default(), None).await;
        assert_eq!(tokens.authenticate_header(None), Some(none));
        // A hook that needs the request (any closure) is asked with the whole of it.
        let hook = http_auth_fn(|_| async { Ok(Caller::principal("x")) });
        assert!(hook.authenticate_header(Some("Bearer s3cret")).is_none());
    }
}
