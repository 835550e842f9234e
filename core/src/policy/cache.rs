//! A tool's result cache as its policy declares it; `guard/cache.rs` keeps the results.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Whose calls may share cached results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheScope {
    /// Only the same principal of the same tenant. Calls without a principal are not cached.
    #[default]
    Principal,
    /// Everyone in the same tenant. Calls without a tenant are not cached.
    Tenant,
    /// Everyone: for tools whose result does not depend on who asks (public data).
    Global,
}

/// A tool's cache policy (typically one to five minutes for lookups).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePolicy {
    /// How long a result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Whose calls share results.
    #[serde(default)]
    pub scope: CacheScope,
}

impl CachePolicy {
    /// A per-principal cache with this time to live.
    pub fn ttl(ttl: Duration) -> Self {
        CachePolicy {
            ttl_ms: ttl.as_millis() as u64,
            scope: CacheScope::Principal,
        }
    }
}
