//! A tool's `on_success` hook: runs once after each call that succeeded, with its arguments
//! and data, out of the model's reach; never for a refusal, a failure, a replayed duplicate;
//! a failing hook leaves the result as it was and its reason in `detail` and the audit log.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tooljig::audit::{AuditQuery, MemoryAudit};
use tooljig::*;

type Sent = Arc<Mutex<Vec<Value>>>;

/// `book` books a room (failing for room 13); its hook "notifies" by pushing what it got,
/// or misbehaves as the booking's `hook` argument says.
fn engine(sent: Sent, audit: Arc<MemoryAudit>) -> Engine {
    let engine = Engine::new().with_audit(audit);
    let hook = handler_fn(move |input: Value, ctx: ToolContext| {
        let sent = sent.clone();
        async move {
            match input["arguments"]["hook"].as_str() {
                Some("throw") => return Err(HandlerError::unexpected("mail server down")),
                Some("panic") => panic!("the hook panicked"),
                Some("hang") => std::future::pending::<()>().await,
                _ => {}
            }
            let mut input = input;
            input["by"] = json!(ctx.caller.principal);
            sent.lock().unwrap().push(input);
            Ok(json!("sent"))
        }
    });
    let mut policy = Policy::default().idempotent(IdempotencyMode::Arguments);
    policy.timeout_ms = Some(300);
    engine
        .register(
            Tool::from_fn(
                "book",
                "Books a room.",
                json!({"type": "object", "properties": {"room": {"type": "integer"}, "hook": {"type": "string"}}, "required": ["room"]}),
                |args: Value, _| async move {
                    if args["room"] == 13 {
                        return Err(HandlerError::tool(ErrorCode::Conflict, "room 13 is taken"));
                    }
                    Ok(json!({"booked": args["room"]}))
                },
            )
            .on_success(hook)
            .policy(policy),
        )
        .unwrap();
    engine
}

async fn book(engine: &Engine, id: &str, arguments: Value) -> CallResult {
    let out = engine
        .run(
            vec![Call::new(id, "book", arguments)],
            Caller::principal("dana"),
            BatchOptions::default(),
        )
        .await;
    out.results.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_hook_runs_once_per_success_with_arguments_and_data() {
    let sent: Sent = Default::default();
    let engine = engine(sent.clone(), Arc::new(MemoryAudit::new()));
    let r = book(&engine, "a", json!({"room": 7})).await;
    assert_eq!(
        r.envelope,
        Envelope::Ok(json!({"booked": 7})),
        "the handler's data"
    );
    assert_eq!(
        r.model_output, None,
        "the hook's answer never reaches the model"
    );
    assert_eq!(r.detail, None);
    assert_eq!(
        *sent.lock().unwrap(),
        vec![json!({"arguments": {"room": 7}, "result": {"booked": 7}, "by": "dana"})]
    );

    // A duplicate is replayed from the record: no second notification.
    let again = book(&engine, "b", json!({"room": 7})).await;
    assert!(again.replayed, "{again:?}");
    // Refusals and failures: none either.
    let failed = book(&engine, "c", json!({"room": 13})).await;
    assert!(matches!(failed.envelope, Envelope::Error(_)), "{failed:?}");
    let refused = book(&engine, "d", json!({"room": "seven"})).await;
    assert!(
        matches!(refused.envelope, Envelope::Error(_)),
        "{refused:?}"
    );
    let needs = book(&engine, "e", json!({})).await;
    assert!(matches!(needs.envelope, Envelope::Needs(_)), "{needs:?}");
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_failing_hook_keeps_the_result_and_says_why_in_detail_and_audit() {
    let sent: Sent = Default::default();
    let audit = Arc::new(MemoryAudit::new());
    let engine = engine(sent.clone(), audit.clone());
    for (room, how, why) in [
        (1, "throw", "mail server down"),
        (2, "panic", "it panicked"),
        (3, "hang", "it did not finish within 300 ms"),
    ] {
        let r = book(&engine, how, json!({"room": room, "hook": how})).await;
        assert_eq!(r.envelope, Envelope::Ok(json!({"booked": room})), "{how}");
        let detail = r.detail.clone().unwrap_or_default();
        assert!(
            detail.contains("on_success failed") && detail.contains(why),
            "{how}: {detail}"
        );
    }
    assert!(sent.lock().unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let records = audit.query(AuditQuery::all()).await.unwrap();
    assert_eq!(records.len(), 3, "one record per call");
    for record in records {
        assert_eq!(record.outcome, tooljig::audit::Outcome::Ok, "{record:?}");
        let detail = record.detail.unwrap_or_default();
        assert!(detail.contains("on_success failed"), "{detail}");
    }
    // The engine keeps serving.
    let r = book(&engine, "after", json!({"room": 4})).await;
    assert_eq!(r.envelope, Envelope::Ok(json!({"booked": 4})));
    assert_eq!(sent.lock().unwrap().len(), 1);
}
