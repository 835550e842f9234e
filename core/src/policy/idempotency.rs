//! Idempotency as a tool's policy declares it; `durable/idempotency.rs` keeps the records.

use super::Policy;
use serde::{Deserialize, Serialize};

/// What identifies duplicate calls of a tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdempotencyMode {
    /// Every call runs.
    #[default]
    Off,
    /// Calls with the same canonical arguments from the same caller (principal and tenant)
    /// are one call.
    Arguments,
    /// Calls with the same app-given key (`Call::idempotency_key`) from the same caller are
    /// one call; the key with other arguments is a `conflict`. A call without a key is
    /// refused, so a forgotten key never runs a payment twice.
    Key,
}

/// Per-tool idempotency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdempotencyPolicy {
    /// What makes two calls the same.
    pub mode: IdempotencyMode,
    /// How long a finished call's envelope is replayed, in ms (default 24 h).
    pub ttl_ms: u64,
    /// How long a call may stay in flight before a duplicate may take over, in ms. Default:
    /// the tool's timeout times its attempts plus backoff and 5 s, or 5 minutes without one.
    pub lease_ms: Option<u64>,
}

/// Default of [`IdempotencyPolicy::ttl_ms`]: 24 hours.
pub const DEFAULT_IDEMPOTENCY_TTL_MS: u64 = 24 * 60 * 60 * 1000;

impl Default for IdempotencyPolicy {
    fn default() -> Self {
        IdempotencyPolicy {
            mode: IdempotencyMode::Off,
            ttl_ms: DEFAULT_IDEMPOTENCY_TTL_MS,
            lease_ms: None,
        }
    }
}

/// The lease a call holds while in flight.
pub fn lease_ms(policy: &Policy) -> u64 {
    if let Some(ms) = policy.idempotency.lease_ms {
        return ms;
    }
    match policy.timeout_ms {
        Some(t) => {
            let attempts = u64::from(policy.retry.attempts.max(1));
            let backoff = policy.retry.max_backoff_ms.saturating_mul(attempts - 1);
            t.saturating_mul(attempts)
                .saturating_add(backoff)
                .saturating_add(5_000)
        }
        None => 5 * 60 * 1000,
    }
}
