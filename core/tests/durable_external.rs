//! Client-side tools: pending_external, submit_result, validation, refusals.

use serde_json::json;
use tooljig::*;

fn engine() -> Engine {
    let engine = Engine::new().with_external_expiry_ms(60_000);
    engine
        .register(
            Tool::external(ToolSpec::new(
                "ask_user",
                "Asks the user in the browser.",
                json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
            ))
            .output_schema(json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})),
        )
        .unwrap();
    engine
        .register(Tool::from_fn(
            "echo",
            "Echoes.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    engine
}

fn reason(e: &ToolError) -> &str {
    e.details["reason"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_result_completes_the_call_and_the_run_goes_on() {
    let engine = engine();
    let out = engine
        .run(
            vec![
                Call::new("q", "ask_user", json!({"question": "Which day?"})),
                Call::new(
                    "e",
                    "echo",
                    json!({"day": {"$from": "q", "pointer": "/answer"}}),
                ),
                Call::new("x", "echo", json!({"n": 1})),
            ],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
        .await;
    let q = out.get("q").unwrap();
    assert_eq!(q.status, CallStatus::PendingExternal);
    assert_eq!(
        q.arguments,
        Some(json!({"question": "Which day?"})),
        "what the client needs"
    );
    assert_eq!(out.get("e").unwrap().status, CallStatus::Waiting);
    assert!(out.get("x").unwrap().envelope.is_ok());
    let run_id = out.run_id.clone().unwrap();
    let pending = engine.pending_external(&run_id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool, "ask_user");

    // Validation against the output schema: refused, the call stays pending.
    let bad = engine
        .submit_result(
            &run_id,
            "q",
            &Caller::principal("u1"),
            Ok(json!({"answer": 3})),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidOutput);
    assert_eq!(reason(&bad), "invalid_result");
    let unknown = engine
        .submit_result(
            &run_id,
            "nope",
            &Caller::principal("u1"),
            Ok(json!({"answer": "x"})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.code, reason(&unknown)),
        (ErrorCode::NotFound, "unknown_call")
    );
    let other_run = engine
        .submit_result(
            "run_forged",
            "q",
            &Caller::principal("u1"),
            Ok(json!({"answer": "x"})),
        )
        .await
        .unwrap_err();
    assert_eq!(other_run.code, ErrorCode::NotFound);

    // Someone else holding the run and call ids: refused, the call stays pending.
    for stranger in [
        Caller::default(),
        Caller::principal("mallory"),
        Caller {
            principal: Some("u1".into()),
            tenant: Some("other".into()),
            ..Default::default()
        },
    ] {
        let refused = engine
            .submit_result(&run_id, "q", &stranger, Ok(json!({"answer": "Monday"})))
            .await
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::PermissionDenied);
        assert_eq!(reason(&refused), "not_the_caller");
    }
    let env = engine
        .submit_result(
            &run_id,
            "q",
            &Caller::principal("u1"),
            Ok(json!({"answer": "Tuesday"})),
        )
        .await
        .unwrap();
    assert_eq!(
        env.to_value(),
        json!({"ok": true, "data": {"answer": "Tuesday"}})
    );
    let dup = engine
        .submit_result(
            &run_id,
            "q",
            &Caller::principal("u1"),
            Ok(json!({"answer": "Friday"})),
        )
        .await
        .unwrap_err();
    assert_eq!((dup.code, reason(&dup)), (ErrorCode::Conflict, "duplicate"));

    let resumed = engine.resume(&run_id).await.unwrap();
    assert_eq!(
        resumed.get("q").unwrap().envelope.to_value(),
        json!({"ok": true, "data": {"answer": "Tuesday"}})
    );
    assert_eq!(
        resumed.get("e").unwrap().envelope.to_value(),
        json!({"ok": true, "data": {"day": "Tuesday"}})
    );
    assert!(engine.pending_external(&run_id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_error_reaches_the_model_and_dependents_do_not_run() {
    let engine = engine();
    let out = engine
        .run(
            vec![
                Call::new("q", "ask_user", json!({"question": "Which day?"})),
                Call::new("e", "echo", json!({})).depends_on("q"),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let run_id = out.run_id.unwrap();
    engine
        .submit_result(
            &run_id,
            "q",
            &Caller::default(),
            Err(ToolError::new(
                ErrorCode::Cancelled,
                "the user closed the dialog",
            )),
        )
        .await
        .unwrap();
    let resumed = engine.resume(&run_id).await.unwrap();
    assert_eq!(
        resumed.get("q").unwrap().envelope.code(),
        Some(ErrorCode::Cancelled)
    );
    assert_eq!(
        resumed.get("e").unwrap().envelope.code(),
        Some(ErrorCode::DependencyFailed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_submission_is_refused_and_the_call_times_out() {
    let engine = engine().with_external_expiry_ms(50);
    let out = engine
        .run(
            vec![Call::new("q", "ask_user", json!({"question": "?"}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let run_id = out.run_id.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let late = engine
        .submit_result(&run_id, "q", &Caller::default(), Ok(json!({"answer": "x"})))
        .await
        .unwrap_err();
    assert_eq!((late.code, reason(&late)), (ErrorCode::Conflict, "late"));
    let resumed = engine.resume(&run_id).await.unwrap();
    assert_eq!(resumed.results[0].envelope.code(), Some(ErrorCode::Timeout));
}
