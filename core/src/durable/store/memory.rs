//! An in-memory state store: one process, no persistence. For tests and for apps that
//! only need approvals and idempotency within one process's life.

use super::{Expect, Namespace, StateStore, StoreError, Versioned, now_ms};
use crate::handler::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Records in a map behind one lock; every operation is atomic under it.
#[derive(Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<(&'static str, String), Versioned>>,
    writes: AtomicU64,
}

/// Expired records are swept once every this many writes, so memory stays bounded without
/// a scan per operation.
const SWEEP_EVERY: u64 = 4096;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<(&'static str, String), Versioned>) -> T) -> T {
        let mut map = self.records.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut map)
    }
}

fn live(v: &Versioned, now: u64) -> bool {
    v.expires_at_ms.is_none_or(|at| at > now)
}

impl StateStore for MemoryStore {
    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        let now = now_ms();
        let found = self.with(|m| {
            m.get(&(ns.as_str(), key.to_string()))
                .filter(|v| live(v, now))
                .cloned()
        });
        Box::pin(async move { Ok(found) })
    }

    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let now = now_ms();
        let sweep = self.writes.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1;
        let out = self.with(|m| {
            if sweep {
                m.retain(|_, v| live(v, now));
            }
            let k = (ns.as_str(), key.to_string());
            let current = m.get(&k).filter(|v| live(v, now));
            let version = match (expect, current) {
                (Expect::Absent, None) => m.get(&k).map_or(1, |old| old.version + 1),
                (Expect::Version(want), Some(cur)) if cur.version == want => want + 1,
                _ => return None,
            };
            m.insert(
                k,
                Versioned {
                    value,
                    version,
                    expires_at_ms: ttl_ms.map(|t| now.saturating_add(t)),
                },
            );
            Some(version)
        });
        Box::pin(async move { Ok(out) })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        let now = now_ms();
        let out = self.with(|m| {
            let k = (ns.as_str(), key.to_string());
            match m.get(&k) {
                Some(v) if v.version == version && live(v, now) => {
                    m.remove(&k);
                    true
                }
                _ => false,
            }
        });
        Box::pin(async move { Ok(out) })
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        let now = now_ms();
        let out = self.with(|m| {
            m.range((ns.as_str(), prefix.to_string())..)
                .take_while(|((n, k), _)| *n == ns.as_str() && k.starts_with(prefix))
                .filter(|(_, v)| live(v, now))
                .take(limit)
                .map(|((_, k), v)| (k.clone(), v.clone()))
                .collect()
        });
        Box::pin(async move { Ok(out) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn honours_the_store_contract() {
        super::super::contract::check(Arc::new(MemoryStore::new())).await;
    }
}
