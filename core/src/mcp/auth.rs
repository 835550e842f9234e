//! Who calls over HTTP: the app's hook maps each request to a [`Caller`].
//!
//! The hook sees the request's headers (its `Authorization` header, usually) and answers a
//! caller or a refusal, which the client receives as `401 Unauthorized`. Without a hook the
//! server serves the app's one caller, and only on a loopback address: binding elsewhere
//! needs a hook (or [`BearerTokens`]), so a server on a network never runs tools for anyone
//! who can reach it.

use crate::caller::Caller;
use crate::handler::{BoxFuture, HostData};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// What the auth hook sees of one HTTP request.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct McpRequest {
    /// `GET`, `POST` or `DELETE`.
    pub method: String,
    /// The request path.
    pub path: String,
    /// The headers, names lowercased; a header given twice keeps its last value.
    pub headers: BTreeMap<String, String>,
}

impl McpRequest {
    /// The bearer token of the `Authorization` header, if it carries one.
    pub fn bearer(&self) -> Option<&str> {
        let value = self.headers.get("authorization")?;
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    }
}

/// Maps an HTTP request to the caller its tool calls run for. App code in any language;
/// bindings implement it over a foreign callable. `Err` refuses the request (the message
/// goes back with the 401).
pub trait McpAuth: Send + Sync + 'static {
    /// The caller of `request`, or why it is refused. `host` is the server's host (a
    /// binding's event loop).
    fn authenticate(
        &self,
        request: McpRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>>;
}

/// An auth hook from an async closure.
pub fn mcp_auth_fn<F, Fut>(f: F) -> Arc<dyn McpAuth>
where
    F: Fn(McpRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Caller, String>> + Send + 'static,
{
    struct FnAuth<F>(F);
    impl<F, Fut> McpAuth for FnAuth<F>
    where
        F: Fn(McpRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Caller, String>> + Send + 'static,
    {
        fn authenticate(
            &self,
            request: McpRequest,
            _host: Option<HostData>,
        ) -> BoxFuture<Result<Caller, String>> {
            Box::pin((self.0)(request))
        }
    }
    Arc::new(FnAuth(f))
}

pub use crate::bearer::BearerTokens;

/// The simplest hook: a table of bearer tokens, each standing for one caller.
impl McpAuth for BearerTokens {
    fn authenticate(
        &self,
        request: McpRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>> {
        let found = match request.bearer() {
            None => Err("a bearer token is required".to_string()),
            Some(token) => self
                .caller_of(token)
                .ok_or_else(|| "unknown bearer token".to_string()),
        };
        Box::pin(std::future::ready(found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn request(authorization: &str) -> McpRequest {
        let mut headers = BTreeMap::new();
        headers.insert("authorization".into(), authorization.into());
        McpRequest {
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
        let none = tokens.authenticate(McpRequest::default(), None).await;
        assert_eq!(none.unwrap_err(), "a bearer token is required");
        assert!(
            tokens
                .authenticate(request("Basic s3cret"), None)
                .await
                .is_err()
        );
    }
}
