//! Step 5 of a call's path: may this caller use this tool?
//!
//! Two halves. The static half needs no arguments: the enabled flags (system → tenant →
//! department → user), the allowed roles and the required scopes. It decides what a caller
//! can see ([`crate::Engine::specs_for`]) and refuses a call before any app code (a resolver,
//! the policy hook, the handler) runs for it. The dynamic half is the app's [`PolicyHook`],
//! which sees the final arguments (hidden ones filled, references resolved) and can check
//! what only the app knows: department membership, an active connection.

use crate::caller::Caller;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::handler::{BoxFuture, HandlerError, HostData};
use crate::policy::Risk;
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

pub use crate::policy::Effect;

/// The caller attribute holding the caller's department ids: a string or an array of strings.
pub const DEPARTMENTS_ATTRIBUTE: &str = "departments";

/// The key of a settings level that applies to every tool; a tool's own entry wins over it.
pub const ALL_TOOLS: &str = "*";

/// Enabled flags per tool at four levels (system → tenant → department → user). Each level maps tool names
/// (or [`ALL_TOOLS`]) to `true`/`false`; a level without an entry says nothing.
///
/// The first level, from the top, that says something decides: system, then the caller's
/// tenant, then the caller's departments, then the caller's own (principal) settings; when
/// none does, the tool's policy `enabled` flag decides. So an administrator's system-wide
/// `false` cannot be undone below, and a tenant may switch off what the system leaves open.
/// Within the department level, one department saying `false` outweighs another saying `true`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// System-wide flags (admins only; affect everyone).
    pub system: BTreeMap<String, bool>,
    /// Per tenant (organisation) id.
    pub tenants: BTreeMap<String, BTreeMap<String, bool>>,
    /// Per department id (see [`DEPARTMENTS_ATTRIBUTE`]).
    pub departments: BTreeMap<String, BTreeMap<String, bool>>,
    /// Per principal (user preferences).
    pub users: BTreeMap<String, BTreeMap<String, bool>>,
}

/// Which level of [`Settings`] switched a tool off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The system settings.
    System,
    /// The caller's tenant.
    Tenant,
    /// One of the caller's departments.
    Department,
    /// The caller's own settings.
    User,
    /// The tool's policy (`enabled: false`).
    Tool,
}

impl Level {
    fn phrase(self) -> &'static str {
        match self {
            Level::System => "by the system settings",
            Level::Tenant => "for your organisation",
            Level::Department => "for your department",
            Level::User => "in your settings",
            Level::Tool => "by its policy",
        }
    }

    /// The wire spelling, e.g. `"tenant"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::System => "system",
            Level::Tenant => "tenant",
            Level::Department => "department",
            Level::User => "user",
            Level::Tool => "tool",
        }
    }
}

fn flag(level: &BTreeMap<String, bool>, tool: &str) -> Option<bool> {
    level.get(tool).or_else(|| level.get(ALL_TOOLS)).copied()
}

/// The department ids the caller carries in [`DEPARTMENTS_ATTRIBUTE`].
pub fn departments(caller: &Caller) -> Vec<&str> {
    match caller.attributes.get(DEPARTMENTS_ATTRIBUTE) {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

impl Settings {
    /// Whether `tool` is enabled for `caller`; `Err` names the level that switched it off.
    pub fn enabled(&self, tool: &str, default: bool, caller: &Caller) -> Result<(), Level> {
        let levels = [
            (Level::System, flag(&self.system, tool)),
            (
                Level::Tenant,
                caller
                    .tenant
                    .as_ref()
                    .and_then(|t| self.tenants.get(t))
                    .and_then(|l| flag(l, tool)),
            ),
            (Level::Department, self.department_flag(tool, caller)),
            (
                Level::User,
                caller
                    .principal
                    .as_ref()
                    .and_then(|p| self.users.get(p))
                    .and_then(|l| flag(l, tool)),
            ),
            (Level::Tool, Some(default)),
        ];
        for (level, said) in levels {
            match said {
                Some(true) => return Ok(()),
                Some(false) => return Err(level),
                None => {}
            }
        }
        Ok(())
    }

    fn department_flag(&self, tool: &str, caller: &Caller) -> Option<bool> {
        if self.departments.is_empty() {
            return None;
        }
        let mut said = None;
        for d in departments(caller) {
            match self.departments.get(d).and_then(|l| flag(l, tool)) {
                Some(false) => return Some(false),
                Some(true) => said = Some(true),
                None => {}
            }
        }
        said
    }
}

/// Whether a caller's scopes satisfy one required scope. A requirement may list
/// alternatives separated by `|`. The first is a whole scope name; each later one is a whole
/// name when it holds a `.`, else it replaces the first one's last segment:
/// `calendar.events.write.confirm|auto` accepts `calendar.events.write.confirm` or
/// `calendar.events.write.auto`, never a bare `auto`.
fn scope_satisfied(required: &str, granted: &[String]) -> bool {
    alternatives(required).any(|alt| granted.contains(&alt))
}

/// The whole scope names a requirement accepts.
pub fn alternatives(required: &str) -> impl Iterator<Item = String> + '_ {
    let mut parts = required.split('|').map(str::trim);
    let first = parts.next().unwrap_or_default();
    let stem = first.rsplit_once('.').map(|(stem, _)| stem);
    std::iter::once(first.to_string()).chain(parts.map(move |alt| match stem {
        Some(stem) if !alt.contains('.') => format!("{stem}.{alt}"),
        _ => alt.to_string(),
    }))
}

/// The refusal of a model's call to an internal tool (`Policy::internal`): only other tools
/// call it.
pub fn internal(tool: &str) -> ToolError {
    ToolError::new(
        ErrorCode::PermissionDenied,
        format!("the tool {tool:?} is run by other tools only; do not call it"),
    )
    .with("reason", "internal")
}

/// The static half of step 5: enabled flags, roles, scopes, in that order. Needs no
/// arguments, so it runs before any app code does for the call.
pub fn check(spec: &ToolSpec, caller: &Caller, settings: &Settings) -> Result<(), ToolError> {
    let policy = &spec.policy;
    if let Err(level) = settings.enabled(&spec.name, policy.enabled, caller) {
        return Err(ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "the tool {:?} is switched off {}; do not call it again in this conversation",
                spec.name,
                level.phrase()
            ),
        )
        .with("disabled_by", level.as_str()));
    }
    if !policy.roles.is_empty() && !policy.roles.iter().any(|r| caller.roles.contains(r)) {
        return Err(ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "the user may not use the tool {:?}: it needs one of the roles {}",
                spec.name,
                policy.roles.join(", ")
            ),
        ));
    }
    let missing: Vec<&String> = policy
        .scopes
        .iter()
        .filter(|s| !scope_satisfied(s, &caller.scopes))
        .collect();
    if !missing.is_empty() {
        let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Err(ToolError::new(
            ErrorCode::ScopesMissing,
            format!(
                "the tool {:?} needs the scopes {}, which this session was not granted; \
                 ask the user to grant them",
                spec.name,
                list.join(", ")
            ),
        )
        .with("missing_scopes", list));
    }
    Ok(())
}

/// What the policy hook is asked about: one call, its final arguments and its caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessRequest {
    /// The tool's registered name.
    pub tool: Arc<str>,
    /// The call's id in its batch.
    pub call_id: Arc<str>,
    /// The final arguments: validated, hidden ones filled, references resolved.
    pub arguments: Value,
    /// Who the batch runs for (shared with the batch: asking the hook copies nothing).
    pub caller: Arc<Caller>,
    /// The tool's risk.
    pub risk: Risk,
    /// The tool's effect.
    pub effect: Effect,
}

/// The policy hook's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessDecision {
    /// Whether the call may go on.
    pub allow: bool,
    /// Why not, in words the model can pass on to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AccessDecision {
    /// Lets the call go on.
    pub fn allow() -> Self {
        AccessDecision {
            allow: true,
            reason: None,
        }
    }

    /// Refuses the call with `permission_denied` and this reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        AccessDecision {
            allow: false,
            reason: Some(reason.into()),
        }
    }

    /// A hook's answer as JSON, the way bindings receive it from a foreign function: `true`
    /// (allow), `false` (deny, with a generic reason) or `{"allow": bool, "reason"?: string}`.
    /// Anything else is the hook's mistake and fails closed; `expected` spells the accepted
    /// answers in the hook's own language, for the error's detail.
    pub fn from_answer(answer: Value, expected: &str) -> Result<Self, HandlerError> {
        match answer {
            Value::Bool(true) => Ok(AccessDecision::allow()),
            Value::Bool(false) => Ok(AccessDecision::deny(
                "the app's access policy refused this call",
            )),
            v @ Value::Object(_) => serde_json::from_value(v).map_err(|e| {
                HandlerError::unexpected(format!(
                    "the policy hook returned an invalid decision: {e}"
                ))
            }),
            other => Err(HandlerError::unexpected(format!(
                "the policy hook returned {other}; return {expected}"
            ))),
        }
    }
}

/// The app's own access check, in its own language: the last word of step 5. Bindings
/// implement it over a foreign callable. An `Err` fails closed: the call is refused with
/// `internal_error` and the detail goes to the result and the audit record.
/// `Any`, so that a binding finds its own among an engine's parts
/// ([`Engine::visit_sole_parts`](crate::Engine::visit_sole_parts)).
pub trait PolicyHook: Any + Send + Sync {
    /// Decides on one call. `host` is what the batch's starter attached
    /// ([`BatchOptions::host`](crate::BatchOptions)): bindings whose callables must run on the
    /// caller's event loop find it there, as handlers do in [`ToolContext::host`](crate::ToolContext).
    fn check(
        &self,
        request: AccessRequest,
        host: Option<HostData>,
    ) -> BoxFuture<Result<AccessDecision, HandlerError>>;
}

struct FnHook<F>(F);

impl<F, Fut> PolicyHook for FnHook<F>
where
    F: Fn(AccessRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AccessDecision, HandlerError>> + Send + 'static,
{
    fn check(
        &self,
        request: AccessRequest,
        _host: Option<HostData>,
    ) -> BoxFuture<Result<AccessDecision, HandlerError>> {
        Box::pin((self.0)(request))
    }
}

/// A policy hook from an async closure.
pub fn policy_hook_fn<F, Fut>(f: F) -> Arc<dyn PolicyHook>
where
    F: Fn(AccessRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AccessDecision, HandlerError>> + Send + 'static,
{
    Arc::new(FnHook(f))
}

/// Turns the hook's refusal into the envelope's error.
pub fn denial(tool: &str, decision: AccessDecision) -> ToolError {
    let reason = decision
        .reason
        .unwrap_or_else(|| format!("the user may not use the tool {tool:?} for this request"));
    ToolError::new(ErrorCode::PermissionDenied, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller() -> Caller {
        let mut c = Caller::principal("u1");
        c.tenant = Some("acme".into());
        c.attributes
            .insert(DEPARTMENTS_ATTRIBUTE.into(), json!(["it", "sales"]));
        c
    }

    fn settings(v: Value) -> Settings {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_first_level_that_speaks_decides() {
        let c = caller();
        assert_eq!(Settings::default().enabled("web", true, &c), Ok(()));
        assert_eq!(
            Settings::default().enabled("web", false, &c),
            Err(Level::Tool)
        );
        let s = settings(json!({"system": {"web": false}, "users": {"u1": {"web": true}}}));
        assert_eq!(s.enabled("web", true, &c), Err(Level::System));
        let s = settings(json!({"system": {"web": true}, "tenants": {"acme": {"web": false}}}));
        assert_eq!(
            s.enabled("web", true, &c),
            Ok(()),
            "system overrides tenant"
        );
        let s =
            settings(json!({"tenants": {"acme": {"*": false}}, "users": {"u1": {"web": true}}}));
        assert_eq!(s.enabled("web", true, &c), Err(Level::Tenant));
        let s = settings(json!({"departments": {"it": {"web": true}, "sales": {"web": false}}}));
        assert_eq!(s.enabled("web", true, &c), Err(Level::Department));
        let s = settings(json!({"users": {"u1": {"web": false}}}));
        assert_eq!(s.enabled("web", true, &c), Err(Level::User));
        assert_eq!(s.enabled("other", true, &c), Ok(()));
        let s = settings(json!({"tenants": {"acme": {"web": true}}}));
        assert_eq!(s.enabled("web", false, &c), Ok(()), "a level may switch on");
    }

    #[test]
    fn scopes_name_what_is_missing_and_accept_alternatives() {
        let mut spec = ToolSpec::new("propose", "", json!({"type": "object"}));
        spec.policy.scopes = vec![
            "calendar.availability.read".into(),
            "calendar.events.propose".into(),
            "w.confirm|w.auto".into(),
        ];
        let mut c = caller();
        c.scopes = vec!["calendar.availability.read".into(), "w.auto".into()];
        let err = check(&spec, &c, &Settings::default()).unwrap_err();
        assert_eq!(err.code, ErrorCode::ScopesMissing);
        assert_eq!(
            err.details["missing_scopes"],
            json!(["calendar.events.propose"])
        );
        c.scopes.push("calendar.events.propose".into());
        assert!(check(&spec, &c, &Settings::default()).is_ok());
    }

    #[test]
    fn a_short_alternative_replaces_the_last_segment_and_never_stands_alone() {
        let alts: Vec<String> = alternatives("calendar.events.write.confirm|auto").collect();
        assert_eq!(
            alts,
            [
                "calendar.events.write.confirm",
                "calendar.events.write.auto"
            ]
        );
        let alts: Vec<String> = alternatives("a.b|c.d|e").collect();
        assert_eq!(alts, ["a.b", "c.d", "a.e"]);
        assert_eq!(
            alternatives("admin|owner").collect::<Vec<_>>(),
            ["admin", "owner"]
        );
        let mut spec = ToolSpec::new("book", "", json!({"type": "object"}));
        spec.policy.scopes = vec!["calendar.events.write.confirm|auto".into()];
        let mut c = caller();
        for (granted, ok) in [
            ("auto", false),
            ("calendar.events.write.auto", true),
            ("calendar.events.write.confirm", true),
            ("confirm", false),
        ] {
            c.scopes = vec![granted.into()];
            assert_eq!(
                check(&spec, &c, &Settings::default()).is_ok(),
                ok,
                "{granted}"
            );
        }
    }

    #[test]
    fn roles_are_any_of() {
        let mut spec = ToolSpec::new("send", "", json!({"type": "object"}));
        spec.policy.roles = vec!["admin".into(), "user".into()];
        let mut c = caller();
        assert_eq!(
            check(&spec, &c, &Settings::default()).unwrap_err().code,
            ErrorCode::PermissionDenied
        );
        c.roles = vec!["user".into()];
        assert!(check(&spec, &c, &Settings::default()).is_ok());
    }

    #[test]
    fn hook_answers_read_from_json() {
        assert!(AccessDecision::from_answer(json!(true), "x").unwrap().allow);
        assert!(
            !AccessDecision::from_answer(json!(false), "x")
                .unwrap()
                .allow
        );
        let d = AccessDecision::from_answer(json!({"allow": false, "reason": "no"}), "x").unwrap();
        assert_eq!(d.reason.as_deref(), Some("no"));
        let forgot = AccessDecision::from_answer(Value::Null, "true or false").unwrap_err();
        assert!(
            matches!(forgot, HandlerError::Unexpected { ref detail } if detail.ends_with("return true or false")),
            "forgetting to return fails closed: {forgot:?}"
        );
        assert!(AccessDecision::from_answer(json!({"allowed": true}), "x").is_err());
    }
}
