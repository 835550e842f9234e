//! OpenAI strict mode: schemas converted to the strict subset, nulls undone on the way back.

use serde_json::{Value, json};
use tooljig::providers::strict::{drop_optional_nulls, to_strict};
use tooljig::providers::{ModelTurn, OpenAiChat, ProviderFormat, ToolCall};
use tooljig::{Call, Caller, Engine, Tool};

fn meeting_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "counterpart": {"type": "string", "description": "Name or email", "minLength": 1},
            "durationMins": {"type": "integer", "minimum": 5, "maximum": 240},
            "window": {"$ref": "#/$defs/Window"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "when": {"type": "string", "format": "date-time"},
            "room": {"type": "string", "format": "uri"}
        },
        "required": ["counterpart"],
        "$defs": {"Window": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}, "required": ["start"]}}
    })
}

#[test]
fn converts_to_the_strict_subset() {
    let s = to_strict(&meeting_schema()).unwrap();
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(
        s["required"],
        json!([
            "counterpart",
            "durationMins",
            "window",
            "tags",
            "when",
            "room"
        ])
    );
    assert_eq!(s["properties"]["counterpart"]["type"], "string");
    assert_eq!(
        s["properties"]["counterpart"]["description"],
        "Name or email (minLength: 1)"
    );
    assert_eq!(
        s["properties"]["durationMins"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(s["properties"]["durationMins"]["minimum"], 5);
    assert_eq!(
        s["properties"]["window"],
        json!({"anyOf": [{"$ref": "#/$defs/Window"}, {"type": "null"}]})
    );
    assert_eq!(s["properties"]["tags"]["type"], json!(["array", "null"]));
    assert!(s["properties"]["tags"].get("uniqueItems").is_none());
    assert_eq!(s["properties"]["when"]["format"], "date-time");
    assert!(s["properties"]["room"].get("format").is_none());
    let w = &s["$defs"]["Window"];
    assert_eq!(w["additionalProperties"], false);
    assert_eq!(w["required"], json!(["start", "end"]));
    assert_eq!(w["properties"]["end"]["type"], json!(["string", "null"]));
}

#[test]
fn refuses_what_strict_cannot_say() {
    assert!(to_strict(&json!({"type": "string"})).is_err());
    assert!(
        to_strict(&json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}))
            .is_err()
    );
    assert!(to_strict(&json!({"type": "object", "properties": {"x": {}}})).is_err());
    // The tool is then offered non-strict, with its own schema.
    let spec = tooljig::ToolSpec::new(
        "free",
        "",
        json!({"type": "object", "properties": {"x": {}}}),
    );
    let tools = OpenAiChat::strict().tools(std::slice::from_ref(&spec));
    assert_eq!(tools[0]["function"]["strict"], false);
    assert_eq!(tools[0]["function"]["parameters"], spec.input_schema);
}

#[tokio::test]
async fn strict_nulls_are_dropped_so_the_original_schema_validates() {
    let engine = Engine::new();
    engine
        .register(Tool::from_fn(
            "schedule",
            "",
            meeting_schema(),
            |args: Value, _| async move { Ok(args) },
        ))
        .unwrap();
    let specs = engine.specs();
    let tools = OpenAiChat::strict().tools(&specs);
    assert_eq!(tools[0]["function"]["strict"], true);
    // What a strict-mode model sends: every field, optional ones null.
    let sent = r#"{"counterpart":"Aviad","durationMins":null,"window":{"start":"12:00","end":null},"tags":null,"when":null,"room":null}"#;
    let raw = engine
        .run(
            vec![Call::new("a", "schedule", sent)],
            Caller::default(),
            Default::default(),
        )
        .await;
    assert_eq!(
        raw.results[0].envelope.code().map(|c| c.as_str()),
        Some("invalid_arguments"),
        "nulls break the original schema"
    );
    let mut turn = ModelTurn::calls(vec![ToolCall::new("a", "schedule", sent)]);
    turn.drop_strict_nulls(&specs);
    let fixed = engine
        .run(turn.into_batch().0, Caller::default(), Default::default())
        .await;
    assert_eq!(
        fixed.results[0].envelope.to_value(),
        json!({"ok": true, "data": {"counterpart": "Aviad", "window": {"start": "12:00"}}})
    );
}

#[test]
fn nulls_allowed_by_the_schema_stay() {
    let schema = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "string"}}, "required": ["b"]});
    let mut v = json!({"a": null, "b": null});
    drop_optional_nulls(&mut v, &schema);
    assert_eq!(
        v,
        json!({"a": null, "b": null}),
        "a allows null; b is required"
    );
}
