//! Rate limits shared by every worker: the same GCRA as [`InProcessLimiter`], its state in
//! Redis and each check one atomic Lua script.
//!
//! The script reads the key's theoretical arrival time, decides, and stores the new one in
//! one step on the server, by the server's clock (`TIME`), so workers on machines whose
//! clocks disagree share one budget exactly: a limit of N calls a minute admits N in all,
//! whichever workers take them. A key lives only as long as its budget is not full again
//! (`PX`), so idle principals cost Redis nothing.
//!
//! Unreachable Redis fails closed: the call ends `unavailable` (retryable, reason
//! `limiter_unavailable`) rather than running unlimited. The connection is one multiplexed
//! connection per limiter that reconnects by itself (`core/src/redis.rs`); connecting and each
//! check give up after 2 s.
//!
//! [`InProcessLimiter`]: super::rate_limit::InProcessLimiter

use super::rate_limit::{RateDecision, RateLimiter, RateRequest};
use crate::handler::BoxFuture;
use crate::redis::Redis;
use std::sync::Arc;
use std::time::Duration;

/// GCRA in one step. KEYS[1]: the budget; ARGV: the emission interval and the burst, in
/// µs and cells. Returns 0 when the call may go on, else the µs until it could.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - interval * burst
if allow_at > now then
  return allow_at - now
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return 0
";

/// The largest `interval × burst` the script computes exactly (Lua numbers are doubles).
const EXACT: u64 = 1 << 52;

/// A [`RateLimiter`] whose budgets live in Redis, shared by every process that names the
/// same server and prefix. Cheap to clone: clones share one connection.
#[derive(Clone)]
pub struct RedisLimiter(Arc<Inner>);

struct Inner {
    redis: Redis,
    script: ::redis::Script,
}

impl std::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("prefix", &self.0.redis.prefix())
            .finish_non_exhaustive()
    }
}

impl RedisLimiter {
    /// A limiter on the Redis at `url` (`redis://host:port/db`), its keys under `prefix`
    /// (`?prefix=NAME` in the URL, default `tooljig:`; tests use one each). Connects on first
    /// use: opening never blocks.
    pub fn open(url: &str) -> Result<Self, String> {
        Ok(RedisLimiter(Arc::new(Inner {
            redis: Redis::open(url)?,
            script: ::redis::Script::new(GCRA),
        })))
    }

    /// The prefix of every key the limiter writes.
    pub fn prefix(&self) -> &str {
        self.0.redis.prefix()
    }
}

impl Inner {
    /// The budget's key: the tool, the limit itself (two limits on one tool are two budgets)
    /// and the caller's share of it.
    fn key(&self, request: &RateRequest) -> String {
        let l = &request.limit;
        self.redis.key(
            "rate",
            &format!(
                "{}\u{1f}{}/{}/{}\u{1f}{}",
                request.tool,
                l.max,
                l.per_ms,
                l.burst.unwrap_or(l.max),
                request.key
            ),
        )
    }
}

/// The emission interval (µs a cell) and the burst, clamped so the script's arithmetic
/// stays exact: a window longer than that ("once, ever") is one no budget outlives.
fn cells(request: &RateRequest) -> (u64, u64) {
    let l = &request.limit;
    let max = u64::from(l.max.max(1));
    let burst = u64::from(l.burst.unwrap_or(l.max).max(1));
    let interval = (l.per_ms.saturating_mul(1000) / max).clamp(1, EXACT / burst);
    (interval, burst)
}

impl RateLimiter for RedisLimiter {
    fn acquire(&self, request: RateRequest) -> BoxFuture<RateDecision> {
        let this = self.0.clone();
        Box::pin(async move {
            let mut conn = match this.redis.connection().await {
                Ok(c) => c,
                Err(why) => return RateDecision::Unavailable { why },
            };
            let (interval, burst) = cells(&request);
            let wait: Result<u64, _> = this
                .script
                .key(this.key(&request))
                .arg(interval)
                .arg(burst)
                .invoke_async(&mut conn)
                .await;
            match wait {
                Ok(0) => RateDecision::Allowed,
                Ok(us) => RateDecision::Limited {
                    retry_after: Duration::from_micros(us),
                },
                Err(e) => RateDecision::Unavailable {
                    why: format!("Redis did not answer a rate-limit check: {e}"),
                },
            }
        })
    }
}
