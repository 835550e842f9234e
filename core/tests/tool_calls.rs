//! Tools calling tools (`ctx.tools`): the same caller through every guardrail, each nested
//! result and audit record naming its parent, the parent's deadline inherited, and what the
//! policy does not allow, loops and depth refused.

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::{
    BatchOptions, Call, Caller, Engine, Envelope, ErrorCode, HandlerError, MemoryAudit, Nested,
    Tool, ToolSpec, handler_fn,
};

fn spec(name: &str, policy: Value) -> ToolSpec {
    ToolSpec::from_value(json!({
        "name": name, "description": name, "input_schema": {"type": "object"}, "policy": policy
    }))
    .unwrap()
}

/// `plan` calls `weather` and `book` (and tries `secret`, which it may not); `a` and `b` call
/// each other; `slow` outlives any deadline; `whoami` answers the caller.
fn engine(audit: Arc<MemoryAudit>) -> Engine {
    let engine = Engine::new().with_audit(audit);
    let answer = |value: Value| {
        handler_fn(move |_args, _ctx| {
            let value = value.clone();
            async move { Ok(value) }
        })
    };
    engine
        .register(Tool::new(
            spec("weather", json!({"effect": "read"})),
            answer(json!({"temp_c": 21})),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("book", json!({"approval": {"required": "always"}})),
            answer(json!("booked")),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("secret", json!({})),
            answer(json!("s3cret")),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("whoami", json!({})),
            handler_fn(|_args, ctx| async move { Ok(json!(ctx.caller.principal)) }),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("plan", json!({"may_call": ["weather", "book", "whoami"]})),
            handler_fn(|_args, ctx| async move {
                let tools = ctx.tools.clone().ok_or_else(|| HandlerError::unexpected("no tools"))?;
                assert_eq!(tools.parent().tool, "plan");
                let out = tools
                    .run(
                        vec![
                            Call::new("w", "weather", json!({})),
                            Call::new("b", "book", json!({})),
                            Call::new("s", "secret", json!({})),
                            Call::new("me", "whoami", json!({})),
                        ],
                        None,
                        None,
                    )
                    .await;
                Ok(json!(out
                    .results
                    .iter()
                    .map(|r| json!({"id": r.call_id, "status": r.status, "envelope": r.envelope.to_value()}))
                    .collect::<Vec<_>>()))
            }),
        ))
        .unwrap();
    let caller_of = |next: &'static str| {
        handler_fn(move |_args, ctx| async move {
            let tools = ctx
                .tools
                .clone()
                .ok_or_else(|| HandlerError::unexpected("no tools"))?;
            Ok(tools.call(next, json!({})).await.envelope.to_value())
        })
    };
    engine
        .register(Tool::new(
            spec("a", json!({"may_call": ["b"]})),
            caller_of("b"),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("b", json!({"may_call": ["*"]})),
            caller_of("a"),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("slow", json!({})),
            handler_fn(|_args, _ctx| async move {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                Ok(json!("late"))
            }),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec(
                "impatient",
                json!({"may_call": ["slow"], "timeout_ms": 300}),
            ),
            caller_of("slow"),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("plain", json!({})),
            handler_fn(|_args, ctx| async move { Ok(json!(ctx.tools.is_some())) }),
        ))
        .unwrap();
    engine
}

async fn one(engine: &Engine, tool: &str) -> tooljig::CallResult {
    let mut out = engine
        .run(
            vec![Call::new("top", tool, json!({}))],
            Caller::principal("alice"),
            BatchOptions::default(),
        )
        .await;
    out.results.remove(0)
}

#[tokio::test]
async fn a_handler_calls_tools_as_its_caller_through_every_guardrail() {
    let audit = Arc::new(MemoryAudit::new());
    let engine = engine(audit.clone());
    let plan = one(&engine, "plan").await;
    let data = plan.envelope.data().cloned().unwrap();
    let by_id = |id: &str| {
        data.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        by_id("w")["envelope"],
        json!({"ok": true, "data": {"temp_c": 21}})
    );
    // Approval applies to a nested call as to any.
    assert_eq!(by_id("b")["status"], "pending_approval");
    // Not in the policy's may_call.
    assert_eq!(by_id("s")["envelope"]["error"]["code"], "permission_denied");
    assert_eq!(by_id("me")["envelope"]["data"], "alice");

    // Every nested call is audited, each naming its parent; the parent too.
    let records = audit.records();
    let nested: Vec<_> = records.iter().filter(|r| r.parent.is_some()).collect();
    assert_eq!(nested.len(), 4, "{records:?}");
    for r in &nested {
        let parent = r.parent.as_ref().unwrap();
        assert_eq!(
            (parent.call_id.as_str(), parent.tool.as_str(), parent.depth),
            ("top", "plan", 1)
        );
        assert_eq!(r.principal.as_deref(), Some("alice"));
    }
    let refused = nested.iter().find(|r| r.tool == "secret").unwrap();
    assert_eq!(refused.code, Some(tooljig::ErrorCode::PermissionDenied));
    assert!(
        records
            .iter()
            .any(|r| r.tool == "plan" && r.parent.is_none())
    );
}

#[tokio::test]
async fn loops_are_refused_and_the_deadline_is_inherited() {
    let engine = engine(Arc::new(MemoryAudit::new()));
    // a → b → a: the second `a` is refused, and the refusal travels back up as data.
    let looped = one(&engine, "a").await;
    let inner = looped.envelope.data().cloned().unwrap();
    assert_eq!(inner["ok"], true, "{inner}");
    assert_eq!(
        inner["data"]["error"]["code"], "dependency_cycle",
        "{inner}"
    );
    assert!(
        inner["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a → b → a")
    );
    // The parent has 300 ms: its nested call gets what is left, not 30 s.
    let impatient = one(&engine, "impatient").await;
    let data = impatient.envelope.data().cloned();
    let code = data.as_ref().map(|d| d["error"]["code"].clone());
    assert!(
        impatient.envelope.to_value()["error"]["code"] == "timeout"
            || code == Some(json!("deadline_exceeded")),
        "{:?}",
        impatient.envelope
    );
    // A tool that names nothing to call has no door.
    assert_eq!(
        one(&engine, "plain").await.envelope.data(),
        Some(&json!(false))
    );
}

/// Two-phase booking from one handler: `hold` then `book` in an atomic nested batch; when
/// `book` fails, the hold is compensated and the report comes back with the batch.
#[tokio::test]
async fn an_atomic_nested_batch_compensates_what_it_did_when_a_call_fails() {
    let log: Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let engine = Engine::new();
    let l = log.clone();
    engine
        .register(Tool::new(
            spec("hold", json!({"compensation": "release", "internal": true})),
            handler_fn(move |args, _| {
                let l = l.clone();
                async move {
                    l.lock().unwrap().push(format!("hold {}", args["slot"]));
                    Ok(json!({"hold": format!("h-{}", args["slot"])}))
                }
            }),
        ))
        .unwrap();
    let l = log.clone();
    engine
        .register(Tool::new(
            spec("release", json!({"internal": true})),
            handler_fn(move |args, _| {
                let l = l.clone();
                async move {
                    l.lock()
                        .unwrap()
                        .push(format!("release {}", args["result"]["hold"]));
                    Ok(json!(true))
                }
            }),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("book", json!({"internal": true})),
            handler_fn(|args, _| async move {
                if args["slot"] == 2 {
                    return Err(HandlerError::tool(
                        ErrorCode::Conflict,
                        "the slot was taken",
                    ));
                }
                Ok(json!({"booked": args["slot"]}))
            }),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("confirm", json!({"may_call": ["hold", "book"]})),
            handler_fn(|args, ctx| async move {
                let tools = ctx.tools.clone().ok_or_else(|| HandlerError::unexpected("no tools"))?;
                let slot = args["slot"].clone();
                let calls = vec![
                    Call::new("hold", "hold", json!({"slot": slot})),
                    Call::new("book", "book", json!({"slot": slot})).depends_on("hold"),
                ];
                let nested = Nested { atomic: true, ..Nested::default() };
                let out = tools.run_with(calls, nested).await;
                Ok(json!({
                    "booked": out.results.iter().all(|r| r.envelope.is_ok()),
                    "rollback": out.rollback.map(|r| r.entries.iter().map(|e| json!(e.outcome)).collect::<Vec<_>>()),
                }))
            }),
        ))
        .unwrap();
    let out = engine
        .run(
            vec![
                Call::new("ok", "confirm", json!({"slot": 1})),
                Call::new("taken", "confirm", json!({"slot": 2})),
            ],
            Caller::principal("u1"),
            BatchOptions {
                concurrency: Some(1),
                ..BatchOptions::default()
            },
        )
        .await;
    assert_eq!(
        out.results[0].envelope,
        Envelope::Ok(json!({"booked": true, "rollback": null}))
    );
    assert_eq!(
        out.results[1].envelope,
        Envelope::Ok(json!({"booked": false, "rollback": ["compensated"]}))
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["hold 1", "hold 2", "release \"h-2\""],
        "the second hold was released, the first kept"
    );

    // The steps are internal: a model neither sees nor calls them.
    let caller = Caller::principal("u1");
    let names: Vec<String> = engine
        .specs_for(&caller)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["confirm"]);
    let direct = engine
        .run(
            vec![Call::new("h", "hold", json!({"slot": 3}))],
            caller,
            BatchOptions::default(),
        )
        .await;
    let Envelope::Error(e) = &direct.results[0].envelope else {
        panic!("{:?}", direct.results[0])
    };
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert_eq!(e.details["reason"], "internal");
    assert_eq!(log.lock().unwrap().len(), 3, "nothing ran");
}
