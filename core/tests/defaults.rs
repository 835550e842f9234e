//! Schema defaults from a typed Rust tool: schemars writes `#[serde(default)]` fields'
//! defaults into the schema, and the core fills them in before validation (the language-neutral
//! cases are the conformance vector `validation/schema_defaults_are_filled.json`).

use serde_json::json;
use tooljig::{BatchOptions, Call, Caller, Engine, HandlerError, Tool};

fn three() -> u32 {
    3
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    #[serde(default = "three")]
    days: u32,
}

#[tokio::test]
async fn a_typed_tools_serde_defaults_are_filled_and_named() {
    let engine = Engine::new();
    engine
        .register(Tool::typed(
            "forecast",
            "Forecast.",
            |f: Forecast, _ctx| async move {
                Ok::<_, HandlerError>(json!({"city": f.city, "days": f.days}))
            },
        ))
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("a", "forecast", json!({"city": "Oslo"}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let r = &out.results[0];
    assert_eq!(r.envelope.data(), Some(&json!({"city": "Oslo", "days": 3})));
    assert_eq!(&*r.defaults, ["/days"]);
    assert_eq!(r.arguments, Some(json!({"city": "Oslo", "days": 3})));
}
