//! The engine's own cost, measured end to end through `Engine::run`.
//!
//! - `overhead/N`: a batch of N no-op calls (string arguments parsed, validated against a
//!   typical schema, run, output checked): the per-call cost of the whole path. Target:
//!   at most 5 µs per call at N = 10,000 on a 2-core machine.
//! - `parallel_sleep/100x50ms`: 100 independent calls that each sleep 50 ms. Target: ≤ 55 ms.
//! - `chain/10x10ms/{sleep,busy}`: 10 calls, each depending on the one before, each taking
//!   10 ms (a tokio sleep, or a precise std sleep on a blocking thread). Target: ≤ 110 ms.
//! - `baseline/*`: the same waits without tooljig, to tell the engine's cost from the timer's.
//!
//! Run with `cargo bench -p tooljig --bench engine`; figures go to `BENCHMARKS.md`.

mod support;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Duration;
use tooljig::{BatchOptions, Call, Caller, Engine, Tool};

fn engine() -> Engine {
    let engine = Engine::new();
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    });
    engine
        .register(Tool::from_fn(
            "noop",
            "Does nothing.",
            schema,
            |_, _| async { Ok(Value::Null) },
        ))
        .expect("noop registers");
    engine
        .register(Tool::from_fn(
            "busy",
            "Takes `ms` milliseconds on a blocking thread (a precise std sleep).",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
            |args, _| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::task::spawn_blocking(move || std::thread::sleep(Duration::from_millis(ms)))
                    .await
                    .map_err(tooljig::HandlerError::unexpected)?;
                Ok(Value::Null)
            },
        ))
        .expect("busy registers");
    engine
        .register(Tool::from_fn(
            "sleep",
            "Sleeps for `ms` milliseconds.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
            |args, _| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Value::Null)
            },
        ))
        .expect("sleep registers");
    engine
}

fn noop_calls(n: usize) -> Vec<Call> {
    (0..n)
        .map(|i| Call::new(format!("c{i}"), "noop", r#"{"city": "Paris", "days": 3}"#))
        .collect()
}

fn overhead(c: &mut Criterion) {
    let rt = support::runtime();
    let engine = engine();
    let mut group = c.benchmark_group("overhead");
    for n in [1usize, 100, 1_000, 10_000] {
        group.throughput(Throughput::Elements(n as u64));
        let calls = noop_calls(n);
        group.bench_function(n.to_string(), |b| {
            b.to_async(&rt).iter_batched(
                || calls.clone(),
                |calls| async {
                    black_box(
                        engine
                            .run(calls, Caller::default(), BatchOptions::default())
                            .await,
                    )
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// A tool after itself: its calls run one by one. Planning orders them with one edge a call,
/// so a large batch costs about what the same calls cost in parallel.
fn serial(c: &mut Criterion) {
    let rt = support::runtime();
    let engine = Engine::new();
    engine
        .register(
            Tool::from_fn(
                "append",
                "Appends.",
                json!({"type": "object"}),
                |_, _| async { Ok::<_, tooljig::HandlerError>(Value::Null) },
            )
            .policy(tooljig::Policy {
                after: vec!["append".into()],
                ..Default::default()
            }),
        )
        .expect("append registers");
    let calls: Vec<Call> = (0..10_000)
        .map(|i| Call::new(format!("c{i}"), "append", json!({})))
        .collect();
    let mut group = c.benchmark_group("overhead");
    group.sample_size(10);
    group.bench_function("after_itself/10000", |b| {
        b.to_async(&rt).iter_batched(
            || calls.clone(),
            |calls| async {
                black_box(
                    engine
                        .run(calls, Caller::default(), BatchOptions::default())
                        .await,
                )
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn sleeping(c: &mut Criterion) {
    let rt = support::runtime();
    let engine = engine();
    let mut group = c.benchmark_group("latency");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));

    let parallel: Vec<Call> = (0..100)
        .map(|i| Call::new(format!("p{i}"), "sleep", json!({"ms": 50})))
        .collect();
    group.bench_function("parallel_sleep/100x50ms", |b| {
        b.to_async(&rt).iter_batched(
            || parallel.clone(),
            |calls| async {
                let out = engine
                    .run(calls, Caller::default(), BatchOptions::default())
                    .await;
                assert!(out.results.iter().all(|r| r.envelope.is_ok()));
                out
            },
            BatchSize::SmallInput,
        )
    });

    for tool in ["sleep", "busy"] {
        let chain: Vec<Call> = (0..10)
            .map(|i| {
                let call = Call::new(format!("s{i}"), tool, json!({"ms": 10}));
                if i == 0 {
                    call
                } else {
                    call.depends_on(format!("s{}", i - 1))
                }
            })
            .collect();
        group.bench_function(format!("chain/10x10ms/{tool}"), |b| {
            b.to_async(&rt).iter_batched(
                || chain.clone(),
                |calls| async {
                    let out = engine
                        .run(calls, Caller::default(), BatchOptions::default())
                        .await;
                    assert!(out.results.iter().all(|r| r.envelope.is_ok()));
                    out
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// The same waits without tooljig, to tell the engine's cost from the timer's: tokio's timer
/// has a 1 ms resolution and rounds every sleep up to its next tick.
fn baseline(c: &mut Criterion) {
    let rt = support::runtime();
    let mut group = c.benchmark_group("baseline");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("tokio_parallel_sleep/100x50ms", |b| {
        b.to_async(&rt).iter(|| async {
            let sleeps =
                (0..100).map(|_| tokio::spawn(tokio::time::sleep(Duration::from_millis(50))));
            futures::future::join_all(sleeps).await
        })
    });
    group.bench_function("tokio_sleep_chain/10x10ms", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..10 {
                tokio::spawn(tokio::time::sleep(Duration::from_millis(10)))
                    .await
                    .expect("the sleep task");
            }
        })
    });
    group.bench_function("std_sleep_chain/10x10ms", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..10 {
                tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(10)))
                    .await
                    .expect("the blocking sleep");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, overhead, serial, sleeping, baseline);
criterion_main!(benches);
