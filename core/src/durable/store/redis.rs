//! The Redis state store: for apps that keep pending approvals and runs in Redis (shared by
//! every worker) rather than in a database.
//!
//! A record is a hash (`v`: version, `d`: the JSON value, `e`: expiry in ms) under
//! `PREFIX state:NS:KEY`, and each operation is one Lua script, so every compare-and-set is
//! atomic against writers anywhere. Versions come from one counter per prefix: they only
//! grow and are never reused, so a writer holding the version of a record that expired and
//! was written anew cannot overwrite the new one. Expiry is Redis's own (`PEXPIRE`, by the
//! server's clock), so no read ever sees a record past it. Listing by key prefix reads a
//! sorted set per namespace (`PREFIX stateidx:NS`, members compared as bytes) and drops
//! the members whose record expired as it goes.
//!
//! Durability is Redis's: with `appendonly yes` and `appendfsync always` a write survives a
//! crash of the server; with the defaults it may lose the last second, and without
//! persistence everything is lost on restart. Use PostgreSQL where that matters. Keys of one
//! store share no hash slot, so Redis Cluster is not supported.

use super::{Expect, Namespace, StateStore, StoreError, Versioned};
use crate::handler::BoxFuture;
use crate::redis::Redis;
use serde_json::Value;
use std::sync::Arc;

/// KEYS: record, index, version counter. ARGV: expected version (0: absent), value, TTL in
/// ms (0: none), member. Returns the new version, or 0 when the record was not as expected.
const PUT: &str = r"
local cur = redis.call('HGET', KEYS[1], 'v')
local want = tonumber(ARGV[1])
if want == 0 then
  if cur then return 0 end
elseif not cur or tonumber(cur) ~= want then
  return 0
end
local v = redis.call('INCR', KEYS[3])
local ttl = tonumber(ARGV[3])
local e = ''
if ttl > 0 then
  local t = redis.call('TIME')
  e = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl)
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', v, 'd', ARGV[2], 'e', e)
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('ZADD', KEYS[2], 0, ARGV[4])
return v
";

/// KEYS: record, index. ARGV: version, member. Returns 1 when deleted.
const DELETE: &str = r"
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur or tonumber(cur) ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
";

/// KEYS: index. ARGV: key prefix of the records, member prefix, limit. Returns
/// `[member, v, d, e, ...]` of live records in member order; drops members whose record
/// expired.
const LIST: &str = r"
local out = {}
local found = 0
local limit = tonumber(ARGV[3])
local from = '[' .. ARGV[2]
local to = '[' .. ARGV[2] .. '\255'
local offset = 0
while found < limit do
  local members = redis.call('ZRANGEBYLEX', KEYS[1], from, to, 'LIMIT', offset, 256)
  if #members == 0 then break end
  for _, m in ipairs(members) do
    local r = redis.call('HMGET', ARGV[1] .. m, 'v', 'd', 'e')
    if r[1] then
      if found < limit then
        table.insert(out, m); table.insert(out, r[1]); table.insert(out, r[2]); table.insert(out, r[3])
        found = found + 1
      end
    else
      redis.call('ZREM', KEYS[1], m)
      offset = offset - 1
    end
  end
  offset = offset + #members
end
return out
";

/// A state store in Redis. Cheap to clone: clones share one connection.
#[derive(Clone)]
pub struct RedisStore(Arc<Inner>);

struct Inner {
    redis: Arc<Redis>,
    bus: Arc<crate::durable::wakeup::RedisBus>,
    put: ::redis::Script,
    delete: ::redis::Script,
    list: ::redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.0.redis.prefix())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on the Redis at `url` (`redis://host:port/db?prefix=NAME`). Connects on first
    /// use: opening never blocks, and a server that is down only fails the operations that
    /// need it.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let redis = Arc::new(Redis::open(url).map_err(StoreError)?);
        Ok(RedisStore(Arc::new(Inner {
            bus: Arc::new(crate::durable::wakeup::RedisBus::new(redis.clone())),
            redis,
            put: ::redis::Script::new(PUT),
            delete: ::redis::Script::new(DELETE),
            list: ::redis::Script::new(LIST),
        })))
    }
}

impl Inner {
    /// The namespace's prefix of record keys (members of its index follow it).
    fn records(&self, ns: Namespace) -> String {
        self.redis.key("state", &format!("{}:", ns.as_str()))
    }

    fn index(&self, ns: Namespace) -> String {
        self.redis.key("stateidx", ns.as_str())
    }

    async fn connection(&self) -> Result<crate::redis::Connection, StoreError> {
        self.redis.connection().await.map_err(StoreError)
    }
}

fn redis_err(e: ::redis::RedisError) -> StoreError {
    StoreError(format!("Redis: {e}"))
}

fn decode(
    ns: Namespace,
    key: &str,
    version: &str,
    text: &str,
    expires: &str,
) -> Result<Versioned, StoreError> {
    let bad = |what: &str| {
        StoreError(format!(
            "record {}/{key} is unreadable: {what}",
            ns.as_str()
        ))
    };
    Ok(Versioned {
        value: serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?,
        version: version
            .parse()
            .map_err(|_| bad("its version is not a number"))?,
        expires_at_ms: match expires {
            "" => None,
            e => Some(e.parse().map_err(|_| bad("its expiry is not a number"))?),
        },
    })
}

impl StateStore for RedisStore {
    fn wake_bus(&self) -> Option<Arc<dyn crate::durable::wakeup::WakeBus>> {
        Some(self.0.bus.clone())
    }

    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        let (this, key) = (self.0.clone(), key.to_string());
        Box::pin(async move {
            let mut conn = this.connection().await?;
            let (v, d, e): (Option<String>, Option<String>, Option<String>) = ::redis::cmd("HMGET")
                .arg(format!("{}{key}", this.records(ns)))
                .arg(&["v", "d", "e"])
                .query_async(&mut conn)
                .await
                .map_err(redis_err)?;
            match (v, d) {
                (Some(v), Some(d)) => {
                    decode(ns, &key, &v, &d, e.as_deref().unwrap_or("")).map(Some)
                }
                _ => Ok(None),
            }
        })
    }

    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        // `Value`'s own encoding cannot fail (its map keys are strings).
        self.put_json(ns, key, expect, value.to_string(), ttl_ms)
    }

    fn keeps_json_text(&self) -> bool {
        true
    }

    fn put_json(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        text: String,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let (this, key) = (self.0.clone(), key.to_string());
        Box::pin(async move {
            let want = match expect {
                Expect::Absent => 0,
                Expect::Version(v) => v,
            };
            // A TTL of 0 would mean "none" to the script: the shortest real one is 1 ms.
            let ttl = ttl_ms.map_or(0, |t| t.clamp(1, i64::MAX as u64 / 4));
            let mut conn = this.connection().await?;
            let version: u64 = this
                .put
                .key(format!("{}{key}", this.records(ns)))
                .key(this.index(ns))
                .key(this.redis.key("state", "version"))
                .arg(want)
                .arg(text)
                .arg(ttl)
                .arg(&key)
                .invoke_async(&mut conn)
                .await
                .map_err(redis_err)?;
            Ok((version > 0).then_some(version))
        })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        let (this, key) = (self.0.clone(), key.to_string());
        Box::pin(async move {
            let mut conn = this.connection().await?;
            let deleted: u64 = this
                .delete
                .key(format!("{}{key}", this.records(ns)))
                .key(this.index(ns))
                .arg(version)
                .arg(&key)
                .invoke_async(&mut conn)
                .await
                .map_err(redis_err)?;
            Ok(deleted == 1)
        })
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        let (this, prefix) = (self.0.clone(), prefix.to_string());
        Box::pin(async move {
            let mut conn = this.connection().await?;
            let flat: Vec<String> = this
                .list
                .key(this.index(ns))
                .arg(this.records(ns))
                .arg(&prefix)
                .arg(limit.min(i64::MAX as usize / 2))
                .invoke_async(&mut conn)
                .await
                .map_err(redis_err)?;
            flat.chunks(4)
                .map(|c| match c {
                    [k, v, d, e] => decode(ns, k, v, d, e).map(|r| (k.clone(), r)),
                    _ => Err(StoreError("Redis answered a list in pieces".into())),
                })
                .collect()
        })
    }
}
