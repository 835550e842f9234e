//! The PostgreSQL state store against the real server: the store contract, migrations
//! raced by many workers, idempotency and approvals shared by separate engines (workers),
//! and a database that is down (the calls that need it end `unavailable`, retryable, and
//! nothing ran).

#[path = "support/postgres.rs"]
mod postgres;

use postgres::Scratch;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::store::contract;
use tooljig::*;

fn open(scratch: &Scratch) -> Arc<dyn StateStore> {
    Arc::new(PostgresStore::open(&scratch.url).unwrap())
}

/// A worker: its own engine and pool on the shared database, with `pay` (idempotent by
/// arguments, 100 ms) and `transfer` (needs approval); both count their runs in `runs`.
fn worker(store: Arc<dyn StateStore>, runs: Arc<AtomicUsize>) -> Engine {
    let engine = Engine::new().with_state_store(store);
    for (name, policy) in [
        (
            "pay",
            Policy::default().idempotent(IdempotencyMode::Arguments),
        ),
        ("transfer", Policy::default().require_approval()),
    ] {
        let runs = runs.clone();
        engine
            .register(
                Tool::from_fn(
                    name,
                    "Moves money.",
                    json!({"type": "object"}),
                    move |a: Value, _| {
                        let runs = runs.clone();
                        async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honours_the_store_contract() {
    let Some(scratch) = Scratch::new("contract").await else {
        return;
    };
    contract::check(open(&scratch)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_at_once_migrate_once() {
    let Some(scratch) = Scratch::new("migrate").await else {
        return;
    };
    let stores: Vec<_> = (0..8).map(|_| open(&scratch)).collect();
    let mut tasks = Vec::new();
    for (i, s) in stores.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            s.put(
                store::Namespace::Run,
                &format!("r{i}"),
                store::Expect::Absent,
                json!(i),
                None,
            )
            .await
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().unwrap().is_some(), "every worker wrote");
    }
    let applied = scratch
        .execute(&format!(
            "SELECT 1 FROM \"{}\".tooljig_migrations",
            scratch.schema
        ))
        .await
        .unwrap();
    assert_eq!(applied, 1, "one migration, recorded once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_sent_to_several_workers_run_once() {
    let Some(scratch) = Scratch::new("dupes").await else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let workers: Vec<Arc<Engine>> = (0..4)
        .map(|_| Arc::new(worker(open(&scratch), runs.clone())))
        .collect();
    let mut tasks = Vec::new();
    for (i, w) in workers.iter().cycle().take(40).enumerate() {
        let w = w.clone();
        tasks.push(tokio::spawn(async move {
            w.run(
                vec![Call::new(format!("c{i}"), "pay", json!({"amount": 7}))],
                Caller::principal("ana"),
                BatchOptions::default(),
            )
            .await
            .results
            .remove(0)
        }));
    }
    let mut envelopes = Vec::new();
    for t in tasks {
        let r = t.await.unwrap();
        assert!(r.envelope.is_ok(), "{r:?}");
        envelopes.push(r.envelope.to_value());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one execution in all");
    assert!(envelopes.windows(2).all(|w| w[0] == w[1]), "all share it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_suspended_on_one_worker_is_decided_and_resumed_on_others() {
    let Some(scratch) = Scratch::new("approve").await else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let (a, b, c) = (
        worker(open(&scratch), runs.clone()),
        worker(open(&scratch), runs.clone()),
        worker(open(&scratch), runs.clone()),
    );
    let ana = Caller::principal("ana");
    let out = a
        .run(
            vec![Call::new("t1", "transfer", json!({"to": "bo"}))],
            ana.clone(),
            BatchOptions::default(),
        )
        .await;
    let run_id = out.run_id.clone().unwrap();
    // Another worker sees the request in its inbox and decides it.
    let pending = b.pending(None).await.unwrap();
    assert_eq!(pending.len(), 1);
    let info = out.results[0].approval.as_ref().unwrap();
    b.approve(
        info.id.as_deref().unwrap(),
        &info.arguments_hash,
        &ana,
        None,
    )
    .await
    .unwrap();
    // Two more resume at once: one runs the call, the other returns its result.
    let (rb, rc) = tokio::join!(b.resume(&run_id), c.resume(&run_id));
    let (rb, rc) = (rb.unwrap(), rc.unwrap());
    assert!(rb.results[0].envelope.is_ok(), "{rb:?}");
    assert_eq!(rb.results[0].envelope, rc.results[0].envelope);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(a.pending(None).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_refuses_calls_retryably_and_runs_nothing() {
    // Nothing listens on port 1: every connection is refused at once.
    let store: Arc<dyn StateStore> =
        Arc::new(PostgresStore::open("postgres://postgres@127.0.0.1:1/test?schema=down").unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = worker(store, runs.clone());
    let out = engine
        .run(
            vec![
                Call::new("p", "pay", json!({"amount": 1})),
                Call::new("t", "transfer", json!({"to": "bo"})),
            ],
            Caller::principal("ana"),
            BatchOptions::default(),
        )
        .await;
    for r in &out.results {
        let e = r.envelope.to_value();
        assert_eq!(e["error"]["code"], "unavailable", "{e}");
        assert_eq!(e["error"]["retryable"], true);
        assert_eq!(e["error"]["reason"], "store_unavailable");
        assert!(
            !e.to_string().contains("127.0.0.1"),
            "the model never sees the backend: {e}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    let refused = engine.pending(None).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Unavailable);
}
