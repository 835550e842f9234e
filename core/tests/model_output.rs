//! What the model sees apart from what the app gets: a tool's `to_model_output` hook and its
//! `model_output_max_chars` budget shape the model's view (`CallResult::model_output`, read by
//! every provider through `ToolResult`), the app keeps the whole data; failures fail closed.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tooljig::model_output::UNSHOWN;
use tooljig::output::TRUNCATION_MARKER;
use tooljig::providers::ToolResult;
use tooljig::*;

/// `search` returns 50 rows; its hook tells the model how many and the first title.
fn engine(views: Arc<AtomicUsize>, policy: Policy) -> Engine {
    let engine = Engine::new();
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "title": format!("row {i}")}))
        .collect();
    let hook = handler_fn(move |data: Value, ctx: ToolContext| {
        let views = views.clone();
        async move {
            views.fetch_add(1, Ordering::SeqCst);
            assert_eq!(
                ctx.caller.principal.as_deref(),
                Some("u1"),
                "the call's caller"
            );
            let rows = data["rows"].as_array().cloned().unwrap_or_default();
            if rows.is_empty() {
                return Err(HandlerError::unexpected("nothing to summarise"));
            }
            Ok(json!({"count": rows.len(), "first": rows[0]["title"]}))
        }
    });
    engine
        .register(
            Tool::from_fn(
                "search",
                "Searches.",
                json!({"type": "object", "properties": {"empty": {"type": "boolean"}}}),
                move |args, _| {
                    let rows = rows.clone();
                    async move {
                        match args["empty"].as_bool() {
                            Some(true) => Ok(json!({"rows": []})),
                            _ => Ok(json!({"rows": rows})),
                        }
                    }
                },
            )
            .to_model_output(hook)
            .policy(policy),
        )
        .unwrap();
    engine
}

async fn one(engine: &Engine, arguments: Value) -> CallResult {
    let out = engine
        .run(
            vec![Call::new("c", "search", arguments)],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
        .await;
    out.results.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_model_reads_the_hooks_view_and_the_app_keeps_the_data() {
    let views = Arc::new(AtomicUsize::new(0));
    let engine = engine(views.clone(), Policy::default());
    let r = one(&engine, json!({})).await;
    let Envelope::Ok(data) = &r.envelope else {
        panic!("{:?}", r.envelope)
    };
    assert_eq!(data["rows"].as_array().unwrap().len(), 50, "the app's data");
    let view = json!({"count": 50, "first": "row 0"});
    assert_eq!(r.model_output.as_deref(), Some(&view));
    assert_eq!(r.model_envelope(), Envelope::Ok(view.clone()));
    let content = ToolResult::from_result(&r).content();
    assert_eq!(
        content,
        r#"{"ok":true,"data":{"count":50,"first":"row 0"}}"#
    );
    assert_eq!(views.load(Ordering::SeqCst), 1);
    // Every provider's tool message reads the view, and the JSON protocol's too.
    let text = providers::json_protocol::format_results(std::slice::from_ref(&r));
    assert!(
        text.contains(r#""data":{"count":50,"first":"row 0"}"#),
        "{text}"
    );
    assert!(!text.contains("row 49"), "{text}");
}

#[tokio::test]
async fn a_budget_cuts_what_the_model_reads_and_a_failing_hook_fails_closed() {
    let views = Arc::new(AtomicUsize::new(0));
    let budget = Policy {
        model_output_max_chars: Some(12),
        ..Policy::default()
    };
    let engine = engine(views.clone(), budget);
    let r = one(&engine, json!({})).await;
    let cut = r.model_output.as_deref().and_then(Value::as_str).unwrap();
    assert!(
        cut.starts_with(r#"{"count":50,"#) && cut.contains(TRUNCATION_MARKER),
        "{cut}"
    );
    assert!(cut.ends_with("12 of 28 characters shown]"), "{cut}");
    assert!(r.envelope.is_ok());

    let failed = one(&engine, json!({"empty": true})).await;
    assert_eq!(
        failed.envelope,
        Envelope::Ok(json!({"rows": []})),
        "the app's data"
    );
    assert_eq!(failed.model_output.as_deref(), Some(&json!(UNSHOWN)));
    assert!(
        failed
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("to_model_output failed: nothing to summarise"),
        "{:?}",
        failed.detail
    );
}

#[tokio::test]
async fn errors_are_not_shaped_and_a_replayed_result_is() {
    let views = Arc::new(AtomicUsize::new(0));
    let engine = engine(
        views.clone(),
        Policy::default().idempotent(IdempotencyMode::Arguments),
    );
    let refused = one(&engine, json!({"empty": "yes"})).await;
    assert_eq!(refused.envelope.code(), Some(ErrorCode::InvalidArguments));
    assert!(refused.model_output.is_none());
    assert_eq!(refused.model_envelope(), refused.envelope);
    assert_eq!(views.load(Ordering::SeqCst), 0, "no data, no hook");

    let first = one(&engine, json!({})).await;
    let again = one(&engine, json!({})).await;
    assert!(again.replayed);
    assert_eq!(again.model_output, first.model_output);
    assert_eq!(views.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_budget_alone_cuts_the_data() {
    let engine = Engine::new();
    engine
        .register(
            Tool::from_fn("page", "", json!({"type": "object"}), |_, _| async move {
                Ok(json!("x".repeat(10_000)))
            })
            .policy(Policy {
                model_output_max_chars: Some(100),
                ..Policy::default()
            }),
        )
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("p", "page", json!({}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let r = out.get("p").unwrap();
    assert_eq!(r.envelope, Envelope::Ok(json!("x".repeat(10_000))));
    let seen = r.model_output.as_deref().and_then(Value::as_str).unwrap();
    assert!(seen.starts_with(&"x".repeat(100)) && seen.ends_with("100 of 10000 characters shown]"));
}

#[tokio::test]
async fn a_token_budget_cuts_after_the_hook_and_the_app_keeps_the_data() {
    let views = Arc::new(AtomicUsize::new(0));
    let budget = Policy {
        model_output_max_tokens: Some(4),
        ..Policy::default()
    };
    let engine = engine(views, budget);
    let r = one(&engine, json!({})).await;
    let seen = r.model_output.as_deref().and_then(Value::as_str).unwrap();
    assert!(
        seen.starts_with(r#"{"count"#) && seen.contains(TRUNCATION_MARKER),
        "{seen}"
    );
    assert!(seen.ends_with("tokens shown]"), "{seen}");
    let Envelope::Ok(data) = &r.envelope else {
        panic!("{:?}", r.envelope)
    };
    assert_eq!(data["rows"].as_array().map(Vec::len), Some(50));
}
