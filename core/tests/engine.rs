//! End-to-end behaviour of `Engine::run`: parallelism, dependencies, failures.

use serde_json::{Value, json};
use std::time::Duration;
use tooljig::*;

fn engine() -> Engine {
    let engine = Engine::new();
    let obj = json!({"type": "object", "properties": {"ms": {"type": "integer"}, "v": {}}, "required": ["ms"]});
    engine
        .register(Tool::from_fn(
            "sleep",
            "Sleeps.",
            obj,
            |args: Value, _| async move {
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                Ok(json!({"slept": args["ms"], "v": args["v"]}))
            },
        ))
        .unwrap();
    engine
        .register(Tool::from_fn(
            "boom",
            "Panics.",
            json!({"type": "object"}),
            |_, _| async move {
                if true {
                    panic!("kaboom");
                }
                Ok(Value::Null)
            },
        ))
        .unwrap();
    engine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_dependent_and_failing_calls_settle() {
    let e = engine();
    let calls = vec![
        Call::new("a", "sleep", json!({"ms": 50, "v": {"id": 7}})),
        Call::new("b", "sleep", json!({"ms": 50})),
        Call::new(
            "c",
            "sleep",
            json!({"ms": 10, "v": {"$from": "a", "pointer": "/v/id"}}),
        ),
        Call::new("d", "boom", json!({})),
        Call::new("e", "sleep", json!({"ms": 1})).depends_on("d"),
        Call::new("f", "slep", json!({"ms": 1})),
        Call::new("g", "sleep", "{ms: 1,"),
        Call::new("h", "sleep", "{'ms': 1,}"),
        Call::new("i", "sleep", json!({})),
    ];
    let out = e
        .run(calls, Caller::default(), BatchOptions::default())
        .await;
    let env = |id: &str| out.get(id).unwrap().envelope.to_value();
    assert_eq!(env("c"), json!({"ok": true, "data": {"slept": 10, "v": 7}}));
    let a = out.get("a").unwrap();
    let b = out.get("b").unwrap();
    let c = out.get("c").unwrap();
    assert!(c.started_us.unwrap() >= a.finished_us);
    assert!(b.started_us.unwrap() < a.finished_us, "a and b overlap");
    assert_eq!(env("d")["error"]["code"], "internal_error");
    assert!(
        out.get("d")
            .unwrap()
            .detail
            .as_deref()
            .unwrap()
            .contains("kaboom")
    );
    assert_eq!(env("e")["error"]["code"], "dependency_failed");
    assert_eq!(env("f")["error"]["code"], "unknown_tool");
    assert_eq!(env("f")["error"]["suggestions"], json!(["sleep"]));
    assert_eq!(env("g")["error"]["code"], "incomplete_arguments");
    assert!(out.get("h").unwrap().repaired);
    assert_eq!(env("h")["ok"], true);
    assert_eq!(env("i"), json!({"ok": false, "needs": {"ms": true}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycles_are_refused_and_the_rest_runs() {
    let e = engine();
    let calls = vec![
        Call::new("a", "sleep", json!({"ms": 1})).depends_on("b"),
        Call::new("b", "sleep", json!({"ms": 1})).depends_on("a"),
        Call::new("c", "sleep", json!({"ms": 1})).depends_on("a"),
        Call::new("d", "sleep", json!({"ms": 1})),
        Call::new("x", "sleep", json!({"ms": 1})).depends_on("nope"),
    ];
    let out = e
        .run(calls, Caller::default(), BatchOptions::default())
        .await;
    let code = |id: &str| out.get(id).unwrap().envelope.code().map(|c| c.as_str());
    assert_eq!(code("a"), Some("dependency_cycle"));
    assert_eq!(code("b"), Some("dependency_cycle"));
    assert_eq!(code("c"), Some("dependency_failed"));
    assert_eq!(code("d"), None);
    assert_eq!(code("x"), Some("unknown_dependency"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_ends_the_batch() {
    let e = engine();
    let calls = vec![
        Call::new("a", "sleep", json!({"ms": 5000})),
        Call::new("b", "sleep", json!({"ms": 1})),
    ];
    let opts = BatchOptions {
        deadline_ms: Some(100),
        ..Default::default()
    };
    let out = e.run(calls, Caller::default(), opts).await;
    assert_eq!(
        out.get("a").unwrap().envelope.code(),
        Some(ErrorCode::DeadlineExceeded)
    );
    assert!(out.get("b").unwrap().envelope.is_ok(), "{:?}", out.get("b"));
    assert!(out.duration_us < 1_000_000);
}
