//! Rate limits shared through Redis, against the real server: a global limit shared by three
//! OS processes admits exactly its budget in all; per-principal budgets stay apart across
//! workers; a refused call says how long to wait; Redis unreachable fails closed with the
//! retryable `unavailable` and runs nothing. Each test has its own key prefix, deleted after.
//!
//! The processes are this test binary run again with `TOOLJIG_LIMIT_ROLE` set, running the
//! ignored `limit_role` helper below.

#[path = "support/redis.rs"]
mod redis_support;
#[path = "support/roles.rs"]
mod roles;

use redis_support::Prefix;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::*;

const ROLE: &str = "TOOLJIG_LIMIT_ROLE";
const URL: &str = "TOOLJIG_LIMIT_URL";

/// A worker: `ping`, limited to 10 calls a minute, for everyone together (`global`) or per
/// principal; counts its runs.
fn worker(url: &str, scope: RateScope, runs: Arc<AtomicUsize>) -> Engine {
    let engine = EngineOptions::from_value(json!({"rate_limiter": url}))
        .unwrap()
        .build()
        .unwrap();
    let mut limit = RateLimit::per_principal(10, Duration::from_secs(60));
    limit.scope = scope;
    engine
        .register(
            Tool::from_fn(
                "ping",
                "Pings.",
                json!({"type": "object"}),
                move |_: Value, _| {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(json!("pong"))
                    }
                },
            )
            .policy(Policy::default().rate_limit(limit)),
        )
        .unwrap();
    engine
}

async fn ping(engine: &Engine, who: &str, n: usize) -> Vec<CallResult> {
    let calls = (0..n)
        .map(|i| Call::new(format!("c{i}"), "ping", json!({})))
        .collect();
    engine
        .run(calls, Caller::principal(who), BatchOptions::default())
        .await
        .results
}

#[test]
#[ignore = "a helper process of `a_global_limit_holds_across_processes`"]
fn limit_role() {
    let Ok(who) = std::env::var(ROLE) else {
        return;
    };
    let url = std::env::var(URL).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ok = rt.block_on(async {
        let engine = worker(&url, RateScope::Global, Arc::default());
        let mut ok = 0;
        // One call at a time, so the three processes interleave.
        for _ in 0..8 {
            ok += ping(&engine, &who, 1)
                .await
                .iter()
                .filter(|r| r.envelope.is_ok())
                .count();
        }
        ok
    });
    println!("ADMITTED {ok}");
}

#[test]
fn a_global_limit_holds_across_processes() {
    let Some(prefix) = Prefix::new("global") else {
        return;
    };
    let children: Vec<_> = ["ana", "bo", "cy"]
        .iter()
        .map(|who| roles::spawn("limit_role", &[(ROLE, who), (URL, &prefix.url)]))
        .collect();
    let admitted: usize = children
        .into_iter()
        .map(|c| {
            roles::answer(c, "ADMITTED ")
                .trim()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(admitted, 10, "24 calls from 3 processes, a budget of 10");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_principal_budgets_are_shared_by_workers_and_apart_by_principal() {
    let Some(prefix) = Prefix::new("principal") else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let (a, b) = (
        worker(&prefix.url, RateScope::Principal, runs.clone()),
        worker(&prefix.url, RateScope::Principal, runs.clone()),
    );
    let first = ping(&a, "ana", 6).await;
    let second = ping(&b, "ana", 6).await;
    let ok = first
        .iter()
        .chain(&second)
        .filter(|r| r.envelope.is_ok())
        .count();
    assert_eq!(ok, 10, "ana's budget is one, whichever worker");
    let refused = second.iter().find(|r| !r.envelope.is_ok()).unwrap();
    let e = refused.envelope.to_value();
    assert_eq!(e["error"]["code"], "rate_limited");
    let wait = e["error"]["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 6_000, "one cell is 6 s: {wait}");
    assert_eq!(
        ping(&b, "bo", 3)
            .await
            .iter()
            .filter(|r| r.envelope.is_ok())
            .count(),
        3
    );
    assert_eq!(runs.load(Ordering::SeqCst), 13);
    assert!(
        !prefix.keys().is_empty(),
        "the budgets live under the prefix"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_unreachable_fails_closed_and_retryably() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = worker("redis://127.0.0.1:1", RateScope::Global, runs.clone());
    let out = ping(&engine, "ana", 2).await;
    for r in &out {
        let e = r.envelope.to_value();
        assert_eq!(e["error"]["code"], "unavailable", "{e}");
        assert_eq!(e["error"]["retryable"], true);
        assert_eq!(e["error"]["reason"], "limiter_unavailable");
        assert!(r.detail.as_deref().unwrap_or("").contains("Redis"), "{r:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran unlimited");
}
