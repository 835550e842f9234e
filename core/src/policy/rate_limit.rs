//! Rate limits as a tool's policy declares them; `guard/rate_limit.rs` enforces them.

use crate::caller::Caller;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Whose calls share one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateScope {
    /// Each principal (within its tenant) has its own budget. Calls without a principal share
    /// the anonymous budget of their tenant.
    #[default]
    Principal,
    /// Everyone in a tenant shares one budget.
    Tenant,
    /// Everyone shares one budget.
    Global,
}

/// One rate limit of a tool: `max` calls per `per_ms` milliseconds, bursts up to `burst`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Calls allowed per period, on average.
    pub max: u32,
    /// The period, in milliseconds.
    pub per_ms: u64,
    /// Calls allowed at once after a quiet spell; defaults to `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Whose calls share the budget.
    #[serde(default)]
    pub scope: RateScope,
}

impl RateLimit {
    /// `max` calls per `per`, per principal, bursts up to `max`.
    pub fn per_principal(max: u32, per: Duration) -> Self {
        RateLimit {
            max,
            per_ms: per.as_millis() as u64,
            burst: None,
            scope: RateScope::Principal,
        }
    }

    /// Checks the numbers at registration.
    pub fn check(&self) -> Result<(), String> {
        if self.max == 0 || self.per_ms == 0 || self.burst == Some(0) {
            return Err(format!(
                "rate limit {self:?}: max, per_ms and burst must be at least 1"
            ));
        }
        Ok(())
    }

    /// The budget key of a caller under this limit's scope.
    pub fn key(&self, caller: &Caller) -> String {
        let tenant = caller.tenant.as_deref().unwrap_or("");
        match self.scope {
            // A unit separator keeps `("a/b", "c")` and `("a", "b/c")` apart.
            RateScope::Principal => {
                // Pushed into one allocation: `format!` grew its buffer twice, every call.
                let principal = caller.principal.as_deref().unwrap_or("");
                let mut key = String::with_capacity(tenant.len() + 1 + principal.len());
                key.push_str(tenant);
                key.push('\u{1f}');
                key.push_str(principal);
                key
            }
            RateScope::Tenant => tenant.to_string(),
            RateScope::Global => String::new(),
        }
    }
}
