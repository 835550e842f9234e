//! The shared state stores against the real servers, PostgreSQL and Redis alike: the store
//! contract, idempotency and approvals shared by separate engines (workers), a server that
//! is down (the calls that need it end `unavailable`, retryable, and nothing ran), and
//! PostgreSQL's migrations raced by many workers; 4 OS processes × 250 concurrent duplicates
//! of one idempotent call run it once.
//!
//! The processes are this test binary run again with `TOOLJIG_DUPES_ROLE` set, running the
//! ignored `dupes_role` helper below.

#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis.rs"]
mod redis_support;
#[path = "support/roles.rs"]
mod roles;

use postgres::Scratch;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::store::contract;
use tooljig::*;

fn open(scratch: &Scratch) -> Arc<dyn StateStore> {
    Arc::new(PostgresStore::open(&scratch.url).unwrap())
}

/// A place of its own on each server that is up: its URL, and what cleans it up when dropped.
async fn backends(tag: &str) -> Vec<(String, Box<dyn std::any::Any>)> {
    let mut out: Vec<(String, Box<dyn std::any::Any>)> = Vec::new();
    if let Some(s) = Scratch::new(tag).await {
        out.push((s.url.clone(), Box::new(s)));
    }
    if let Some(p) = redis_support::Prefix::new(tag) {
        out.push((p.url.clone(), Box::new(p)));
    }
    if let Some(c) = redis_cluster::Cluster::start(tag) {
        out.push((c.url.clone(), Box::new(c)));
    }
    out
}

fn open_url(url: &str) -> Arc<dyn StateStore> {
    StoreSpec::parse(&json!(url)).unwrap().open().unwrap()
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
    for (url, _cleanup) in backends("contract").await {
        contract::check(open_url(&url)).await;
    }
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
    for (url, _cleanup) in backends("dupes").await {
        duplicates_run_once(&url).await;
    }
}

async fn duplicates_run_once(url: &str) {
    let runs = Arc::new(AtomicUsize::new(0));
    let workers: Vec<Arc<Engine>> = (0..4)
        .map(|_| Arc::new(worker(open_url(url), runs.clone())))
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
    for (url, _cleanup) in backends("approve").await {
        suspended_here_resumed_there(&url).await;
    }
}

async fn suspended_here_resumed_there(url: &str) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (a, b, c) = (
        worker(open_url(url), runs.clone()),
        worker(open_url(url), runs.clone()),
        worker(open_url(url), runs.clone()),
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
async fn a_server_that_is_down_refuses_calls_retryably_and_runs_nothing() {
    // Nothing listens on port 1: every connection is refused at once.
    for url in [
        "postgres://postgres@127.0.0.1:1/test?schema=down",
        "redis://127.0.0.1:1",
    ] {
        down(url).await;
    }
}

async fn down(url: &str) {
    let store = open_url(url);
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

const ROLE: &str = "TOOLJIG_DUPES_ROLE";
const EFFECTS: &str = "TOOLJIG_DUPES_EFFECTS";

#[test]
#[ignore = "a helper process of `duplicates_from_four_processes_run_once`"]
fn dupes_role() {
    let Ok(url) = std::env::var(ROLE) else {
        return;
    };
    let effects = std::env::var(EFFECTS).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let envelopes = rt.block_on(async move {
        let engine = Engine::new().with_state_store(open_url(&url));
        let pay = move |a: Value, _| {
            let effects = effects.clone();
            async move {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&effects)
                    .unwrap();
                writeln!(f, "paid pid={}", std::process::id()).unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(json!({"paid": a["amount"]}))
            }
        };
        engine
            .register(
                Tool::from_fn("pay", "Pays.", json!({"type": "object"}), pay)
                    .policy(Policy::default().idempotent(IdempotencyMode::Arguments)),
            )
            .unwrap();
        let engine = Arc::new(engine);
        let tasks: Vec<_> = (0..250)
            .map(|i| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    engine
                        .run(
                            vec![Call::new(format!("c{i}"), "pay", json!({"amount": 9}))],
                            Caller::principal("ana"),
                            BatchOptions::default(),
                        )
                        .await
                        .results
                        .remove(0)
                        .envelope
                        .to_value()
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    println!("ENVELOPES {}", Value::Array(envelopes));
}

#[test]
fn duplicates_from_four_processes_run_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let places = rt.block_on(backends("procs"));
    for (url, _cleanup) in &places {
        let dir = tempfile::tempdir().unwrap();
        let effects = dir.path().join("effects.txt");
        let effects = effects.to_string_lossy();
        let children: Vec<_> = (0..4)
            .map(|_| roles::spawn("dupes_role", &[(ROLE, url), (EFFECTS, &effects)]))
            .collect();
        let mut all: Vec<Value> = Vec::new();
        for child in children {
            all.extend(
                serde_json::from_str::<Vec<Value>>(&roles::answer(child, "ENVELOPES ")).unwrap(),
            );
        }
        assert_eq!(all.len(), 1000);
        assert!(
            all.iter()
                .all(|e| e == &json!({"ok": true, "data": {"paid": 9}})),
            "{url}: every duplicate shares the one result"
        );
        let paid = std::fs::read_to_string(&*effects).unwrap();
        assert_eq!(
            paid.lines().count(),
            1,
            "{url}: one execution in all: {paid}"
        );
    }
}

/// Every connection of this test's pool is cut by the server, mid-run, twice: the calls that
/// were using one end `unavailable` or finish; nothing is half-written (every finished call's
/// result replays, every refused one runs when sent again); the audit log, written through
/// the cuts, is one intact chain with every record once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_cut_by_the_server_mid_run_lose_nothing() {
    let Some(scratch) = Scratch::new("cut").await else {
        return;
    };
    // A name of this test's own, so the cut reaches no other test's connections.
    let name = scratch.schema.clone();
    let url = format!("{}&application_name={name}", scratch.url);
    let engine = Arc::new(
        EngineOptions::from_value(json!({"state_store": &url, "audit": &url}))
            .and_then(EngineOptions::build)
            .unwrap(),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    engine
        .register(
            Tool::from_fn(
                "pay",
                "Pays.",
                json!({"type": "object"}),
                move |a: Value, _| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        Ok(json!({"paid": a["n"]}))
                    }
                },
            )
            .policy({
                // A call whose record was cut off is taken over soon, not after 30 s.
                let mut p = Policy::default().idempotent(IdempotencyMode::Arguments);
                p.idempotency.lease_ms = Some(300);
                p
            }),
        )
        .unwrap();
    let batch = |from: u64| {
        (0..20)
            .map(|i| Call::new(format!("c{i}"), "pay", json!({"n": from + i})))
            .collect::<Vec<_>>()
    };
    let cut = async {
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(40)).await;
            scratch
                .execute(&format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{name}'"
                ))
                .await
                .unwrap();
        }
    };
    let work = async {
        let mut out = Vec::new();
        for round in 0..10u64 {
            out.push(
                engine
                    .run(
                        batch(round * 20),
                        Caller::principal("ana"),
                        BatchOptions::default(),
                    )
                    .await,
            );
        }
        out
    };
    let ((), outs) = tokio::join!(cut, work);
    let (mut ok, mut refused, mut unrecorded) = (0, 0, 0);
    for r in outs.iter().flat_map(|o| &o.results) {
        let e = r.envelope.to_value();
        if r.envelope.is_ok() {
            ok += 1;
            // Ran, but the cut kept its result from the store: a retry may run it again,
            // with the same idempotency key.
            unrecorded += usize::from(
                r.detail
                    .as_deref()
                    .is_some_and(|d| d.contains("did not record")),
            );
        } else {
            assert_eq!(e["error"]["code"], "unavailable", "{e}");
            assert_eq!(e["error"]["retryable"], true);
            refused += 1;
        }
    }
    assert_eq!(ok + refused, 200);
    // Everything again, now that the pool has new connections: finished calls replay, and
    // refused ones run (or replay, if they ran before their record could be written).
    let before = runs.load(Ordering::SeqCst);
    for round in 0..10u64 {
        let out = engine
            .run(
                batch(round * 20),
                Caller::principal("ana"),
                BatchOptions::default(),
            )
            .await;
        assert!(out.results.iter().all(|r| r.envelope.is_ok()), "{out:?}");
    }
    assert!(
        runs.load(Ordering::SeqCst) - before <= refused + unrecorded,
        "only calls refused or unrecorded ran again"
    );
    let audit = engine.audit().unwrap();
    audit.flush().await.unwrap();
    let report = audit.verify().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 400, "every record once: {report:?}");
    eprintln!(
        "{ok} finished ({unrecorded} unrecorded) and {refused} refused while their connections were cut"
    );
}
