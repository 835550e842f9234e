//! The engines the benches measure: the bare path (one no-op tool) and the same tool with
//! every guardrail on, piece by piece, and the calls and caller they get.

use serde_json::{Value, json};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tooljig::audit::SqliteAudit;
use tooljig::*;

pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}, "user_id": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": false
    })
}

pub fn bare() -> Engine {
    let engine = Engine::new();
    engine
        .register(Tool::from_fn(
            "noop",
            "Does nothing.",
            schema(),
            |_, _| async { Ok(Value::Null) },
        ))
        .expect("noop registers");
    engine
}

/// A sink that drops every record: the records are built and handed over, nothing is stored.
/// It isolates the cost on the call path from the cost of storage.
pub struct Discard;

impl AuditSink for Discard {
    fn record(&self, entry: AuditEntry) {
        black_box(entry);
    }
    fn flush(&self) -> BoxFuture<Result<(), tooljig::audit::AuditError>> {
        Box::pin(async { Ok(()) })
    }
    fn query(
        &self,
        _: AuditQuery,
    ) -> BoxFuture<Result<Vec<AuditRecord>, tooljig::audit::AuditError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn verify(&self) -> BoxFuture<Result<tooljig::audit::ChainReport, tooljig::audit::AuditError>> {
        Box::pin(async {
            Ok(tooljig::audit::ChainReport {
                records: 0,
                broken: None,
            })
        })
    }
}

/// Which guard pieces an engine has, for the per-layer variants.
#[derive(Clone, Copy)]
pub struct Layers {
    /// A per-principal rate limit.
    pub limit: bool,
    /// The read cache.
    pub cache: bool,
    /// The audit sink: `sqlite`, `jsonl`, `discard`, or none.
    pub audit: Option<&'static str>,
}

pub const ALL: Layers = Layers {
    limit: true,
    cache: true,
    audit: Some("sqlite"),
};

pub fn guarded(layers: Layers, dir: &std::path::Path) -> Engine {
    let settings: Settings = serde_json::from_value(json!({
        "system": {"other": false},
        "tenants": {"acme": {"other": false}},
        "departments": {"it": {"other": true}},
        "users": {"u1": {"other": true}}
    }))
    .expect("settings");
    let mut engine = Engine::new()
        .with_settings(settings)
        .with_policy_hook(policy_hook_fn(|req: AccessRequest| async move {
            Ok(if req.caller.principal.is_some() {
                AccessDecision::allow()
            } else {
                AccessDecision::deny("sign in first")
            })
        }));
    match layers.audit {
        Some(kind @ ("sqlite" | "jsonl")) => engine = engine.with_audit(sink(kind, dir)),
        Some(_) => engine = engine.with_audit(Arc::new(Discard)),
        None => {}
    }
    let mut policy = Policy::default()
        .effect(Effect::Read)
        .scopes(["weather.read"])
        .roles(["user"])
        .hidden("user_id", HiddenParam::Principal)
        .redact("city", Redaction::Hash);
    if layers.limit {
        policy = policy.rate_limit(RateLimit::per_principal(
            1_000_000_000,
            Duration::from_secs(1),
        ));
    }
    if layers.cache {
        policy = policy.cache(CachePolicy::ttl(Duration::from_secs(60)));
    }
    engine
        .register(
            Tool::from_fn("noop", "Does nothing.", schema(), |_, _| async {
                Ok(Value::Null)
            })
            .policy(policy),
        )
        .expect("noop registers");
    engine
}

pub fn caller() -> Caller {
    let mut c = Caller::principal("u1");
    c.tenant = Some("acme".into());
    c.roles = vec!["user".into()];
    c.scopes = vec!["weather.read".into()];
    c.attributes.insert("departments".into(), json!(["it"]));
    c
}

/// Calls with arguments never seen before (a fresh `days` per call), so the cache misses.
pub fn calls(n: usize, nonce: &AtomicU64) -> Vec<Call> {
    (0..n)
        .map(|i| {
            let days = nonce.fetch_add(1, Ordering::Relaxed) + 1;
            Call::new(
                format!("c{i}"),
                "noop",
                format!(r#"{{"city": "Paris", "days": {days}, "user_id": "spoof"}}"#),
            )
        })
        .collect()
}

/// An audit sink of the given kind (`sqlite` or `jsonl`) in a fresh file under `dir`.
pub fn sink(kind: &str, dir: &std::path::Path) -> Arc<dyn AuditSink> {
    let path = dir.join(format!("audit-{}.{kind}", uuid::Uuid::new_v4()));
    match kind {
        "sqlite" => Arc::new(SqliteAudit::open(path).expect("audit opens")),
        _ => Arc::new(tooljig::audit::JsonlAudit::open(path).expect("audit opens")),
    }
}
