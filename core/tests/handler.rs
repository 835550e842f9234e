//! The handler seam (`handler.rs`): what the engine hands a handler, and how a typed tool
//! reads it.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::*;

/// Records what it was called with, and through which method.
#[derive(Default)]
struct Lent {
    seen: Mutex<Vec<(&'static str, Value)>>,
}

impl Handler for Lent {
    fn call(&self, args: Value, _ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.seen.lock().expect("unpoisoned").push(("call", args));
        Box::pin(async { Ok(json!("given")) })
    }

    fn call_ref(&self, args: &Value, _ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.seen
            .lock()
            .expect("unpoisoned")
            .push(("call_ref", args.clone()));
        Box::pin(async { Ok(json!("lent")) })
    }
}

#[tokio::test]
async fn the_engine_lends_a_handler_the_final_arguments_and_keeps_them_on_the_result() {
    let lent = Arc::new(Lent::default());
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
        "required": ["city"]
    });
    let engine = Engine::new();
    engine
        .register(Tool::new(
            ToolSpec::new("forecast", "Forecast.", schema),
            lent.clone(),
        ))
        .expect("registers");
    let out = engine
        .run(
            vec![Call::new("a", "forecast", r#"{"city": "Oslo"}"#)],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let r = &out.results[0];
    assert_eq!(r.envelope.data(), Some(&json!("lent")));
    let final_arguments = json!({"city": "Oslo", "days": 3});
    assert_eq!(r.arguments, Some(final_arguments.clone()));
    assert_eq!(
        *lent.seen.lock().expect("unpoisoned"),
        vec![("call_ref", final_arguments)]
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    #[serde(default)]
    days: u32,
}

/// Its schema says `n` is a string; serde reads a number: an app bug the schema cannot catch.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Mismatched {
    #[schemars(with = "String")]
    #[allow(dead_code)]
    n: u32,
}

#[tokio::test]
async fn a_typed_tool_reads_its_arguments_and_an_app_bug_in_its_type_fails_the_call_alone() {
    let engine = Engine::new();
    engine
        .register(Tool::typed(
            "forecast",
            "Forecast.",
            |f: Forecast, _| async move {
                Ok::<_, HandlerError>(json!({"city": f.city, "days": f.days}))
            },
        ))
        .expect("registers");
    engine
        .register(Tool::typed(
            "mismatched",
            "Mismatched.",
            |_: Mismatched, _| async { Ok::<_, HandlerError>(json!("never")) },
        ))
        .expect("registers");
    let out = engine
        .run(
            vec![
                Call::new("a", "forecast", json!({"city": "Oslo", "days": 2})),
                Call::new("b", "mismatched", json!({"n": "seven"})),
                Call::new("c", "forecast", json!({"city": "Lima"})),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let [a, b, c] = &out.results[..] else {
        panic!("three results")
    };
    assert_eq!(a.envelope.data(), Some(&json!({"city": "Oslo", "days": 2})));
    assert_eq!(c.envelope.data(), Some(&json!({"city": "Lima", "days": 0})));
    assert_eq!(b.envelope.code(), Some(ErrorCode::InternalError));
    assert!(
        b.detail
            .as_deref()
            .is_some_and(|d| d.contains("invalid type")),
        "the detail says what serde refused: {:?}",
        b.detail
    );
}
