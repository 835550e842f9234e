//! The result cache shared by every worker, in Redis: a read tool's result cached by one
//! worker is a hit on every other, for the TTL its policy sets (Redis expires it, `PX`).
//!
//! Keys are the SHA-256 of the cache key (tool, caller scope, canonical arguments), so they
//! stay short whatever the arguments and never spell an argument out in Redis. The cache
//! fails open: Redis unreachable is a miss (the tool runs), and a result that could not be
//! stored is only a miss later, since caching never decides whether a call may run.

use super::cache::ResultCache;
use crate::digest::hex;
use crate::handler::BoxFuture;
use crate::redis::Redis;
use ::redis::AsyncCommands;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// A [`ResultCache`] in Redis, shared by every process that names the same server and
/// prefix. Cheap to clone: clones share one connection.
#[derive(Clone, Debug)]
pub struct RedisCache(Arc<Redis>);

impl RedisCache {
    /// A cache on the Redis at `url` (`redis://host:port/db?prefix=NAME`). Connects on first
    /// use: opening never blocks.
    pub fn open(url: &str) -> Result<Self, String> {
        Ok(RedisCache(Arc::new(Redis::open(url)?)))
    }

    fn key(&self, key: &str) -> String {
        self.0.key("cache", &hex(&Sha256::digest(key.as_bytes())))
    }
}

impl ResultCache for RedisCache {
    fn get(&self, key: &str) -> BoxFuture<Option<Value>> {
        let (redis, key) = (self.0.clone(), self.key(key));
        Box::pin(async move {
            let mut conn = redis.connection().await.ok()?;
            let text: Option<String> = conn.get(&key).await.ok()?;
            text.and_then(|t| serde_json::from_str(&t).ok())
        })
    }

    fn put(&self, key: String, data: Value, ttl: Duration) -> BoxFuture<()> {
        let (redis, key) = (self.0.clone(), self.key(&key));
        Box::pin(async move {
            let Ok(mut conn) = redis.connection().await else {
                return;
            };
            let Ok(text) = serde_json::to_string(&data) else {
                return;
            };
            // Redis takes at most ~292 years in ms; a longer TTL is that.
            let ms = u64::try_from(ttl.as_millis())
                .unwrap_or(u64::MAX)
                .clamp(1, i64::MAX as u64 / 2);
            let stored: Result<(), _> = conn.pset_ex(&key, text, ms).await;
            if let Err(e) = stored {
                tracing::warn!(target: "tooljig::cache", error = %e, "a result was not cached");
            }
        })
    }
}
