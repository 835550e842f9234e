//! Learned approval preferences: "always allow this tool for me", optionally
//! only for some argument values. A matching preference approves a call without asking;
//! the call's result names the preference, so the audit says why. Revocable at any time.

use super::store::{Expect, Namespace, StateStore, StoreError, get_as, now_ms, put_as};
use crate::caller::Caller;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What an approver asks to remember with an approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Remember {
    /// Argument names whose values (as in the approved call) later calls must repeat to be
    /// allowed. Empty: every later call of the tool is allowed.
    pub scope: Vec<String>,
}

/// A standing "always allow" for one principal and tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preference {
    /// Its id, for revoking.
    pub id: String,
    /// The principal it allows for.
    pub principal: String,
    /// Their tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The tool.
    pub tool: String,
    /// Argument values a call must carry (top-level fields); empty allows every call.
    pub values: Map<String, Value>,
    /// When it was made, ms since the epoch.
    pub created_at_ms: u64,
}

/// Escapes `/` and `%` so a key segment cannot reach into the next one.
fn segment(s: Option<&str>) -> String {
    s.unwrap_or("").replace('%', "%25").replace('/', "%2F")
}

fn prefix(caller: &Caller, tool: Option<&str>) -> String {
    let mut p = format!(
        "{}/{}/",
        segment(caller.tenant.as_deref()),
        segment(caller.principal.as_deref())
    );
    if let Some(t) = tool {
        p.push_str(&segment(Some(t)));
        p.push('/');
    }
    p
}

impl Preference {
    /// Whom it allows for: the caller [`revoke`] takes to revoke it.
    pub fn owner(&self) -> Caller {
        Caller {
            principal: Some(self.principal.clone()),
            tenant: self.tenant.clone(),
            ..Caller::default()
        }
    }

    /// Whether a call with `arguments` is covered.
    pub fn covers(&self, arguments: &Value) -> bool {
        self.values.iter().all(|(k, v)| arguments.get(k) == Some(v))
    }

    /// Stores a preference for `caller` on `tool`, pinned to the `remember.scope` values of
    /// `arguments`.
    pub async fn create(
        store: &dyn StateStore,
        caller: &Caller,
        tool: &str,
        arguments: &Value,
        remember: Remember,
    ) -> Result<Preference, StoreError> {
        let values = remember
            .scope
            .iter()
            .map(|k| (k.clone(), arguments.get(k).cloned().unwrap_or(Value::Null)))
            .collect();
        Self::store(store, caller, tool, values).await
    }

    async fn store(
        store: &dyn StateStore,
        caller: &Caller,
        tool: &str,
        values: Map<String, Value>,
    ) -> Result<Preference, StoreError> {
        let principal = caller
            .principal
            .clone()
            .ok_or_else(|| StoreError("a preference needs a principal".into()))?;
        let pref = Preference {
            id: format!("pref_{}", crate::random_id::uuid().simple()),
            principal,
            tenant: caller.tenant.clone(),
            tool: tool.to_string(),
            values,
            created_at_ms: now_ms(),
        };
        let key = format!("{}{}", prefix(caller, Some(tool)), pref.id);
        put_as(
            store,
            Namespace::Preference,
            &key,
            Expect::Absent,
            &pref,
            None,
        )
        .await?
        .ok_or_else(|| StoreError("a fresh preference id was already taken".into()))?;
        Ok(pref)
    }

    /// The first of `caller`'s preferences on `tool` that covers `arguments`.
    pub async fn find(
        store: &dyn StateStore,
        caller: &Caller,
        tool: &str,
        arguments: &Value,
    ) -> Result<Option<Preference>, StoreError> {
        if caller.principal.is_none() {
            return Ok(None);
        }
        let rows = store
            .list(Namespace::Preference, &prefix(caller, Some(tool)), 1000)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_value::<Preference>(v.value).ok())
            .find(|p| p.covers(arguments)))
    }
}

fn refusal(e: StoreError) -> ToolError {
    e.refusal()
}

/// Lets `caller` run `tool` without approval from now on, for calls whose top-level
/// arguments equal `values` (empty: every call).
pub async fn allow_always(
    store: &dyn StateStore,
    caller: &Caller,
    tool: &str,
    values: Map<String, Value>,
) -> Result<Preference, ToolError> {
    if caller.principal.is_none() {
        return Err(ToolError::new(
            ErrorCode::PermissionDenied,
            "a preference belongs to a principal; the caller has none",
        ));
    }
    Preference::store(store, caller, tool, values)
        .await
        .map_err(refusal)
}

/// `caller`'s preferences, every tool.
pub async fn list(store: &dyn StateStore, caller: &Caller) -> Result<Vec<Preference>, ToolError> {
    under(store, &prefix(caller, None)).await
}

/// Every principal's preferences (of `tenant` when given), for an operator to review.
pub async fn list_every(
    store: &dyn StateStore,
    tenant: Option<&str>,
) -> Result<Vec<Preference>, ToolError> {
    let prefix = tenant.map_or(String::new(), |t| format!("{}/", segment(Some(t))));
    under(store, &prefix).await
}

/// The preferences whose keys start with `prefix`.
async fn under(store: &dyn StateStore, prefix: &str) -> Result<Vec<Preference>, ToolError> {
    let rows = store
        .list(Namespace::Preference, prefix, usize::MAX)
        .await
        .map_err(refusal)?;
    Ok(rows
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_value(v.value).ok())
        .collect())
}

/// Revokes one of `caller`'s preferences; `false` when it has none with that id.
pub async fn revoke(store: &dyn StateStore, caller: &Caller, id: &str) -> Result<bool, ToolError> {
    let rows = store
        .list(Namespace::Preference, &prefix(caller, None), usize::MAX)
        .await
        .map_err(refusal)?;
    for (key, v) in rows {
        if v.value.get("id").and_then(Value::as_str) == Some(id) {
            let current = get_as::<Preference>(store, Namespace::Preference, &key)
                .await
                .map_err(refusal)?;
            if let Some((_, version)) = current {
                return store
                    .delete(Namespace::Preference, &key, version)
                    .await
                    .map_err(refusal);
            }
        }
    }
    Ok(false)
}
