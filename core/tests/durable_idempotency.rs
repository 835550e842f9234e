//! Idempotency (step 7): duplicates run once, in flight or after; key reuse conflicts;
//! a dead holder's lease lapses and the retry says so.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::*;

static HUNG: AtomicBool = AtomicBool::new(false);

/// An engine with `pay`: counts its runs, sleeps `ms`, fails when `fail` is set.
fn pay_engine(
    store: Option<Arc<dyn StateStore>>,
    mode: IdempotencyMode,
) -> (Engine, Arc<AtomicUsize>) {
    pay_engine_leased(store, mode, None)
}

/// As [`pay_engine`], with a lease; `None` keeps the default (the tool's timeout budget).
fn pay_engine_leased(
    store: Option<Arc<dyn StateStore>>,
    mode: IdempotencyMode,
    lease_ms: Option<u64>,
) -> (Engine, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut engine = Engine::new();
    if let Some(s) = store {
        engine = engine.with_state_store(s);
    }
    let counter = runs.clone();
    let mut policy = Policy::default().idempotent(mode);
    policy.idempotency.lease_ms = lease_ms;
    engine
        .register(
            Tool::from_fn(
                "pay",
                "Pays.",
                json!({"type": "object", "properties": {"amount": {"type": "integer"}, "ms": {"type": "integer"}, "fail": {"type": "boolean"}, "hang": {"type": "boolean"}}}),
                move |args: Value, _| {
                    let counter = counter.clone();
                    async move {
                        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                        // Only the first `hang` call ever hangs: it plays the process that died.
                        if args["hang"] == true && !HUNG.swap(true, Ordering::SeqCst) {
                            std::future::pending::<()>().await;
                        }
                        tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                        if args["fail"] == true {
                            return Err(HandlerError::tool(ErrorCode::ExternalApiError, "bank down"));
                        }
                        Ok(json!({"paid": args["amount"], "run": n}))
                    }
                },
            )
            .policy(policy),
        )
        .unwrap();
    (engine, runs)
}

fn caller() -> Caller {
    Caller::principal("u1")
}

async fn one(engine: &Engine, call: Call) -> CallResult {
    engine
        .run(vec![call], caller(), BatchOptions::default())
        .await
        .results
        .remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_flight_waits_and_shares_then_later_ones_replay() {
    let (engine, runs) = pay_engine(None, IdempotencyMode::Arguments);
    let engine = Arc::new(engine);
    let args = json!({"amount": 5, "ms": 150});
    let (a, b) = tokio::join!(one(&engine, Call::new("a", "pay", args.clone())), async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        one(
            &engine,
            Call::new("b", "pay", json!({"ms": 150, "amount": 5})),
        )
        .await
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran once");
    assert_eq!(a.envelope, b.envelope);
    // Usually `a` claims first; under load `b` may. Either way one ran and one shared.
    assert!(
        a.replayed != b.replayed,
        "one ran, the other shared: {a:?} {b:?}"
    );
    let shared = if a.replayed { &a } else { &b };
    assert_eq!(shared.attempts, 0);
    let c = one(&engine, Call::new("c", "pay", args)).await;
    assert!(c.replayed);
    assert_eq!(c.envelope, a.envelope);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Another caller is another request.
    let other = engine
        .run(
            vec![Call::new("d", "pay", json!({"amount": 5, "ms": 0}))],
            Caller::principal("u2"),
            BatchOptions::default(),
        )
        .await;
    assert!(!other.results[0].replayed);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_in_one_batch_run_once() {
    let (engine, runs) = pay_engine(None, IdempotencyMode::Arguments);
    let out = engine
        .run(
            vec![
                Call::new("a", "pay", json!({"amount": 1, "ms": 50})),
                Call::new("b", "pay", json!({"amount": 1, "ms": 50})),
            ],
            caller(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(out.results[0].envelope, out.results[1].envelope);
    assert_eq!(
        out.results.iter().filter(|r| r.replayed).count(),
        1,
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_key_with_other_arguments_is_a_conflict() {
    let (engine, runs) = pay_engine(None, IdempotencyMode::Key);
    let first = one(
        &engine,
        Call::new("a", "pay", json!({"amount": 5})).idempotency_key("req-1"),
    )
    .await;
    assert!(first.envelope.is_ok());
    let again = one(
        &engine,
        Call::new("b", "pay", json!({"amount": 5})).idempotency_key("req-1"),
    )
    .await;
    assert!(again.replayed);
    let other = one(
        &engine,
        Call::new("c", "pay", json!({"amount": 9})).idempotency_key("req-1"),
    )
    .await;
    assert_eq!(other.envelope.code(), Some(ErrorCode::Conflict));
    let keyless = one(&engine, Call::new("d", "pay", json!({"amount": 5}))).await;
    assert_eq!(keyless.envelope.code(), Some(ErrorCode::InvalidRequest));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_failure_frees_the_key() {
    let (engine, runs) = pay_engine(None, IdempotencyMode::Arguments);
    let args = json!({"amount": 5, "fail": true});
    let a = one(&engine, Call::new("a", "pay", args.clone())).await;
    assert_eq!(a.envelope.code(), Some(ErrorCode::ExternalApiError));
    let b = one(&engine, Call::new("b", "pay", args)).await;
    assert!(!b.replayed, "a retry of a transient failure runs again");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holders_lease_lapses_and_the_retry_says_so() {
    let dir = tempdir();
    let store: Arc<dyn StateStore> = Arc::new(SqliteStore::open(dir.join("s.db")).unwrap());
    let (engine, runs) = pay_engine_leased(Some(store.clone()), IdempotencyMode::Key, Some(1500));
    // The first holder never finishes: its batch is abandoned at the deadline, as a crashed
    // process would abandon it, leaving the key in flight.
    // Long enough for the call to claim its key even on a loaded machine (a durable run
    // writes its record before the first call starts).
    let opts = BatchOptions {
        deadline_ms: Some(300),
        ..Default::default()
    };
    let out = engine
        .run(
            vec![Call::new("a", "pay", json!({"amount": 5, "hang": true})).idempotency_key("k")],
            caller(),
            opts,
        )
        .await;
    assert_eq!(
        out.results[0].envelope.code(),
        Some(ErrorCode::DeadlineExceeded)
    );
    // A second process opening the same store retries: it waits out the lease, then runs.
    let (engine2, runs2) = pay_engine_leased(Some(store), IdempotencyMode::Key, Some(1500));
    let started = std::time::Instant::now();
    let retry = engine2
        .run(
            vec![Call::new("b", "pay", json!({"amount": 5, "hang": true})).idempotency_key("k")],
            caller(),
            BatchOptions {
                deadline_ms: Some(5000),
                ..Default::default()
            },
        )
        .await;
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "it waited for the lease"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        runs2.load(Ordering::SeqCst),
        1,
        "the retry ran once the lease lapsed"
    );
    let r = &retry.results[0];
    assert!(r.recovered, "the result says an earlier holder died: {r:?}");
    std::fs::remove_dir_all(&dir).ok();
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tooljig-idem-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn contention(store: Option<Arc<dyn StateStore>>) {
    let (engine, runs) = pay_engine(store, IdempotencyMode::Key);
    let engine = Arc::new(engine);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let engine = engine.clone();
        tasks.spawn(async move {
            let call = Call::new(format!("c{i}"), "pay", json!({"amount": 7, "ms": 100}))
                .idempotency_key("order-42");
            one(&engine, call).await
        });
    }
    let mut results = Vec::new();
    while let Some(r) = tasks.join_next().await {
        results.push(r.unwrap());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "exactly one execution");
    let first = &results.iter().find(|r| !r.replayed).unwrap().envelope;
    assert!(first.is_ok());
    assert!(results.iter().all(|r| &r.envelope == first));
    assert_eq!(results.iter().filter(|r| r.replayed).count(), 999);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_duplicates_run_once_in_memory() {
    contention(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_duplicates_run_once_on_sqlite() {
    let dir = tempdir();
    let store: Arc<dyn StateStore> = Arc::new(SqliteStore::open(dir.join("s.db")).unwrap());
    contention(Some(store)).await;
    std::fs::remove_dir_all(&dir).ok();
}
