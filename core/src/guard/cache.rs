//! The read half of step 7: an opt-in TTL cache of successful results of read-effect tools.
//!
//! The key is the tool, the caller scope the tool declares (per principal by default, so one
//! user's results never reach another) and the canonical form of the final arguments (after
//! hidden arguments and resolvers), so key order and whitespace do not matter. Only `ok`
//! envelopes are stored; a hit reports `cached: true` and the handler does not run.
//!
//! (moka was tried first: under a stream of fresh keys its concurrent table spent most of
//! its time rehashing; a mutex over an LRU map costs far less at the rates an engine sees.)

use crate::caller::Caller;
use crate::digest::{into_string, write_canonical};
use crate::handler::BoxFuture;
use lru::LruCache;
use serde_json::Value;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::policy::cache::{CachePolicy, CacheScope};

/// The cache key of a call, or `None` when the scope cannot be met (no principal for a
/// per-principal cache, no tenant for a per-tenant one): such calls are never cached.
pub fn key(tool: &str, policy: &CachePolicy, caller: &Caller, arguments: &Value) -> Option<String> {
    // A unit separator between the parts: it cannot occur unescaped in the JSON after it.
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(tool.as_bytes());
    out.push(0x1f);
    match policy.scope {
        CacheScope::Principal => {
            out.extend_from_slice(caller.tenant.as_deref().unwrap_or("").as_bytes());
            out.push(0x1f);
            out.extend_from_slice(caller.principal.as_deref()?.as_bytes());
        }
        CacheScope::Tenant => out.extend_from_slice(caller.tenant.as_deref()?.as_bytes()),
        CacheScope::Global => {}
    }
    out.push(0x1f);
    write_canonical(arguments, &mut out);
    Some(into_string(out))
}

/// Where cached results live. The in-process one is the default and the only one shipped; a
/// cache shared by several processes would implement this trait.
pub trait ResultCache: Send + Sync + 'static {
    /// The data stored under `key`, if still fresh.
    fn get(&self, key: &str) -> BoxFuture<Option<Value>>;
    /// Stores `data` under `key` for `ttl`.
    fn put(&self, key: String, data: Value, ttl: Duration) -> BoxFuture<()>;
}

struct Entry {
    data: Value,
    expires: Instant,
}

/// Default bound on the in-process cache, in entries.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// An in-process cache: least-recently-used eviction (the `lru` crate) under one mutex, each
/// entry with its own expiry. The critical section is a hash lookup, so one lock serves
/// thousands of calls per millisecond.
pub struct InProcessCache {
    entries: Mutex<LruCache<String, Entry>>,
}

impl std::fmt::Debug for InProcessCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessCache")
            .field("entries", &self.lock().len())
            .finish()
    }
}

impl Default for InProcessCache {
    fn default() -> Self {
        InProcessCache::with_capacity(DEFAULT_CAPACITY)
    }
}

impl InProcessCache {
    /// A cache holding at most `capacity` results.
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        InProcessCache {
            entries: Mutex::new(LruCache::new(capacity)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fresh data under `key`, synchronously; an expired entry is dropped.
    pub fn lookup(&self, key: &str) -> Option<Value> {
        let mut entries = self.lock();
        match entries.get(key) {
            Some(e) if e.expires > Instant::now() => Some(e.data.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        }
    }

    /// Stores `data`, synchronously, evicting the least recently used entry when full.
    pub fn store(&self, key: String, data: Value, ttl: Duration) {
        // A TTL beyond what an `Instant` can hold means "never expires" in practice.
        let far = Duration::from_secs(100 * 365 * 24 * 3600);
        let expires = Instant::now() + ttl.min(far);
        self.lock().put(key, Entry { data, expires });
    }
}

impl ResultCache for InProcessCache {
    fn get(&self, key: &str) -> BoxFuture<Option<Value>> {
        Box::pin(std::future::ready(self.lookup(key)))
    }

    fn put(&self, key: String, data: Value, ttl: Duration) -> BoxFuture<()> {
        self.store(key, data, ttl);
        crate::handler::done(|| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é\""}], "a": null}"#).unwrap();
        let b: Value =
            serde_json::from_str("{\"a\":null,\n \"b\":[1,{\"x\":\"é\\\"\",\"y\":2}]}").unwrap();
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        write_canonical(&a, &mut sa);
        write_canonical(&b, &mut sb);
        assert_eq!(sa, sb);
        assert_eq!(into_string(sa), r#"{"a":null,"b":[1,{"x":"é\"","y":2}]}"#);
    }

    #[test]
    fn keys_are_scoped() {
        let p = CachePolicy::ttl(Duration::from_secs(60));
        let args = json!({"q": 1});
        let u1 = Caller::principal("u1");
        let u2 = Caller::principal("u2");
        assert_ne!(key("t", &p, &u1, &args), key("t", &p, &u2, &args));
        assert_eq!(key("t", &p, &Caller::default(), &args), None);
        let g = CachePolicy {
            scope: CacheScope::Global,
            ..p
        };
        assert_eq!(key("t", &g, &u1, &args), key("t", &g, &u2, &args));
    }

    #[test]
    fn entries_expire() {
        let c = InProcessCache::default();
        c.store("k".into(), json!(1), Duration::from_millis(30));
        assert_eq!(c.lookup("k"), Some(json!(1)));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(c.lookup("k"), None);
    }
}
