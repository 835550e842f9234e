//! Step 3 of a call's path: hidden arguments and resolvers.
//!
//! A tool declares parameters the model never fills: from the caller's context (principal,
//! tenant, session, an attribute) or by a [`Resolver`] that turns a human reference the model
//! passed (a name, an email) into an id ("do not accept IDs from the LLM"). They
//! vanish from the model-facing schema ([`model_facing`]); a value the model supplies for one
//! anyway is dropped, never used, and noted ([`HiddenNote`]) for the audit record.

use crate::caller::Caller;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::handler::{BoxFuture, HandlerError, HostData, UNEXPECTED_MESSAGE};
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

pub use crate::policy::hidden::HiddenParam;

pub use crate::call::HiddenNote;

/// What a resolver concluded about one human reference. In JSON:
/// `{"status": "found", "value": "u_42"}`, `{"status": "not_found"}`,
/// `{"status": "ambiguous", "candidates": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum Resolution {
    /// Exactly one match: the value to fill in.
    Found {
        /// The resolved value (an id, usually).
        value: Value,
    },
    /// No match.
    NotFound,
    /// Several matches; the model can show them and ask the user which one.
    Ambiguous {
        /// What matched, in a form the model can show (names, emails; not secrets).
        candidates: Vec<Value>,
    },
}

/// What a resolver is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveRequest {
    /// The tool being called.
    pub tool: String,
    /// The hidden parameter to fill.
    pub parameter: String,
    /// The model-facing argument the reference came from.
    pub input: String,
    /// The human reference the model passed.
    pub value: Value,
    /// Who the batch runs for; resolve within what this caller may see.
    pub caller: Caller,
}

/// Turns a human reference into a value the server trusts. App code in any language;
/// bindings implement it over a foreign callable. An `Err` with a tool error reaches the
/// model as is; anything unexpected becomes `internal_error`.
/// `Any`, so that a binding finds its own among an engine's parts
/// ([`Engine::visit_sole_parts`](crate::Engine::visit_sole_parts)).
pub trait Resolver: Any + Send + Sync {
    /// Resolves one reference. `host` is the binding's host, as for
    /// [`PolicyHook::check`](crate::PolicyHook::check).
    fn resolve(
        &self,
        request: ResolveRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<Resolution, HandlerError>>;
}

struct FnResolver<F>(F);

impl<F, Fut> Resolver for FnResolver<F>
where
    F: Fn(ResolveRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resolution, HandlerError>> + Send + 'static,
{
    fn resolve(
        &self,
        request: ResolveRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<Resolution, HandlerError>> {
        Box::pin((self.0)(request))
    }
}

/// A resolver from an async closure.
pub fn resolver_fn<F, Fut>(f: F) -> Arc<dyn Resolver>
where
    F: Fn(ResolveRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resolution, HandlerError>> + Send + 'static,
{
    Arc::new(FnResolver(f))
}

/// Resolvers by name.
pub type Resolvers = HashMap<String, Arc<dyn Resolver>>;

/// Why step 3 refused a call: the envelope, and a detail for the app when app code failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// What the model sees.
    pub envelope: Envelope,
    /// What only the app sees (an unexpected resolver failure, a missing resolver).
    pub detail: Option<String>,
}

impl From<Envelope> for Refusal {
    fn from(envelope: Envelope) -> Self {
        Refusal {
            envelope,
            detail: None,
        }
    }
}

fn required(spec: &ToolSpec) -> Vec<&str> {
    spec.input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The spec as a model should see it: hidden parameters removed from the input schema's
/// top-level `properties` and `required`.
pub fn model_facing(spec: &ToolSpec) -> ToolSpec {
    let mut out = spec.clone();
    if spec.policy.hidden.is_empty() {
        return out;
    }
    if let Some(schema) = out.input_schema.as_object_mut() {
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            props.retain(|k, _| !spec.policy.hidden.contains_key(k));
        }
        if let Some(Value::Array(req)) = schema.get_mut("required") {
            req.retain(|r| {
                r.as_str()
                    .is_none_or(|r| !spec.policy.hidden.contains_key(r))
            });
        }
    }
    out
}

fn from_context(param: &HiddenParam, caller: &Caller) -> Option<Value> {
    match param {
        HiddenParam::Principal => caller.principal.clone().map(Value::String),
        HiddenParam::Tenant => caller.tenant.clone().map(Value::String),
        HiddenParam::Session => caller.session.clone().map(Value::String),
        HiddenParam::Attribute { name } => caller.attributes.get(name).cloned(),
        HiddenParam::Resolver { .. } => None,
    }
}

/// Step 3: drops what the model supplied for hidden parameters, fills them from the caller,
/// runs the resolvers (concurrently). Returns one note per hidden parameter, in name order.
///
/// Refusals: a required parameter the context cannot fill → `permission_denied` (the model
/// cannot fix it, so it must not be asked to); a resolver input the model left out while the
/// hidden parameter is required → `needs` on that input; `not_found` and `ambiguous` (with
/// `candidates`) from the resolver, naming the argument the model should change.
pub async fn apply(
    spec: &ToolSpec,
    call_id: &str,
    caller: &Caller,
    resolvers: &Resolvers,
    arguments: &mut Value,
    host: Option<HostData>,
) -> Result<Vec<HiddenNote>, Refusal> {
    let hidden = &spec.policy.hidden;
    if hidden.is_empty() {
        return Ok(Vec::new());
    }
    if arguments.is_null() {
        *arguments = Value::Object(Map::new());
    }
    let Value::Object(args) = arguments else {
        // Not an object: validation refuses it, and there is nothing to drop or fill.
        return Ok(Vec::new());
    };
    let required = required(spec);
    let mut notes = Vec::with_capacity(hidden.len());
    let mut pending = Vec::new();
    for (name, param) in hidden {
        let supplied = args.remove(name);
        if supplied.is_some() {
            tracing::warn!(
                target: "tooljig::hidden",
                tool = %spec.name,
                call_id,
                parameter = %name,
                "the model supplied a hidden argument; it was dropped"
            );
        }
        let mut note = HiddenNote {
            parameter: name.clone(),
            source: param.source(),
            injected: false,
            supplied,
        };
        let is_required = required.contains(&name.as_str());
        match param {
            HiddenParam::Resolver { resolver, input } => match args.get(input) {
                Some(value) if !value.is_null() => {
                    let Some(r) = resolvers.get(resolver) else {
                        return Err(Refusal {
                            envelope: Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE),
                            detail: Some(format!(
                                "tool {:?}: no resolver named {resolver:?} is registered on the engine",
                                spec.name
                            )),
                        });
                    };
                    let request = ResolveRequest {
                        tool: spec.name.clone(),
                        parameter: name.clone(),
                        input: input.clone(),
                        value: value.clone(),
                        caller: caller.clone(),
                    };
                    pending.push((
                        notes.len(),
                        input.clone(),
                        value.clone(),
                        r.resolve(request, host.clone()),
                    ));
                }
                _ if is_required => return Err(Envelope::Needs(vec![input.clone()]).into()),
                _ => {}
            },
            _ => match from_context(param, caller) {
                Some(value) => {
                    args.insert(name.clone(), value);
                    note.injected = true;
                }
                None if is_required => {
                    return Err(Envelope::error(
                        ErrorCode::PermissionDenied,
                        format!(
                            "the tool {:?} needs the caller's {}, which this session does not carry",
                            spec.name,
                            param.source()
                        ),
                    )
                    .into());
                }
                None => {}
            },
        }
        notes.push(note);
    }
    if pending.is_empty() {
        return Ok(notes);
    }
    let (meta, futures): (Vec<_>, Vec<_>) = pending
        .into_iter()
        .map(|(i, input, value, f)| ((i, input, value), f))
        .unzip();
    let outcomes = futures::future::join_all(futures).await;
    for ((i, input, value), outcome) in meta.into_iter().zip(outcomes) {
        let not_resolved = |code, message: String| {
            ToolError::new(code, message)
                .with("argument", input.clone())
                .with("value", value.clone())
        };
        match outcome {
            Ok(Resolution::Found { value }) => {
                args.insert(notes[i].parameter.clone(), value);
                notes[i].injected = true;
            }
            Ok(Resolution::NotFound) => {
                return Err(Envelope::Error(not_resolved(
                    ErrorCode::NotFound,
                    format!(
                        "nothing matches {value} for {input:?}; check the spelling or ask the user"
                    ),
                ))
                .into());
            }
            Ok(Resolution::Ambiguous { candidates }) => {
                return Err(Envelope::Error(
                    not_resolved(
                        ErrorCode::Ambiguous,
                        format!(
                            "{value} matches {} candidates for {input:?}; ask the user which one and \
                             call again with a more precise {input:?}",
                            candidates.len()
                        ),
                    )
                    .with("candidates", candidates),
                )
                .into());
            }
            Err(HandlerError::Tool(e)) => {
                return Err(Envelope::Error(crate::output::bounded_error(e).0).into());
            }
            Err(HandlerError::Needs(fields)) => return Err(Envelope::Needs(fields).into()),
            Err(HandlerError::Unexpected { detail }) => {
                return Err(Refusal {
                    envelope: Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE),
                    detail: Some(format!("resolver for {input:?} failed: {detail}")),
                });
            }
            Err(HandlerError::Accepted { job }) => {
                return Err(Refusal {
                    envelope: Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE),
                    detail: Some(format!(
                        "resolver for {input:?} answered accepted({job:?}), which only a handler may"
                    )),
                });
            }
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> ToolSpec {
        let mut spec = ToolSpec::new(
            "schedule",
            "",
            json!({
                "type": "object",
                "properties": {
                    "counterpart": {"type": "string"},
                    "counterpart_id": {"type": "string"},
                    "user_id": {"type": "string"},
                    "dept": {"type": "string"}
                },
                "required": ["counterpart", "counterpart_id", "user_id"]
            }),
        );
        spec.policy.hidden = serde_json::from_value(json!({
            "user_id": {"from": "principal"},
            "dept": {"from": "attribute", "name": "department"},
            "counterpart_id": {"from": "resolver", "resolver": "contacts", "input": "counterpart"}
        }))
        .unwrap();
        spec
    }

    fn resolvers() -> Resolvers {
        let mut r = Resolvers::new();
        r.insert(
            "contacts".into(),
            resolver_fn(|req: ResolveRequest| async move {
                Ok(match req.value.as_str() {
                    Some("Aviad") => Resolution::Found {
                        value: json!("u_42"),
                    },
                    Some("Dana") => Resolution::Ambiguous {
                        candidates: vec![json!("Dana Levi"), json!("Dana Cohen")],
                    },
                    _ => Resolution::NotFound,
                })
            }),
        );
        r
    }

    #[test]
    fn hidden_parameters_leave_the_model_schema() {
        let m = model_facing(&spec());
        assert_eq!(
            m.input_schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            vec!["counterpart"]
        );
        assert_eq!(m.input_schema["required"], json!(["counterpart"]));
    }

    #[tokio::test]
    async fn drops_fills_and_resolves() {
        let caller = Caller::principal("me");
        let mut args = json!({"counterpart": "Aviad", "user_id": "admin", "counterpart_id": "u_1"});
        let notes = apply(&spec(), "c", &caller, &resolvers(), &mut args, None)
            .await
            .unwrap();
        assert_eq!(
            args,
            json!({"counterpart": "Aviad", "user_id": "me", "counterpart_id": "u_42"})
        );
        let by = |p: &str| notes.iter().find(|n| n.parameter == p).unwrap().clone();
        assert_eq!(by("user_id").supplied, Some(json!("admin")));
        assert_eq!(by("counterpart_id").supplied, Some(json!("u_1")));
        assert!(!by("dept").injected, "optional and absent from the context");
    }

    #[tokio::test]
    async fn resolver_outcomes_become_envelopes() {
        let caller = Caller::principal("me");
        let mut args = json!({"counterpart": "Dana"});
        let err = apply(&spec(), "c", &caller, &resolvers(), &mut args, None)
            .await
            .unwrap_err();
        let v = err.envelope.to_value();
        assert_eq!(v["error"]["code"], "ambiguous");
        assert_eq!(v["error"]["candidates"], json!(["Dana Levi", "Dana Cohen"]));
        assert_eq!(v["error"]["argument"], "counterpart");
        let mut args = json!({"counterpart": "Zed"});
        let err = apply(&spec(), "c", &caller, &resolvers(), &mut args, None)
            .await
            .unwrap_err();
        assert_eq!(err.envelope.code(), Some(ErrorCode::NotFound));
        let mut args = json!({});
        let err = apply(&spec(), "c", &caller, &resolvers(), &mut args, None)
            .await
            .unwrap_err();
        assert_eq!(err.envelope, Envelope::Needs(vec!["counterpart".into()]));
        let mut args = json!({"counterpart": "Aviad"});
        let err = apply(
            &spec(),
            "c",
            &Caller::default(),
            &resolvers(),
            &mut args,
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(err.envelope.code(), Some(ErrorCode::PermissionDenied));
        let mut args = json!({"counterpart": "Aviad"});
        let err = apply(&spec(), "c", &caller, &Resolvers::new(), &mut args, None)
            .await
            .unwrap_err();
        assert!(
            err.detail
                .unwrap()
                .contains("no resolver named \"contacts\"")
        );
    }
}
