//! A call's place among its batch's `concurrency` (`core/src/place.rs`): the limit holds for
//! the app's code (handlers, the approval predicate), while calls waiting for the state
//! store give their place up, so the store sees a batch's writes together.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::durable::store::{Expect, Namespace, StoreError, Versioned};
use tooljig::*;

/// How many run at once now, and the most there ever were.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Gauge {
    async fn hold<T>(&self, for_: Duration, then: T) -> T {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
        tokio::time::sleep(for_).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        then
    }

    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

/// A store in memory whose writes each take 40 ms, as over a slow disk or network.
struct SlowStore {
    inner: MemoryStore,
    writes: Arc<Gauge>,
}

impl StateStore for SlowStore {
    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        self.inner.get(ns, key)
    }

    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let put = self.inner.put(ns, key, expect, value, ttl_ms);
        let writes = self.writes.clone();
        Box::pin(async move {
            let done = put.await;
            writes.hold(Duration::from_millis(40), done).await
        })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        self.inner.delete(ns, key, version)
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        self.inner.list(ns, prefix, limit)
    }
}

struct Setup {
    engine: Engine,
    writes: Arc<Gauge>,
    handlers: Arc<Gauge>,
    predicates: Arc<Gauge>,
}

/// `pay` is idempotent by its arguments and asks the app's approval predicate (which says
/// no, after 5 ms); its handler takes 5 ms.
fn setup() -> Setup {
    let writes = Arc::new(Gauge::default());
    let handlers = Arc::new(Gauge::default());
    let predicates = Arc::new(Gauge::default());
    let store = SlowStore {
        inner: MemoryStore::new(),
        writes: writes.clone(),
    };
    let asked = predicates.clone();
    let engine = Engine::new()
        .with_state_store(Arc::new(store))
        .with_approval_predicate(approval_predicate_fn(move |_| {
            let asked = asked.clone();
            async move { asked.hold(Duration::from_millis(5), Ok(false)).await }
        }));
    let ran = handlers.clone();
    engine
        .register(
            Tool::from_fn(
                "pay",
                "Pays.",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
                move |args: Value, _| {
                    let ran = ran.clone();
                    async move {
                        ran.hold(Duration::from_millis(5), Ok(json!({"paid": args["n"]})))
                            .await
                    }
                },
            )
            .policy(Policy::default().idempotent(IdempotencyMode::Arguments)),
        )
        .unwrap();
    Setup {
        engine,
        writes,
        handlers,
        predicates,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_holds_for_the_apps_code_while_store_waits_go_together() {
    let s = setup();
    let calls = (0..40)
        .map(|i| Call::new(format!("c{i}"), "pay", json!({"n": i})))
        .collect();
    let options = BatchOptions {
        concurrency: Some(3),
        ..BatchOptions::default()
    };
    let out = s.engine.run(calls, Caller::principal("u1"), options).await;
    assert!(
        out.results.iter().all(|r| r.envelope.is_ok()),
        "{:?}",
        out.results
    );
    assert!(
        s.handlers.most() <= 3,
        "handlers at once: {}",
        s.handlers.most()
    );
    assert!(
        s.predicates.most() <= 3,
        "predicates at once: {}",
        s.predicates.most()
    );
    // Holding their places, the calls would reach the store three at a time.
    assert!(
        s.writes.most() >= 10,
        "store writes at once: {}",
        s.writes.most()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_gives_its_place_up_and_still_replays() {
    let s = setup();
    let calls = || {
        (0..10)
            .map(|i| Call::new(format!("c{i}"), "pay", json!({"n": i})))
            .collect::<Vec<_>>()
    };
    let options = || BatchOptions {
        concurrency: Some(2),
        ..BatchOptions::default()
    };
    let first = s
        .engine
        .run(calls(), Caller::principal("u1"), options())
        .await;
    assert!(first.results.iter().all(|r| !r.replayed));
    let again = s
        .engine
        .run(calls(), Caller::principal("u1"), options())
        .await;
    assert!(
        again.results.iter().all(|r| r.replayed),
        "{:?}",
        again.results
    );
    for (a, b) in first.results.iter().zip(&again.results) {
        assert_eq!(a.envelope, b.envelope);
    }
}
