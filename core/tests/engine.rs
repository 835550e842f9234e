//! End-to-end behaviour of `Engine::run`: parallelism, dependencies, failures.

use serde_json::{Value, json};
use std::sync::Arc;
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

/// An app object of each kind an engine holds, named so a visit can say which it saw.
struct Part(&'static str, Option<Arc<tokio::sync::Notify>>);

impl Handler for Part {
    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<HandlerResult> {
        let gate = self.1.clone();
        Box::pin(async move {
            if let Some(gate) = gate {
                gate.notified().await;
            }
            Ok(json!(null))
        })
    }
}

impl PolicyHook for Part {
    fn check(
        &self,
        _: AccessRequest,
        _: Option<HostData>,
    ) -> BoxFuture<Result<AccessDecision, HandlerError>> {
        Box::pin(async { Ok(AccessDecision::allow()) })
    }
}

impl Resolver for Part {
    fn resolve(
        &self,
        _: ResolveRequest,
        _: Option<HostData>,
    ) -> BoxFuture<Result<Resolution, HandlerError>> {
        Box::pin(async { Ok(Resolution::NotFound) })
    }
}

impl ApprovalPredicate for Part {
    fn requires_approval(
        &self,
        _: ApprovalQuery,
        _: Option<HostData>,
    ) -> BoxFuture<Result<bool, String>> {
        Box::pin(async { Ok(false) })
    }
}

fn sole_parts(engine: &Engine) -> Vec<&'static str> {
    let mut seen = Vec::new();
    engine.visit_sole_parts(&mut |part| seen.extend(part.downcast_ref::<Part>().map(|p| p.0)));
    seen.sort();
    seen
}

/// What a binding's cycle collector is told the engine holds: every app object, and none that
/// something else holds too (a batch in flight, a clone the app kept, a view of the tools).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_names_the_app_objects_it_alone_holds() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let engine = Engine::new()
        .with_policy_hook(Arc::new(Part("hook", None)))
        .with_resolver("who", Arc::new(Part("resolver", None)))
        .with_approval_predicate(Arc::new(Part("predicate", None)));
    let schema = json!({"type": "object"});
    let tool = Tool::new(
        ToolSpec::new("wait", "Waits.", schema.clone()),
        Arc::new(Part("handler", Some(gate.clone()))),
    )
    .to_model_output(Arc::new(Part("present", None)))
    .on_success(Arc::new(Part("on_success", None)));
    engine.register(tool).unwrap();
    engine.compensate_with("wait", Arc::new(Part("compensation", None)));
    let all = [
        "compensation",
        "handler",
        "hook",
        "on_success",
        "predicate",
        "present",
        "resolver",
    ];
    assert_eq!(sole_parts(&engine), all);

    // A batch in flight shares the tools and the guards: none of them is the engine's alone.
    let engine = Arc::new(engine);
    let running = tokio::spawn({
        let engine = engine.clone();
        async move {
            let calls = vec![Call::new("1", "wait", json!({}))];
            engine
                .run(calls, Caller::default(), BatchOptions::default())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let during = sole_parts(&engine);
    for shared in ["handler", "hook", "present", "on_success", "resolver"] {
        assert!(!during.contains(&shared), "{shared} in {during:?}");
    }
    gate.notify_one();
    assert!(running.await.unwrap().get("1").unwrap().envelope.is_ok());
    let engine = Arc::into_inner(engine).expect("the batch let go of the engine");
    assert_eq!(sole_parts(&engine), all);

    // A handler the app also holds is not the engine's alone.
    let kept: Arc<dyn Handler> = Arc::new(Part("kept", None));
    engine
        .register(Tool::new(
            ToolSpec::new("kept", "Kept.", schema),
            kept.clone(),
        ))
        .unwrap();
    assert!(!sole_parts(&engine).contains(&"kept"));
    drop(kept);
    assert!(sole_parts(&engine).contains(&"kept"));

    // A tool that sees the registry (`search_tools`) does not hold it.
    engine.register(engine.tool_search()).unwrap();
    assert!(sole_parts(&engine).contains(&"handler"));
}
