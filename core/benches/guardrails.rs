//! The cost of the guardrails, measured end to end through `Engine::run`.
//!
//! - `guardrails/bare/N`: the bare path of `benches/engine.rs` (the same no-op tool and
//!   schema, string arguments parsed and validated), measured here too so both figures come
//!   from one run on one machine state.
//! - `guardrails/guarded/N`: the same calls with every check on: enabled flags (settings at
//!   every level), roles, scopes, a hidden argument filled from the caller, the policy hook
//!   (a Rust closure), a per-principal rate limit (in-process GCRA), the read cache (in
//!   process; a fresh key per call, so each call looks up and stores), argument redaction,
//!   telemetry and an SQLite audit log (WAL, batched writer), flushed before `run` returns.
//!   Target: at most 2x the bare path at the same N.
//!
//! - `guardrails/layers/...`: at N = 1,000, the checks alone (flags, roles, scopes, hidden
//!   argument, hook), then with the rate limit, with the cache, and with audit records built
//!   and handed to a sink that drops them; `guarded` adds SQLite storage on top, and
//!   `guarded_jsonl/1000` JSON Lines storage instead.
//!
//! - `guardrails/sink/{sqlite,jsonl}/1000`: the audit sinks alone, no calls: 1,000 entries of
//!   the record a `guarded` call writes, built beforehand, handed over and flushed. This is the
//!   storage's own cost per record (chain hash, insert or append, commit), to set beside a
//!   whole bare call.
//!
//! Run with `cargo bench -p tooljig --bench guardrails`; figures go to `BENCHMARKS.md`. For
//! instruction counts, see `counted` at the end.

mod support;

use support::engines::{ALL, Layers, bare, caller, calls, guarded, sink};

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tooljig::*;

/// The allocator the Python and Node packages ship with (their `lib.rs` says why); a Rust app
/// picks its own, and `TOOLJIG_BENCH_COUNT` runs of a build without this line give the
/// system allocator's figures (BENCHMARKS.md has both).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs each batch in a task of the runtime, as an async app or a binding does (the driver
/// then shares the 2 worker threads with the calls, instead of running on a third thread
/// outside the runtime, whose placement made figures swing by half from run to run).
fn bench_engine(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    name: &str,
    engine: &Arc<Engine>,
    n: usize,
    nonce: &AtomicU64,
) {
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(format!("{name}/{n}"), |b| {
        b.to_async(rt).iter_batched(
            || calls(n, nonce),
            |calls| {
                let engine = engine.clone();
                async move {
                    let out = tokio::spawn(async move {
                        engine.run(calls, caller(), BatchOptions::default()).await
                    })
                    .await
                    .expect("the batch task");
                    debug_assert!(out.results.iter().all(|r| r.envelope.is_ok()));
                    black_box(out)
                }
            },
            BatchSize::LargeInput,
        )
    });
}

fn overhead(c: &mut Criterion) {
    let rt = support::runtime();
    let dir = tempfile::tempdir().expect("a temp dir");
    let bare = Arc::new(bare());
    let all = Arc::new(guarded(ALL, dir.path()));
    let nonce = AtomicU64::new(0);
    let mut group = c.benchmark_group("guardrails");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    for n in [100usize, 1_000, 10_000] {
        bench_engine(&mut group, &rt, "bare", &bare, n, &nonce);
        bench_engine(&mut group, &rt, "guarded", &all, n, &nonce);
    }
    // Layer by layer at one size, to see where the cost goes.
    let layers = [
        (
            "layers/checks",
            Layers {
                limit: false,
                cache: false,
                audit: None,
            },
        ),
        (
            "layers/+limit",
            Layers {
                limit: true,
                cache: false,
                audit: None,
            },
        ),
        (
            "layers/+cache",
            Layers {
                limit: true,
                cache: true,
                audit: None,
            },
        ),
        (
            "layers/+audit_records",
            Layers {
                limit: true,
                cache: true,
                audit: Some("discard"),
            },
        ),
        (
            "guarded_jsonl",
            Layers {
                limit: true,
                cache: true,
                audit: Some("jsonl"),
            },
        ),
    ];
    for (name, l) in layers {
        let engine = Arc::new(guarded(l, dir.path()));
        bench_engine(&mut group, &rt, name, &engine, 1_000, &nonce);
    }
    // The same limit shared through Redis (when the server answers and the crate has it).
    #[cfg(feature = "redis")]
    {
        // One script a check.
        let redis_url =
            std::env::var("TOOLJIG_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        let shared = RedisLimiter::open(&format!(
            "{redis_url}?prefix=tj_bench_{}:",
            std::process::id()
        ))
        .expect("a Redis URL");
        let limited = Layers {
            limit: true,
            cache: false,
            audit: None,
        };
        let engine = Arc::new(guarded(limited, dir.path()).with_rate_limiter(Arc::new(shared)));
        let probe = rt.block_on(engine.run(calls(1, &nonce), caller(), BatchOptions::default()));
        if probe.results.iter().all(|r| r.envelope.is_ok()) {
            bench_engine(
                &mut group,
                &rt,
                "layers/+limit_redis",
                &engine,
                1_000,
                &nonce,
            );
            bench_engine(&mut group, &rt, "layers/+limit_redis", &engine, 1, &nonce);
            bench_engine(
                &mut group,
                &rt,
                "layers/+limit",
                &Arc::new(guarded(limited, dir.path())),
                1,
                &nonce,
            );
        }
    }
    for kind in ["sqlite", "jsonl"] {
        let sink = sink(kind, dir.path());
        group.throughput(Throughput::Elements(1_000));
        group.bench_function(format!("sink/{kind}/1000"), |b| {
            b.to_async(&rt).iter_batched(
                || entries(1_000),
                |entries| {
                    let sink = sink.clone();
                    async move {
                        sink.record_all(entries);
                        sink.flush().await.expect("the records are durable");
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// `n` entries of the record a `guarded` call leaves (593 bytes once linked), each its own.
fn entries(n: usize) -> Vec<AuditEntry> {
    (0..n)
        .map(|i| {
            let record: AuditRecord = serde_json::from_value(json!({
                "time_ms": tooljig::audit::record::now_ms(), "principal": "u1", "tenant": "acme",
                "session": null, "tool": "noop", "call_id": format!("c{i}"),
                "arguments": {"city": format!("sha256:{}", "6e".repeat(32)), "days": i + 1, "user_id": "u1"},
                "hidden": [{"parameter": "user_id", "source": "principal", "injected": true, "supplied": "spoof"}],
                "outcome": "ok", "code": null, "message": null, "detail": null, "output": null,
                "risk": "low", "effect": "read", "duration_us": 14, "attempts": 1,
                "cached": false, "replayed": false, "repaired": false, "approval": null
            }))
            .expect("a record");
            AuditEntry::new(record)
        })
        .collect()
}

criterion_group!(benches, overhead);

/// `TOOLJIG_BENCH_COUNT=K` runs K batches of 1,000 calls of the engine `TOOLJIG_BENCH_LAYERS`
/// names (`bare`, `checks`, `+limit`, `+cache`, `+audit_records`, `guarded`, or
/// `guarded_jsonl`: every check with a JSON Lines audit log instead of SQLite), or K chunks of
/// 1,000 ready entries written to a sink alone (`sink_sqlite`, `sink_jsonl`), and nothing
/// else: a fixed workload for `valgrind --tool=callgrind`, whose instruction counts do not
/// move with the machine's load (the difference between two counts, over the calls between
/// them, is a per-call cost free of setup).
fn counted(k: usize) {
    let which = std::env::var("TOOLJIG_BENCH_LAYERS").unwrap_or_else(|_| "guarded".into());
    let dir = tempfile::tempdir().expect("a temp dir");
    if let Some(kind) = which.strip_prefix("sink_") {
        let sink = sink(kind, dir.path());
        let chunks: Vec<_> = (0..k).map(|_| entries(1_000)).collect();
        let rt = support::runtime();
        let (started, cpu) = (std::time::Instant::now(), cpu_seconds());
        for chunk in chunks {
            sink.record_all(chunk);
            rt.block_on(sink.flush()).expect("the records are durable");
        }
        // The entries were built above: time only their writing.
        eprintln!(
            "{k} x 1,000 records stored: {:.3} s wall, {:.2} s CPU",
            started.elapsed().as_secs_f64(),
            cpu_seconds() - cpu
        );
        return;
    }
    let (limit, cache, audit) = match which.as_str() {
        "bare" => (false, false, None),
        "checks" => (false, false, None),
        "+limit" => (true, false, None),
        "+cache" => (true, true, None),
        "+audit_records" => (true, true, Some("discard")),
        "guarded_jsonl" => (true, true, Some("jsonl")),
        _ => (true, true, Some("sqlite")),
    };
    let engine = Arc::new(if which == "bare" {
        bare()
    } else {
        guarded(
            Layers {
                limit,
                cache,
                audit,
            },
            dir.path(),
        )
    });
    let rt = support::runtime();
    let nonce = AtomicU64::new(0);
    for _ in 0..k {
        let (engine, calls) = (engine.clone(), calls(1_000, &nonce));
        let out = rt.block_on(async move {
            tokio::spawn(async move { engine.run(calls, caller(), BatchOptions::default()).await })
                .await
                .expect("the batch task")
        });
        assert!(out.results.iter().all(|r| r.envelope.is_ok()));
    }
}

/// CPU seconds (user + system) the process has used, all threads (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime, fields 14 and 15 of proc(5), in clock ticks of 1/100 s.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    if let Some(k) = std::env::var("TOOLJIG_BENCH_COUNT")
        .ok()
        .and_then(|k| k.parse().ok())
    {
        return counted(k);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
