//! Step 6 of a call's path: rate limits per tool, per principal (or tenant, or everyone).
//!
//! A call is charged once, for the execution that runs: [`charge`] is applied by the durable
//! guard (`durable/mod.rs`) after a replay or a cache hit could have answered (they are not
//! charged) and before the call runs, or before it waits for a human (the approved call
//! then runs on that charge, and is not charged again when it resumes).
//!
//! The limit is a GCRA (generic cell rate algorithm): `max` calls per `per_ms`, one cell
//! replenished every `per_ms / max`, with up to `burst` calls at once. The engine only talks
//! to the [`RateLimiter`] seam; [`InProcessLimiter`] implements it with the `governor` crate
//! (lock-free GCRA state per key), so a limit holds per process. A limiter shared by several
//! processes implements the same trait and is passed to
//! [`crate::Engine::with_rate_limiter`]: `RedisLimiter` (feature `redis`, `rate_limit_redis.rs`)
//! keeps the same GCRA in Redis.

use crate::call::CallResult;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::handler::BoxFuture;
use crate::job::Job;
use foldhash::HashMap;
use governor::clock::{Clock, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter as Gcra};
use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use crate::policy::rate_limit::{RateLimit, RateScope};

/// The GCRA quota of a limit: one cell every `per_ms / max`, bursts up to `burst`.
fn quota(limit: &RateLimit) -> Quota {
    let max = NonZeroU32::new(limit.max.max(1)).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(limit.burst.unwrap_or(limit.max).max(1)).unwrap_or(max);
    // GCRA keeps `cell * burst` in u64 nanoseconds (584 years): a longer window ("once,
    // ever") is clamped to what fits, which no process outlives.
    let longest = u128::from(u64::MAX / u64::from(burst.get()));
    let nanos =
        (Duration::from_millis(limit.per_ms).as_nanos() / u128::from(max.get())).clamp(1, longest);
    let cell = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
    Quota::with_period(cell)
        .unwrap_or_else(|| Quota::per_second(max))
        .allow_burst(burst)
}

/// One budget check: this tool, this key, this limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRequest {
    /// The tool.
    pub tool: Arc<str>,
    /// The budget key ([`RateLimit::key`]).
    pub key: String,
    /// The limit.
    pub limit: RateLimit,
}

/// The limiter's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateDecision {
    /// The call may go on; it used one cell of the budget.
    Allowed,
    /// Over budget: the earliest time a retry can succeed.
    Limited {
        /// Time until the next cell is free.
        retry_after: Duration,
    },
    /// The budget could not be checked (a shared limiter's server is unreachable): the call
    /// does not run, and may be retried once the server is back.
    Unavailable {
        /// What went wrong, for the app (never shown to the model).
        why: String,
    },
}

/// Where rate-limit budgets live: [`InProcessLimiter`] (the default, per process) or
/// `RedisLimiter` (feature `redis`, shared by every worker). An implementation decides
/// itself how to fail when its store is unreachable (open: [`RateDecision::Allowed`], or
/// closed: [`RateDecision::Unavailable`]) and says so in its docs.
pub trait RateLimiter: Send + Sync + 'static {
    /// Takes one cell from the budget, or says how long to wait.
    fn acquire(&self, request: RateRequest) -> BoxFuture<RateDecision>;
}

// `std::time::Instant` rather than governor's default TSC clock (quanta): on virtual
// machines the TSC calibration can drift from wall time, and a wait advertised to a model
// must hold in wall time.
/// Keys hashed with foldhash, as the rest of the engine's maps are: SipHash, the default,
/// was a tenth of what a rate-limited call adds to a call.
type Keyed = Gcra<
    String,
    DefaultKeyedStateStore<String, foldhash::fast::RandomState>,
    MonotonicClock,
    NoOpMiddleware<std::time::Instant>,
>;

/// Checks between two sweeps of idle keys.
const SWEEP_EVERY: u64 = 4096;

/// One limiter per (tool, limit).
type Limiters = HashMap<(Arc<str>, RateLimit), Arc<Keyed>>;

/// GCRA budgets in this process, one `governor` keyed limiter per (tool, limit).
#[derive(Default)]
pub struct InProcessLimiter {
    limiters: RwLock<Limiters>,
    checks: AtomicU64,
}

/// Step 6: takes one cell of each of the tool's budgets for the call. `Break` when one is
/// spent (or its limiter is down): `result` then carries the refusal, and nothing else of the
/// call is touched (the caller settles it, releasing what it claimed).
pub async fn charge(
    limiter: &dyn RateLimiter,
    job: &Job,
    result: &mut CallResult,
) -> ControlFlow<()> {
    for limit in &job.tool.spec.policy.rate_limits {
        let request = RateRequest {
            tool: job.tool.name.clone(),
            key: limit.key(&job.caller),
            limit: limit.clone(),
        };
        let refusal = match limiter.acquire(request).await {
            RateDecision::Allowed => continue,
            RateDecision::Limited { retry_after } => {
                // Round up: retrying after a rounded-down wait would be refused again.
                let ms = retry_after.as_micros().div_ceil(1000).max(1) as u64;
                ToolError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "too many calls of {:?}; wait {ms} ms before calling it again",
                        job.tool.spec.name
                    ),
                )
                .with("retry_after_ms", ms)
            }
            RateDecision::Unavailable { why } => {
                result.detail = Some(why);
                ToolError::new(
                    ErrorCode::Unavailable,
                    "the rate limiter is unavailable; the call was not run",
                )
                .with("reason", "limiter_unavailable")
            }
        };
        result.envelope = Envelope::Error(refusal);
        result.finished_us = job.since_start();
        return ControlFlow::Break(());
    }
    ControlFlow::Continue(())
}

impl std::fmt::Debug for InProcessLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessLimiter").finish_non_exhaustive()
    }
}

impl InProcessLimiter {
    /// An empty limiter.
    pub fn new() -> Self {
        Self::default()
    }

    fn limiter(&self, tool: &Arc<str>, limit: &RateLimit) -> Arc<Keyed> {
        let id = (tool.clone(), limit.clone());
        if let Some(l) = self
            .limiters
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            return l.clone();
        }
        let mut all = self.limiters.write().unwrap_or_else(|p| p.into_inner());
        all.entry(id)
            .or_insert_with(|| {
                Arc::new(Gcra::new(
                    quota(limit),
                    DefaultKeyedStateStore::default(),
                    MonotonicClock,
                ))
            })
            .clone()
    }

    /// Takes one cell, synchronously.
    pub fn check(&self, request: &RateRequest) -> RateDecision {
        let limiter = self.limiter(&request.tool, &request.limit);
        let decision = match limiter.check_key(&request.key) {
            Ok(()) => RateDecision::Allowed,
            Err(not_until) => RateDecision::Limited {
                retry_after: not_until.wait_time_from(limiter.clock().now()),
            },
        };
        // Keys whose budget is full again hold no information: drop them now and then so
        // a stream of one-off principals does not grow memory without bound.
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            let all = self.limiters.read().unwrap_or_else(|p| p.into_inner());
            for l in all.values() {
                l.retain_recent();
                l.shrink_to_fit();
            }
        }
        decision
    }
}

impl RateLimiter for InProcessLimiter {
    fn acquire(&self, request: RateRequest) -> BoxFuture<RateDecision> {
        let decision = self.check(&request);
        Box::pin(std::future::ready(decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Caller;

    fn request(key: &str, limit: &RateLimit) -> RateRequest {
        RateRequest {
            tool: Arc::from("t"),
            key: key.into(),
            limit: limit.clone(),
        }
    }

    #[test]
    fn bursts_then_refuses_with_a_wait_then_refills() {
        let limiter = InProcessLimiter::new();
        let limit = RateLimit {
            max: 2,
            per_ms: 200,
            burst: Some(3),
            scope: RateScope::Principal,
        };
        for _ in 0..3 {
            assert_eq!(limiter.check(&request("a", &limit)), RateDecision::Allowed);
        }
        let RateDecision::Limited { retry_after } = limiter.check(&request("a", &limit)) else {
            panic!("the fourth call in a burst of three must be limited");
        };
        assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_millis(100));
        assert_eq!(
            limiter.check(&request("b", &limit)),
            RateDecision::Allowed,
            "another key has its own budget"
        );
        std::thread::sleep(retry_after + Duration::from_millis(5));
        assert_eq!(limiter.check(&request("a", &limit)), RateDecision::Allowed);
    }

    #[test]
    fn keys_follow_the_scope() {
        let mut c = Caller::principal("u1");
        c.tenant = Some("acme".into());
        let mut l = RateLimit::per_principal(1, Duration::from_secs(1));
        assert_eq!(l.key(&c), "acme\u{1f}u1");
        l.scope = RateScope::Tenant;
        assert_eq!(l.key(&c), "acme");
        l.scope = RateScope::Global;
        assert_eq!(l.key(&c), "");
        assert!(
            RateLimit::per_principal(0, Duration::from_secs(1))
                .check()
                .is_err()
        );
    }
}
