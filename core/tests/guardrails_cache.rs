//! Step 7 (cache half) through the engine: canonical keys, scoping, TTL, read tools only.

mod guardrails_common;

use guardrails_common::*;
use serde_json::json;
use std::time::Duration;
use tooljig::*;

fn engine(runs: &Runs, scope: CacheScope, ttl_ms: u64) -> Engine {
    let e = Engine::new();
    let policy = Policy::default()
        .effect(Effect::Read)
        .cache(CachePolicy { ttl_ms, scope });
    e.register(echo("search", object(), policy, runs)).unwrap();
    e
}

#[tokio::test]
async fn a_repeat_in_another_key_order_and_spacing_is_served_from_the_cache() {
    let runs = Runs::default();
    let e = engine(&runs, CacheScope::Principal, 60_000);
    let first = run(
        &e,
        vec![Call::new("a", "search", r#"{"q": "x", "n": 3}"#)],
        caller("u1"),
    )
    .await;
    assert!(!first.results[0].cached);
    let again = run(
        &e,
        vec![Call::new("b", "search", "{\n  \"n\":3,\"q\":\"x\"}")],
        caller("u1"),
    )
    .await;
    let r = &again.results[0];
    assert!(r.cached);
    assert_eq!(r.attempts, 0);
    assert_eq!(r.envelope, first.results[0].envelope);
    assert_eq!(runs.get(), 1);
    // Other arguments miss.
    let other = run(
        &e,
        vec![Call::new("c", "search", r#"{"q": "y", "n": 3}"#)],
        caller("u1"),
    )
    .await;
    assert!(!other.results[0].cached);
    assert_eq!(runs.get(), 2);
}

#[tokio::test]
async fn one_users_results_never_reach_another() {
    let runs = Runs::default();
    let e = engine(&runs, CacheScope::Principal, 60_000);
    run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u1"),
    )
    .await;
    let r = run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u2"),
    )
    .await;
    assert!(!r.results[0].cached);
    let mut same_name_other_tenant = caller("u1");
    same_name_other_tenant.tenant = Some("globex".into());
    let r = run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        same_name_other_tenant,
    )
    .await;
    assert!(!r.results[0].cached);
    assert_eq!(runs.get(), 3);

    let runs = Runs::default();
    let e = engine(&runs, CacheScope::Tenant, 60_000);
    run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u1"),
    )
    .await;
    let r = run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u2"),
    )
    .await;
    assert!(
        r.results[0].cached,
        "a tenant-scoped cache is shared in the tenant"
    );
}

#[tokio::test]
async fn entries_expire_and_failures_are_not_cached() {
    let runs = Runs::default();
    let e = engine(&runs, CacheScope::Principal, 50);
    run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u1"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = run(
        &e,
        vec![Call::new("a", "search", json!({"q": 1}))],
        caller("u1"),
    )
    .await;
    assert!(!r.results[0].cached);
    assert_eq!(runs.get(), 2);

    let e = Engine::new();
    let policy = Policy::default()
        .effect(Effect::Read)
        .cache(CachePolicy::ttl(Duration::from_secs(60)));
    e.register(
        Tool::from_fn("flaky", "Fails.", object(), |_, _| async {
            Err(HandlerError::tool(ErrorCode::ExternalApiError, "down"))
        })
        .policy(policy),
    )
    .unwrap();
    for _ in 0..2 {
        let r = run(&e, vec![Call::new("a", "flaky", json!({}))], caller("u1")).await;
        assert!(!r.results[0].cached);
        assert_eq!(r.results[0].attempts, 1);
    }
}

#[tokio::test]
async fn only_read_tools_may_cache() {
    let e = Engine::new();
    let policy = Policy::default().cache(CachePolicy::ttl(Duration::from_secs(60)));
    let err = e
        .register(echo("write", object(), policy, &Runs::default()))
        .unwrap_err();
    assert!(err.to_string().contains("read"), "{err}");
}
