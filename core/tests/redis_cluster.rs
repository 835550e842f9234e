//! A Redis Cluster (three masters of the test's own) for every Redis backend: a rate limit
//! shared by two workers admits its budget in all, a cached result is shared, a wake-up
//! crosses workers, cancelling a run from another worker reaches it; a node that dies ends
//! the calls needing it with the retryable `unavailable`, and nothing runs twice. The store
//! contract and the multi-worker tests run on a cluster too (`shared_state.rs`).

#[path = "support/redis_cluster.rs"]
mod redis_cluster;

use redis_cluster::Cluster;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tooljig::*;

/// A worker with its state store, rate limiter and result cache all on `url`: `ping` (10
/// calls a minute for everyone together), `quote` (cached for a minute), `pay` (idempotent by
/// arguments); each counts its runs.
fn worker(url: &str, runs: Arc<AtomicUsize>) -> Engine {
    let engine = EngineOptions::from_value(
        json!({"state_store": url, "rate_limiter": url, "result_cache": url}),
    )
    .unwrap()
    .build()
    .unwrap();
    let mut limit = RateLimit::per_principal(10, Duration::from_secs(60));
    limit.scope = RateScope::Global;
    for (name, policy) in [
        ("ping", Policy::default().rate_limit(limit)),
        (
            "quote",
            Policy::default()
                .effect(Effect::Read)
                .cache(CachePolicy::ttl(Duration::from_secs(60))),
        ),
        (
            "pay",
            Policy::default().idempotent(IdempotencyMode::Arguments),
        ),
    ] {
        let runs = runs.clone();
        engine
            .register(
                Tool::from_fn(
                    name,
                    "Does.",
                    json!({"type": "object"}),
                    move |a: Value, _| {
                        let runs = runs.clone();
                        async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            Ok(json!({"did": a}))
                        }
                    },
                )
                .policy(policy),
            )
            .unwrap();
    }
    engine
}

async fn call(engine: &Engine, tool: &str, n: usize) -> Vec<CallResult> {
    let calls = (0..n)
        .map(|i| Call::new(format!("c{i}"), tool, json!({"n": 1})))
        .collect();
    engine
        .run(calls, Caller::principal("ana"), BatchOptions::default())
        .await
        .results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_redis_backend_works_on_a_cluster() {
    let Some(cluster) = Cluster::start("backends") else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let (a, b) = (
        worker(&cluster.url, runs.clone()),
        worker(&cluster.url, runs.clone()),
    );

    // One global limit of 10 across both workers.
    let admitted = call(&a, "ping", 7)
        .await
        .iter()
        .filter(|r| r.envelope.is_ok())
        .count()
        + call(&b, "ping", 7)
            .await
            .iter()
            .filter(|r| r.envelope.is_ok())
            .count();
    assert_eq!(admitted, 10);
    assert_eq!(runs.swap(0, Ordering::SeqCst), 10);

    // A result cached by one worker is a hit in the other.
    assert!(call(&a, "quote", 1).await[0].envelope.is_ok());
    let hit = &call(&b, "quote", 1).await[0];
    assert!(hit.cached, "{hit:?}");
    assert_eq!(runs.swap(0, Ordering::SeqCst), 1);

    // An idempotent call made on one worker replays on the other.
    call(&a, "pay", 1).await;
    let replayed = &call(&b, "pay", 1).await[0];
    assert!(replayed.replayed, "{replayed:?}");
    assert_eq!(runs.swap(0, Ordering::SeqCst), 1);

    // Wake-ups cross workers: a waiter on one store hears a publish from the other.
    let store = StoreSpec::parse(&json!(cluster.url))
        .unwrap()
        .open()
        .unwrap();
    let other = StoreSpec::parse(&json!(cluster.url))
        .unwrap()
        .open()
        .unwrap();
    let bus = store.wake_bus().expect("a Redis store has a wake bus");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    bus.listen(Arc::new(move |topic: &str| {
        let _ = tx.send(topic.to_string());
    }));
    let sender = other.wake_bus().unwrap();
    let started = Instant::now();
    let heard = async {
        loop {
            sender.publish(vec!["cluster-topic".into()]).await.unwrap();
            // The workers above publish their own topics on the same bus: wait for ours.
            while let Ok(Some(t)) =
                tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
            {
                if t == "cluster-topic" {
                    return t;
                }
            }
        }
    };
    let topic = tokio::time::timeout(Duration::from_secs(10), heard)
        .await
        .expect("heard");
    assert_eq!(topic, "cluster-topic");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_dies_ends_calls_retryably_and_runs_nothing_twice() {
    let Some(cluster) = Cluster::start("down") else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = worker(&cluster.url, runs.clone());
    assert!(call(&engine, "pay", 1).await[0].envelope.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Every node stops: whichever one serves the prefix's slot is gone.
    for port in &cluster.ports {
        cluster.stop_node(*port);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = call(&engine, "pay", 1).await;
    match &out[0].envelope {
        Envelope::Error(e) => {
            assert_eq!(e.code, ErrorCode::Unavailable, "{e:?}");
            assert!(e.retryable);
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    let limited = call(&engine, "ping", 1).await;
    assert!(matches!(&limited[0].envelope, Envelope::Error(e) if e.code == ErrorCode::Unavailable));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "nothing ran without its store"
    );
}
