//! Imported definitions through the engine: a tool imported under a dotted name answers to
//! both names, and its schema judges calls like any other tool's.

use serde_json::{Value, json};
use tooljig::import::{bfcl, openai};
use tooljig::{BatchOptions, Call, Caller, Engine, Tool, handler_fn};

fn echo() -> std::sync::Arc<dyn tooljig::Handler> {
    handler_fn(|args: Value, _ctx| async move { Ok(args) })
}

#[tokio::test]
async fn imported_tools_answer_to_both_names() {
    let specs = openai::from_openai_list(&json!([
        {"type": "function", "function": {"name": "calendar.create", "description": "Creates an event.",
         "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}},
        {"name": "calendar_list", "parameters": {"type": "object", "properties": {}}}
    ]))
    .unwrap();
    let engine = Engine::new();
    for spec in specs {
        engine.register(Tool::new(spec, echo())).unwrap();
    }
    let exported: Vec<Value> = engine.specs().iter().map(openai::to_openai).collect();
    assert_eq!(exported[0]["function"]["name"], "calendar_create");
    assert_eq!(exported[1]["function"]["name"], "calendar_list");

    let out = engine
        .run(
            vec![
                Call::new("a", "calendar.create", r#"{"title": "standup"}"#),
                Call::new("b", "calendar_create", json!({"title": "retro"})),
                Call::new("c", "calendar.create", json!({})),
                Call::new("d", "calendar.create", json!({"title": 5})),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let env = |id: &str| out.get(id).unwrap().envelope.to_value();
    assert_eq!(env("a"), json!({"ok": true, "data": {"title": "standup"}}));
    assert_eq!(out.get("a").unwrap().tool, "calendar_create");
    assert_eq!(env("b")["ok"], true);
    assert_eq!(env("c"), json!({"ok": false, "needs": {"title": true}}));
    assert_eq!(env("d")["error"]["code"], "invalid_arguments");
}

#[tokio::test]
async fn bfcl_docs_are_closed_and_typed() {
    let spec = bfcl::from_bfcl(&json!({
        "name": "weather.get_forecast_by_coordinates",
        "description": "Forecast.",
        "parameters": {"type": "dict", "properties": {
            "coordinates": {"type": "tuple", "items": {"type": "float"}},
            "days": {"type": "integer", "default": "7"}
        }, "required": ["coordinates"]}
    }))
    .unwrap();
    let engine = Engine::new();
    engine.register(Tool::new(spec, echo())).unwrap();
    let name = "weather.get_forecast_by_coordinates";
    let out = engine
        .run(
            vec![
                Call::new("ok", name, json!({"coordinates": [52.5, 13.4], "days": 3})),
                Call::new("extra", name, json!({"coordinates": [1, 2], "hours": 3})),
                Call::new(
                    "float_days",
                    name,
                    json!({"coordinates": [1, 2], "days": 1.5}),
                ),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let code = |id: &str| out.get(id).unwrap().envelope.code().map(|c| c.as_str());
    assert!(out.get("ok").unwrap().envelope.is_ok());
    assert_eq!(code("extra"), Some("invalid_arguments"));
    assert_eq!(code("float_days"), Some("invalid_arguments"));
}
