//! Step 6 through the engine: budgets per tool per principal, tenant or everyone.

mod guardrails_common;

use guardrails_common::*;
use serde_json::json;
use std::time::Duration;
use tooljig::*;

fn engine(runs: &Runs, scope: RateScope) -> Engine {
    let e = Engine::new();
    let limit = RateLimit {
        max: 2,
        per_ms: 300,
        burst: None,
        scope,
    };
    e.register(echo(
        "limited",
        object(),
        Policy::default().rate_limit(limit),
        runs,
    ))
    .unwrap();
    e.register(echo("free", object(), Policy::default(), runs))
        .unwrap();
    e
}

fn calls(tool: &str, n: usize) -> Vec<Call> {
    (0..n)
        .map(|i| Call::new(format!("c{i}"), tool, json!({})))
        .collect()
}

#[tokio::test]
async fn a_flood_is_cut_at_the_burst_with_a_retry_time() {
    let runs = Runs::default();
    let e = engine(&runs, RateScope::Principal);
    let out = run(&e, calls("limited", 5), caller("u1")).await;
    let ok = out.results.iter().filter(|r| r.envelope.is_ok()).count();
    assert_eq!(ok, 2);
    assert_eq!(runs.get(), 2);
    for r in out.results.iter().filter(|r| !r.envelope.is_ok()) {
        let v = r.envelope.to_value();
        assert_eq!(v["error"]["code"], "rate_limited");
        assert_eq!(v["error"]["retryable"], true);
        let wait = v["error"]["retry_after_ms"].as_u64().unwrap();
        assert!((1..=300).contains(&wait), "{wait}");
    }
    // Another principal has its own budget; an unlimited tool is not touched.
    let out = run(&e, calls("limited", 2), caller("u2")).await;
    assert!(out.results.iter().all(|r| r.envelope.is_ok()));
    let out = run(&e, calls("free", 10), caller("u1")).await;
    assert!(out.results.iter().all(|r| r.envelope.is_ok()));
}

#[tokio::test]
async fn the_budget_refills_after_the_advertised_wait() {
    let runs = Runs::default();
    let e = engine(&runs, RateScope::Principal);
    let out = run(&e, calls("limited", 3), caller("u1")).await;
    let wait = out.results[2].envelope.to_value()["error"]["retry_after_ms"]
        .as_u64()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let out = run(&e, calls("limited", 1), caller("u1")).await;
    assert!(
        out.results[0].envelope.is_ok(),
        "{:?}",
        out.results[0].envelope
    );
}

#[tokio::test]
async fn tenant_and_global_scopes_share_a_budget() {
    let e = engine(&Runs::default(), RateScope::Tenant);
    assert!(
        run(&e, calls("limited", 2), caller("u1"))
            .await
            .results
            .iter()
            .all(|r| r.envelope.is_ok())
    );
    let out = run(&e, calls("limited", 1), caller("u2")).await;
    assert_eq!(
        code(&out, "c0").as_deref(),
        Some("rate_limited"),
        "same tenant"
    );
    let mut other = caller("u3");
    other.tenant = Some("globex".into());
    assert!(
        run(&e, calls("limited", 1), other.clone()).await.results[0]
            .envelope
            .is_ok()
    );

    let e = engine(&Runs::default(), RateScope::Global);
    assert!(
        run(&e, calls("limited", 2), caller("u1"))
            .await
            .results
            .iter()
            .all(|r| r.envelope.is_ok())
    );
    assert_eq!(
        code(&run(&e, calls("limited", 1), other).await, "c0").as_deref(),
        Some("rate_limited")
    );
}

#[tokio::test]
async fn a_bad_limit_is_refused_at_registration() {
    let e = Engine::new();
    let bad = Policy::default().rate_limit(RateLimit::per_principal(0, Duration::from_secs(1)));
    let err = e
        .register(echo("t", object(), bad, &Runs::default()))
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
}
