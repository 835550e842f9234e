//! Who a batch runs for. Handlers receive it; the model never sees it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The caller of a batch: principal, tenant, roles, scopes, free-form attributes and session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Caller {
    /// Who is acting (a user id, a service account).
    pub principal: Option<String>,
    /// The organisation or workspace the principal acts in.
    pub tenant: Option<String>,
    /// Roles the principal holds.
    pub roles: Vec<String>,
    /// OAuth-style scopes granted to this caller.
    pub scopes: Vec<String>,
    /// Anything else the app wants handlers and policies to see (department ids, ...).
    pub attributes: Map<String, Value>,
    /// The conversation or session id.
    pub session: Option<String>,
}

impl Caller {
    /// A caller for `principal` with nothing else set.
    pub fn principal(principal: impl Into<String>) -> Self {
        Caller {
            principal: Some(principal.into()),
            ..Default::default()
        }
    }
}
