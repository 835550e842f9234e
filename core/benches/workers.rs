//! What the shared backends cost across processes, measured as a script (not criterion: the
//! figures are totals over processes, and percentiles of single calls):
//!
//! - `scaling`: durable idempotent calls a second on one PostgreSQL database, with 1 to 4
//!   worker processes each running 1,000-call batches for 5 s at once (each worker is this
//!   binary run again with `TOOLJIG_BENCH_WORKER` set);
//! - `limiter`: the time of a one-call batch whose tool has a per-principal rate limit, kept in
//!   the process or shared through Redis: p50 and p99 over 3,000 batches, and the difference.
//!
//! Run with `cargo bench -p tooljig --bench workers`; figures go to `BENCHMARKS.md`. Uses
//! `$TOOLJIG_POSTGRES_URL` and `$TOOLJIG_REDIS_URL` (this machine's servers by default), each
//! part skipped with a message when its server does not answer.

mod support;

use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tooljig::*;

const WORKER: &str = "TOOLJIG_BENCH_WORKER";
const SECONDS: u64 = 5;

fn main() {
    if let Ok(url) = std::env::var(WORKER) {
        return worker(&url);
    }
    // `cargo test` runs bench targets too, without `--bench`: a check that it builds is enough.
    if !std::env::args().any(|a| a == "--bench") {
        println!("workers: run with `cargo bench -p tooljig --bench workers`");
        return;
    }
    scaling();
    limiter();
}

/// One worker process: 1,000-call batches of fresh idempotent calls for `SECONDS`, after a
/// warm-up; prints how many calls it ran.
fn worker(url: &str) {
    let rt = support::runtime();
    rt.block_on(async {
        let store: Arc<dyn StateStore> = Arc::new(PostgresStore::open(url).expect("a URL"));
        let engine = Engine::new().with_state_store(store);
        let noop = |_: Value, _: ToolContext| async { Ok(Value::Null) };
        engine
            .register(
                Tool::from_fn("pay", "No-op, idempotent.", json!({"type": "object"}), noop)
                    .policy(Policy::default().idempotent(IdempotencyMode::Arguments)),
            )
            .expect("registers");
        let nonce = support::unique();
        let batch = |i: u64| -> Vec<Call> {
            (0..1000u64)
                .map(|n| Call::new(format!("c{n}"), "pay", json!({"w": nonce, "i": i, "n": n})))
                .collect()
        };
        let caller = Caller::principal("bench");
        engine
            .run(batch(0), caller.clone(), BatchOptions::default())
            .await;
        let (mut calls, mut i) = (0u64, 1);
        let end = Instant::now() + Duration::from_secs(SECONDS);
        while Instant::now() < end {
            let out = engine
                .run(batch(i), caller.clone(), BatchOptions::default())
                .await;
            assert!(out.results.iter().all(|r| r.envelope.is_ok()), "{out:?}");
            calls += 1000;
            i += 1;
        }
        println!("calls {calls}");
    });
}

fn scaling() {
    let base = support::servers::postgres_base();
    let rt = support::runtime();
    let probe = rt.block_on(tokio_postgres::connect(&base, tokio_postgres::NoTls));
    let Ok((client, conn)) = probe else {
        eprintln!("scaling: skipped, PostgreSQL at {base} does not answer");
        return;
    };
    rt.spawn(conn);
    let schema = format!("tj_bench_workers_{}", support::unique());
    let url = format!("{base}?schema={schema}");
    println!("scaling (PostgreSQL, 1,000-call batches of durable idempotent calls, {SECONDS} s)");
    for n in 1..=4 {
        let children: Vec<_> = (0..n)
            .map(|_| {
                Command::new(std::env::current_exe().expect("this binary"))
                    .env(WORKER, &url)
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("a worker process")
            })
            .collect();
        let mut total = 0u64;
        for child in children {
            let out = child.wait_with_output().expect("the worker ends");
            let text = String::from_utf8_lossy(&out.stdout);
            total += text
                .lines()
                .find_map(|l| l.strip_prefix("calls "))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("a worker failed: {text}"));
        }
        println!(
            "  {n} worker process(es): {:>7.0} calls/s in all",
            total as f64 / SECONDS as f64
        );
    }
    let drop = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
    let _ = rt.block_on(client.execute(drop.as_str(), &[]));
}

fn limiter() {
    let base = support::servers::redis_base();
    let prefix = format!("tj_bench_limiter_{}:", support::unique());
    let shared = RedisLimiter::open(&format!("{base}?prefix={prefix}")).expect("a Redis URL");
    let rt = support::runtime();
    let engine = |limiter: Option<Arc<dyn RateLimiter>>| {
        let mut e = Engine::new();
        if let Some(l) = limiter {
            e = e.with_rate_limiter(l);
        }
        let noop = |_: Value, _: ToolContext| async { Ok(Value::Null) };
        let limit = RateLimit::per_principal(1_000_000, Duration::from_secs(1));
        e.register(
            Tool::from_fn("ping", "No-op, limited.", json!({"type": "object"}), noop)
                .policy(Policy::default().rate_limit(limit)),
        )
        .expect("registers");
        Arc::new(e)
    };
    let local = engine(None);
    let redis = engine(Some(Arc::new(shared)));
    let once = |e: &Arc<Engine>| {
        let e = e.clone();
        rt.block_on(async move {
            let calls = vec![Call::new("c", "ping", json!({}))];
            let started = Instant::now();
            let out = tokio::spawn(async move {
                e.run(calls, Caller::principal("bench"), BatchOptions::default())
                    .await
            })
            .await
            .expect("the batch task");
            (started.elapsed(), out.results[0].envelope.is_ok())
        })
    };
    if !once(&redis).1 {
        eprintln!("limiter: skipped, Redis at {base} does not answer");
        return;
    }
    let sample = |e: &Arc<Engine>| {
        for _ in 0..300 {
            let _ = once(e);
        }
        let mut times: Vec<Duration> = (0..3000).map(|_| once(e).0).collect();
        times.sort();
        (times[times.len() / 2], times[times.len() * 99 / 100])
    };
    let (lp50, lp99) = sample(&local);
    let (rp50, rp99) = sample(&redis);
    println!("limiter (a one-call batch with a per-principal rate limit; 3,000 batches)");
    println!("  in process: p50 {lp50:?}, p99 {lp99:?}");
    println!("  Redis:      p50 {rp50:?}, p99 {rp99:?}");
    println!(
        "  added by Redis: p50 {:?}, p99 {:?}",
        rp50.saturating_sub(lp50),
        rp99.saturating_sub(lp99)
    );
    support::servers::drop_prefix(&prefix);
}
