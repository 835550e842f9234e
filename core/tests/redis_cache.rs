//! The result cache shared through Redis, against the real server: a read tool's result
//! cached by one worker is a hit on another until its TTL; unreachable Redis is a miss (the
//! tool runs), never an error. Each test has its own key prefix, deleted after.

#[path = "support/redis.rs"]
mod redis_support;

use redis_support::Prefix;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::*;

/// A worker whose `lookup` (a read tool) is cached for 400 ms per principal.
fn worker(url: &str, runs: Arc<AtomicUsize>) -> Engine {
    let engine = EngineOptions::from_value(json!({"result_cache": url}))
        .unwrap()
        .build()
        .unwrap();
    let policy = Policy::default().effect(Effect::Read).cache(CachePolicy {
        ttl_ms: 400,
        scope: CacheScope::Principal,
    });
    engine
        .register(
            Tool::from_fn(
                "lookup",
                "Looks up.",
                json!({"type": "object"}),
                move |a: Value, _| {
                    let runs = runs.clone();
                    async move {
                        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                        Ok(json!({"q": a["q"], "run": n}))
                    }
                },
            )
            .policy(policy),
        )
        .unwrap();
    engine
}

async fn lookup(engine: &Engine, who: &str, args: Value) -> CallResult {
    engine
        .run(
            vec![Call::new("l", "lookup", args)],
            Caller::principal(who),
            BatchOptions::default(),
        )
        .await
        .results
        .remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_cached_by_one_worker_is_a_hit_on_another_until_it_expires() {
    let Some(prefix) = Prefix::new("cache") else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let (a, b) = (
        worker(&prefix.url, runs.clone()),
        worker(&prefix.url, runs.clone()),
    );
    let first = lookup(&a, "ana", json!({"q": "x", "n": 1})).await;
    assert!(!first.cached);
    // Another worker, the same arguments in another order: served from Redis.
    let hit = lookup(&b, "ana", json!({"n": 1, "q": "x"})).await;
    assert!(hit.cached, "{hit:?}");
    assert_eq!(hit.envelope, first.envelope);
    // Another principal has a cache of their own.
    assert!(!lookup(&b, "bo", json!({"q": "x", "n": 1})).await.cached);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let keys = prefix.keys();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys.iter().all(|k| !k.contains("ana") && !k.contains('x')),
        "keys are hashes: {keys:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !lookup(&b, "ana", json!({"q": "x", "n": 1})).await.cached,
        "expired"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_unreachable_is_a_miss_not_an_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = worker("redis://127.0.0.1:1", runs.clone());
    for _ in 0..2 {
        let r = lookup(&engine, "ana", json!({"q": "x"})).await;
        assert!(r.envelope.is_ok() && !r.cached, "{r:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
