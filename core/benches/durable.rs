//! The cost of durable-run bookkeeping, end to end through `Engine::run`, on the SQLite
//! state store (one file, WAL, every write answered once the log holding it is synced) and, for
//! comparison, on the in-memory store and with no bookkeeping at all.
//!
//! - `idempotent/{store}`: batches of 100 no-op calls, each with fresh arguments of a tool
//!   idempotent by arguments: a read, an in-flight claim and a stored envelope per call.
//! - `replay/{store}`: the same 100 calls again: each is one read and a replay.
//! - `approval/{store}`: 100 calls that need approval (a request each and the run record),
//!   then a decision per call, then one resume that runs them all.
//! - `plain/memory`: the same 100 no-op calls without idempotency or approval.
//!
//! - `batch/{store}/{n}`: idempotent calls in batches of 1 to 1,000 (how durable cost per
//!   call falls as batches grow).
//!
//! The PostgreSQL and Redis stores join when their servers answer (`$TOOLJIG_POSTGRES_URL`,
//! default `postgres://postgres@127.0.0.1:5432/test`, in a schema of the bench's own, dropped
//! after; `$TOOLJIG_REDIS_URL`, default `redis://127.0.0.1:6379`, under a prefix of its own).
//!
//! Run with `cargo bench -p tooljig --bench durable`; figures go to `BENCHMARKS.md`.

mod support;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tooljig::*;

/// The allocator the Python and Node packages ship with (their `lib.rs` says why), as the
/// guardrails bench does; a Rust app picks its own.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 100;

fn engine(store: Option<Arc<dyn StateStore>>) -> Engine {
    let mut engine = Engine::new();
    if let Some(s) = store {
        engine = engine.with_state_store(s);
    }
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let noop = |_: Value, _: ToolContext| async { Ok(Value::Null) };
    engine
        .register(Tool::from_fn("plain", "No-op.", schema.clone(), noop))
        .expect("registers");
    engine
        .register(
            Tool::from_fn("pay", "No-op, idempotent.", schema.clone(), noop)
                .policy(Policy::default().idempotent(IdempotencyMode::Arguments)),
        )
        .expect("registers");
    engine
        .register(
            Tool::from_fn("send", "No-op, needs approval.", schema, noop)
                .policy(Policy::default().require_approval()),
        )
        .expect("registers");
    engine
}

fn calls(tool: &str, from: u64) -> Vec<Call> {
    calls_n(tool, from, N)
}

fn calls_n(tool: &str, from: u64, n: usize) -> Vec<Call> {
    (0..n as u64)
        .map(|i| Call::new(format!("c{i}"), tool, json!({"n": from + i})))
        .collect()
}

fn sqlite() -> (Arc<dyn StateStore>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("tooljig-bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join(format!("state-{}.db", support::unique()));
    (
        Arc::new(SqliteStore::open(&path).expect("the store opens")),
        dir,
    )
}

/// A PostgreSQL store in a schema of the bench's own, and the schema, when the server answers
/// (and the crate has the `postgres` feature).
#[cfg(feature = "postgres")]
fn postgres(rt: &tokio::runtime::Runtime) -> Option<(Arc<dyn StateStore>, String)> {
    let base = std::env::var("TOOLJIG_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    // One connection proves the server answers.
    drop(
        rt.block_on(tokio_postgres::connect(&base, tokio_postgres::NoTls))
            .ok()?,
    );
    let schema = format!("tj_bench_{}", support::unique());
    let store = PostgresStore::open(&format!("{base}?schema={schema}")).ok()?;
    Some((Arc::new(store), schema))
}

/// No PostgreSQL store in a build without the feature.
#[cfg(not(feature = "postgres"))]
fn postgres(_: &tokio::runtime::Runtime) -> Option<(Arc<dyn StateStore>, String)> {
    None
}

/// A Redis store under a prefix of the bench's own, and the prefix, when the server answers
/// (and the crate has the `redis` feature).
#[cfg(feature = "redis")]
fn redis(rt: &tokio::runtime::Runtime) -> Option<(Arc<dyn StateStore>, String)> {
    let base =
        std::env::var("TOOLJIG_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("tj_bench_{}:", support::unique());
    let store = RedisStore::open(&format!("{base}?prefix={prefix}")).ok()?;
    // One round trip proves the server answers.
    rt.block_on(store.get(tooljig::store::Namespace::Run, "probe"))
        .ok()?;
    Some((Arc::new(store), prefix))
}

/// No Redis store in a build without the feature.
#[cfg(not(feature = "redis"))]
fn redis(_: &tokio::runtime::Runtime) -> Option<(Arc<dyn StateStore>, String)> {
    None
}

fn caller() -> Caller {
    Caller::principal("bench")
}

fn bench(c: &mut Criterion) {
    let rt = support::runtime();
    let mut g = c.benchmark_group("durable");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(8));

    let (sql, dir) = sqlite();
    let pg = postgres(&rt);
    let rd = redis(&rt);
    let mut stores = vec![("sqlite", Some(sql.clone())), ("memory", None)];
    if let Some((store, _)) = &pg {
        stores.push(("postgres", Some(store.clone())));
    }
    if let Some((store, _)) = &rd {
        stores.push(("redis", Some(store.clone())));
    }
    for (label, store) in stores.clone() {
        let e = engine(store);
        let next = AtomicU64::new(0);
        g.bench_function(format!("idempotent/{label}"), |b| {
            b.to_async(&rt).iter(|| {
                let from = next.fetch_add(N as u64, Ordering::Relaxed);
                let e = &e;
                async move {
                    let out = e
                        .run(calls("pay", from), caller(), BatchOptions::default())
                        .await;
                    assert!(
                        out.results
                            .iter()
                            .all(|r| r.envelope.is_ok() && !r.replayed)
                    );
                }
            })
        });
        rt.block_on(e.run(calls("pay", 1 << 40), caller(), BatchOptions::default()));
        g.bench_function(format!("replay/{label}"), |b| {
            b.to_async(&rt).iter(|| async {
                let out = e
                    .run(calls("pay", 1 << 40), caller(), BatchOptions::default())
                    .await;
                assert!(out.results.iter().all(|r| r.replayed));
            })
        });
        g.bench_function(format!("approval/{label}"), |b| {
            b.to_async(&rt).iter(|| async {
                let out = e
                    .run(calls("send", 0), caller(), BatchOptions::default())
                    .await;
                let run_id = out.run_id.expect("a suspended run");
                for r in &out.results {
                    let a = r.approval.as_ref().expect("pending");
                    let decision = Decision::Approve {
                        arguments_hash: a.arguments_hash.clone(),
                        remember: None,
                    };
                    e.decide(a.id.as_deref().unwrap_or(""), decision, &caller())
                        .await
                        .expect("approved");
                }
                let done = e.resume(&run_id).await.expect("resumed");
                assert!(done.results.iter().all(|r| r.envelope.is_ok()));
            })
        });
    }
    let e = engine(None);
    g.bench_function("plain/memory", |b| {
        b.to_async(&rt).iter(|| async {
            e.run(calls("plain", 0), caller(), BatchOptions::default())
                .await
        })
    });
    g.finish();

    let mut g = c.benchmark_group("durable_batch");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    for (label, store) in stores.into_iter().filter(|(l, _)| *l != "memory") {
        let e = engine(store);
        let next = AtomicU64::new(1 << 50);
        for n in [1usize, 10, 100, 1000] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(format!("{label}/{n}"), |b| {
                b.to_async(&rt).iter(|| {
                    let from = next.fetch_add(n as u64, Ordering::Relaxed);
                    let e = &e;
                    async move {
                        let out = e
                            .run(calls_n("pay", from, n), caller(), BatchOptions::default())
                            .await;
                        assert!(out.results.iter().all(|r| r.envelope.is_ok()));
                    }
                })
            });
        }
    }
    g.finish();
    drop(sql);
    std::fs::remove_dir_all(dir).ok();
    #[cfg(feature = "postgres")]
    if let Some((_, schema)) = pg {
        support::servers::drop_schema(&rt, &schema);
    }
    #[cfg(feature = "redis")]
    if let Some((_, prefix)) = rd {
        support::servers::drop_prefix(&prefix);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
