//! Values at the edge of their range, set by an app or read from a config: every duration and
//! expiry accepts `u64::MAX` (meaning "never", in practice) without a panic or a wrong code.

use serde_json::{Value, json};
use tooljig::*;

const MAX: u64 = u64::MAX;

fn policy() -> Value {
    json!({
        "timeout_ms": MAX,
        "retry": {"attempts": 2, "backoff_ms": MAX, "max_backoff_ms": MAX},
        "cache": {"ttl_ms": MAX},
        "effect": "read",
        "idempotency": {"mode": "key", "ttl_ms": MAX, "lease_ms": MAX},
        "rate_limits": [{"max": 5, "per_ms": MAX}],
        "approval": {"expires_ms": MAX},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_durations_run_and_expire_never() {
    let engine = EngineOptions::from_value(json!({
        "external_expiry_ms": MAX,
        "state_store": "memory",
        "approval_rules": {"min_risk": "high"},
    }))
    .and_then(EngineOptions::build)
    .unwrap();
    let spec = ToolSpec::from_value(json!({"name": "look", "policy": policy()})).unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(|args, _| async move { Ok(args) }),
        ))
        .unwrap();
    let mut high = policy();
    high["risk"] = json!("high");
    high["effect"] = json!("write");
    high.as_object_mut().unwrap().remove("cache");
    let spec = ToolSpec::from_value(json!({"name": "pay", "policy": high})).unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(|_, _| async move { Ok(json!("paid")) }),
        ))
        .unwrap();
    engine
        .register(Tool::external(ToolSpec::new(
            "ask",
            "",
            json!({"type": "object"}),
        )))
        .unwrap();
    let options = BatchOptions {
        deadline_ms: Some(MAX),
        ..Default::default()
    };
    let calls = || {
        vec![
            Call::new("l", "look", json!({"q": 1})).idempotency_key("k1"),
            Call::new("p", "pay", json!({})).idempotency_key("k2"),
            Call::new("a", "ask", json!({})),
        ]
    };
    let out = engine
        .run(calls(), Caller::principal("u1"), options.clone())
        .await;
    let status: Vec<_> = out.results.iter().map(|r| r.status).collect();
    assert_eq!(
        status,
        [
            CallStatus::Done,
            CallStatus::PendingApproval,
            CallStatus::PendingExternal
        ],
        "{:?}",
        out.results.iter().map(|r| &r.envelope).collect::<Vec<_>>()
    );
    // Again: replayed from idempotency (and the cache), never expired.
    let again = engine
        .run(calls()[..1].to_vec(), Caller::principal("u1"), options)
        .await;
    assert!(again.results[0].envelope.is_ok());
    let run = out.run_id.unwrap();
    let pending = engine.pending_external(&run).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].expires_at_ms, MAX);
}

/// A cache whose first read panics: a bug in an app's seam, not in a handler.
#[derive(Default)]
struct PanickyCache(std::sync::atomic::AtomicBool);

impl cache::ResultCache for PanickyCache {
    fn get(&self, _key: &str) -> BoxFuture<Option<Value>> {
        let first = !self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            assert!(!first, "the cache broke");
            None
        })
    }
    fn put(&self, _: String, _: Value, _: std::time::Duration) -> BoxFuture<()> {
        Box::pin(async {})
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_outside_the_handler_ends_that_call_alone_as_internal_error() {
    let engine = Engine::new().with_cache(std::sync::Arc::new(PanickyCache::default()));
    let spec = ToolSpec::from_value(json!({"name": "look",
        "policy": {"effect": "read", "cache": {"ttl_ms": 1000}}}))
    .unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(|args, _| async move { Ok(args) }),
        ))
        .unwrap();
    let out = engine
        .run(
            vec![
                Call::new("a", "look", json!({"q": "boom"})),
                Call::new("b", "look", json!({"q": "fine"})),
                Call::new("c", "look", json!({"q": 2})).depends_on("b"),
            ],
            Caller::principal("u1"),
            BatchOptions {
                concurrency: Some(1),
                ..Default::default()
            },
        )
        .await;
    assert_eq!(
        out.results[0].envelope.code(),
        Some(ErrorCode::InternalError)
    );
    assert!(out.results[1].envelope.is_ok());
    assert!(
        out.results[2].envelope.is_ok(),
        "a neighbour and its dependent run on"
    );
}

fn nested(levels: usize) -> Value {
    (0..levels).fold(json!("bottom"), |v, _| json!({"down": v}))
}

/// Whatever is accepted is readable: data and error details nested too deep to read back are
/// refused where they enter, so retries, run records, audit queries and `verify` still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_nested_too_deep_to_read_back_is_refused_and_everything_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = EngineOptions::from_value(json!({
        "state_store": format!("sqlite://{}", dir.path().join("state.db").display()),
        "audit": format!("sqlite://{}", dir.path().join("audit.db").display()),
    }))
    .and_then(EngineOptions::build)
    .unwrap();
    let spec = ToolSpec::from_value(json!({"name": "deep",
        "policy": {"effect": "write", "idempotency": {"mode": "key"}}}))
    .unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(|args: Value, _| async move {
                let n = args["levels"].as_u64().unwrap() as usize;
                if args["fail"] == true {
                    return Err(HandlerError::Tool(
                        ToolError::new(ErrorCode::Conflict, "deep details").with("why", nested(n)),
                    ));
                }
                Ok(nested(n))
            }),
        ))
        .unwrap();
    let call = |id: &str, levels: usize, fail: bool| {
        Call::new(id, "deep", json!({"levels": levels, "fail": fail}))
            .idempotency_key(format!("k-{id}"))
    };
    let run = || {
        engine.run(
            vec![
                call("d150", 150, false),
                call("d99", 99, false),
                call("e150", 150, true),
            ],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
    };
    let out = run().await;
    let code = |out: &BatchResult, id: &str| out.get(id).unwrap().envelope.code();
    assert_eq!(code(&out, "d150"), Some(ErrorCode::InvalidOutput));
    assert!(out.get("d99").unwrap().envelope.is_ok());
    let e150 = out.get("e150").unwrap();
    assert_eq!(code(&out, "e150"), Some(ErrorCode::Conflict));
    assert!(e150.detail.as_deref().unwrap().contains("dropped"));
    // A retry replays what was stored, rather than failing to read it.
    let again = run().await;
    assert_eq!(code(&again, "d150"), Some(ErrorCode::InvalidOutput));
    assert!(again.get("d99").unwrap().replayed);
    assert!(again.get("d99").unwrap().envelope.is_ok());
    let record = engine
        .run_record(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    assert!(record.is_some());
    let audit = engine.audit().unwrap();
    assert_eq!(audit.query(AuditQuery::all()).await.unwrap().len(), 6);
    assert!(audit.verify().await.unwrap().is_intact());
}

/// A call a binding could not convert (`arguments_error`) is refused alone, before any
/// guard or handler, and its neighbours run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_unreadable_arguments_is_refused_alone() {
    let engine = Engine::new();
    engine
        .register(Tool::new(
            ToolSpec::from_value(json!({"name": "echo"})).unwrap(),
            handler_fn(|args, _| async move { Ok(args) }),
        ))
        .unwrap();
    let mut bad = Call::new("bad", "echo", Value::Null);
    bad.arguments_error = Some("a BigInt at \"n\" has no JSON form".into());
    let out = engine
        .run(
            vec![bad, Call::new("good", "echo", json!({"n": 1}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let bad = out.get("bad").unwrap().envelope.to_value();
    assert_eq!(bad["error"]["code"], "invalid_arguments");
    assert!(bad["error"]["message"].as_str().unwrap().contains("BigInt"));
    assert!(out.get("good").unwrap().envelope.is_ok());
}
