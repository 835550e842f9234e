//! A binding's host data reaches the handlers a resume runs and the compensations a rollback
//! runs (`Engine::resume_with`, `Engine::rollback_with`), as it reaches a batch's handlers.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::*;

type Seen = Arc<Mutex<Vec<String>>>;

/// The host a handler saw: the `&str` a test put there, or "none".
fn host_of(ctx: &ToolContext) -> String {
    ctx.host
        .as_ref()
        .and_then(|h| h.downcast_ref::<&str>())
        .map_or("none".into(), |s| (*s).to_owned())
}

fn engine(seen: &Seen) -> Engine {
    let engine = Engine::new().with_external_expiry_ms(60_000);
    engine
        .register(Tool::external(ToolSpec::new(
            "ask_user",
            "Asks the user.",
            json!({"type": "object"}),
        )))
        .unwrap();
    let s = seen.clone();
    engine
        .register(
            Tool::from_fn(
                "book",
                "Books.",
                json!({"type": "object"}),
                move |a: Value, ctx| {
                    s.lock().unwrap().push(format!("book {}", host_of(&ctx)));
                    async move { Ok(a) }
                },
            )
            .policy(Policy::default().compensation("cancel")),
        )
        .unwrap();
    let s = seen.clone();
    engine
        .register(Tool::from_fn(
            "cancel",
            "Cancels.",
            json!({"type": "object"}),
            move |_: Value, ctx| {
                s.lock().unwrap().push(format!("cancel {}", host_of(&ctx)));
                async move { Ok(json!({"cancelled": true})) }
            },
        ))
        .unwrap();
    engine
}

fn with_host(host: &'static str) -> BatchOptions {
    BatchOptions {
        host: Some(Arc::new(host)),
        ..BatchOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_and_rollback_with_hand_the_host_to_handlers() {
    let seen: Seen = Default::default();
    let engine = engine(&seen);
    let calls = vec![
        Call::new("q", "ask_user", json!({})),
        Call::new(
            "b",
            "book",
            json!({"day": {"$from": "q", "pointer": "/day"}}),
        ),
    ];
    let out = engine
        .run(calls, Caller::principal("u1"), with_host("first"))
        .await;
    assert_eq!(out.get("b").unwrap().status, CallStatus::Waiting);
    let run_id = out.run_id.clone().unwrap();
    engine
        .submit_result(
            &run_id,
            "q",
            &Caller::principal("u1"),
            Ok(json!({"day": "mon"})),
        )
        .await
        .unwrap();
    let out = engine
        .resume_with(&run_id, with_host("resumed"))
        .await
        .unwrap();
    assert_eq!(
        out.get("b").unwrap().envelope.data(),
        Some(&json!({"day": "mon"}))
    );
    let report = engine
        .rollback_with(&run_id, None, Some(Arc::new("rolled back")))
        .await
        .unwrap();
    assert!(report.entries.iter().any(|e| e.call_id == "b"));
    assert_eq!(
        *seen.lock().unwrap(),
        ["book resumed", "cancel rolled back"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_resume_and_rollback_hand_no_host() {
    let seen: Seen = Default::default();
    let engine = engine(&seen);
    let calls = vec![
        Call::new("q", "ask_user", json!({})),
        Call::new(
            "b",
            "book",
            json!({"day": {"$from": "q", "pointer": "/day"}}),
        ),
    ];
    let out = engine
        .run(calls, Caller::principal("u1"), with_host("first"))
        .await;
    let run_id = out.run_id.clone().unwrap();
    engine
        .submit_result(
            &run_id,
            "q",
            &Caller::principal("u1"),
            Ok(json!({"day": "mon"})),
        )
        .await
        .unwrap();
    engine.resume(&run_id).await.unwrap();
    engine.rollback(&run_id, None).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["book none", "cancel none"]);
}
