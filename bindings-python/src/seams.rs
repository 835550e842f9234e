//! The core's seams over Python callables: the app's policy hook ([`PolicyHook`]), its
//! resolvers ([`Resolver`]) and its approval predicate ([`ApprovalPredicate`]).
//!
//! Both run through the same machinery as tool handlers ([`call_python`]): an `async def`
//! runs as a task on the batch's event loop, a `def` on a worker thread, each in a copy of the
//! caller's `contextvars`. The core hands the batch's host over as an argument of each seam's
//! method. A raised `ToolError` reaches the model as is; any other
//! exception, or an answer of the wrong shape, fails closed (`internal_error`, the traceback
//! on the result's `detail`).

use crate::handler::{Context, Kind, call_python};
use pyo3::prelude::*;
use serde_json::Value;
use serde_json::json;
use std::borrow::Cow;
use std::sync::Arc;
use tooljig::{
    AccessDecision, AccessRequest, ApprovalPredicate, ApprovalQuery, BoxFuture, Caller,
    HandlerError, HostData, HttpAuth, HttpRequest, PolicyHook, Resolution, ResolveRequest,
    Resolver,
};

/// An app callable and how it runs.
struct PyCallable {
    invoke: Arc<Py<PyAny>>,
    kind: Kind,
}

impl PyCallable {
    fn new(invoke: Py<PyAny>, is_async: bool) -> Self {
        PyCallable {
            invoke: Arc::new(invoke),
            kind: if is_async { Kind::Async } else { Kind::Sync },
        }
    }

    /// Calls it with `request` (serialized) and awaits its JSON answer.
    fn ask(
        &self,
        request: Value,
        host: Option<HostData>,
        what: &'static str,
    ) -> BoxFuture<Result<Value, HandlerError>> {
        call_python(
            &self.invoke,
            self.kind,
            host,
            Cow::Owned(request),
            Context::Absent,
            what,
        )
    }
}

/// The policy hook: `hook(request)` gets `{tool, call_id, arguments, caller, risk, effect}`
/// and returns `True` (allow), `False` (deny) or `{"allow": ..., "reason": ...}`.
pub struct PyPolicyHook(PyCallable);

impl PyPolicyHook {
    /// The hook over the package's wrapper of the app's callable.
    pub fn new(invoke: Py<PyAny>, is_async: bool) -> Self {
        PyPolicyHook(PyCallable::new(invoke, is_async))
    }

    /// The callable it calls.
    pub fn callable(&self) -> &Arc<Py<PyAny>> {
        &self.0.invoke
    }
}

impl PolicyHook for PyPolicyHook {
    fn check(
        &self,
        request: AccessRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<AccessDecision, HandlerError>> {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let answer = self.0.ask(request, host, "the policy hook");
        Box::pin(async move {
            AccessDecision::from_answer(
                answer.await?,
                r#"True, False or {"allow": ..., "reason": ...}"#,
            )
        })
    }
}

/// A resolver: `resolve(request)` gets `{tool, parameter, input, value, caller}` and returns
/// `{"status": "found", "value": ...}`, `{"status": "not_found"}` or
/// `{"status": "ambiguous", "candidates": [...]}`.
pub struct PyResolver(PyCallable);

impl PyResolver {
    /// The resolver over the package's wrapper of the app's callable.
    pub fn new(invoke: Py<PyAny>, is_async: bool) -> Self {
        PyResolver(PyCallable::new(invoke, is_async))
    }

    /// The callable it calls.
    pub fn callable(&self) -> &Arc<Py<PyAny>> {
        &self.0.invoke
    }
}

/// Reads what a resolver returned.
pub fn resolution(value: Value) -> Result<Resolution, HandlerError> {
    serde_json::from_value(value).map_err(|e| {
        HandlerError::unexpected(format!(
            "a resolver returned an invalid resolution ({e}); return {{\"status\": \"found\", \"value\": ...}}, {{\"status\": \"not_found\"}} or {{\"status\": \"ambiguous\", \"candidates\": [...]}}"
        ))
    })
}

impl Resolver for PyResolver {
    fn resolve(
        &self,
        request: ResolveRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<Resolution, HandlerError>> {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let answer = self.0.ask(request, host, "a resolver");
        Box::pin(async move { resolution(answer.await?) })
    }
}

/// The approval predicate: `predicate(query)` gets `{tool, arguments, caller, risk}` and
/// returns whether the call needs a human decision. Anything but a bool, or an exception,
/// fails closed: the call needs approval.
pub struct PyApprovalPredicate {
    invoke: Arc<Py<PyAny>>,
    kind: Kind,
}

impl PyApprovalPredicate {
    /// The predicate over the app's callable.
    pub fn new(invoke: Py<PyAny>, is_async: bool) -> Self {
        PyApprovalPredicate {
            invoke: Arc::new(invoke),
            kind: if is_async { Kind::Async } else { Kind::Sync },
        }
    }

    /// The callable it calls.
    pub fn callable(&self) -> &Arc<Py<PyAny>> {
        &self.invoke
    }
}

impl ApprovalPredicate for PyApprovalPredicate {
    fn requires_approval(
        &self,
        query: ApprovalQuery,
        host: Option<HostData>,
    ) -> BoxFuture<Result<bool, String>> {
        let request = json!({
            "tool": query.tool,
            "arguments": query.arguments,
            "caller": *query.caller,
            "risk": query.risk,
        });
        let answer = call_python(
            &self.invoke,
            self.kind,
            host,
            Cow::Owned(request),
            Context::Absent,
            "the approval predicate",
        );
        Box::pin(async move {
            match answer.await {
                Ok(Value::Bool(needed)) => Ok(needed),
                Ok(other) => Err(format!("it returned {other}; return True or False")),
                Err(HandlerError::Tool(e)) => Err(e.message),
                Err(HandlerError::Needs(fields)) => Err(format!("it raised Needs({fields:?})")),
                Err(HandlerError::Accepted { job }) => {
                    Err(format!("it answered Accepted({job:?})"))
                }
                Err(HandlerError::Unexpected { detail }) => Err(detail),
            }
        })
    }
}

/// The auth hook of a server (the MCP server, the approval inbox): `auth(request)` gets `{method, path, headers}` (header names
/// lowercased) and returns the caller (a dict or a `Caller`); raising refuses the request,
/// the exception's message going back with the 401.
pub struct PyHttpAuth(PyCallable);

impl PyHttpAuth {
    /// The hook over the package's wrapper of the app's callable.
    pub fn new(invoke: Py<PyAny>, is_async: bool) -> Self {
        PyHttpAuth(PyCallable::new(invoke, is_async))
    }
}

impl HttpAuth for PyHttpAuth {
    fn authenticate(
        &self,
        request: HttpRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<Caller, String>> {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let answer = self.0.ask(request, host, "the auth hook");
        Box::pin(async move {
            match answer.await {
                Ok(value) => serde_json::from_value(value)
                    .map_err(|e| format!("the auth hook returned no caller: {e}")),
                Err(HandlerError::Tool(e)) => Err(e.message),
                Err(HandlerError::Needs(_) | HandlerError::Accepted { .. }) => {
                    Err("refused".into())
                }
                Err(HandlerError::Unexpected { detail }) => {
                    let last = detail
                        .trim()
                        .lines()
                        .last()
                        .unwrap_or("refused")
                        .to_string();
                    Err(last)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolutions_read_from_values() {
        assert_eq!(
            resolution(json!({"status": "found", "value": "u1"})).unwrap(),
            Resolution::Found { value: json!("u1") }
        );
        assert!(resolution(json!("u1")).is_err());
    }
}
