//! The JSON-structured protocol: schema, prompt, parse with repair, dependencies,
//! results in one message.

use serde_json::{Value, json};
use tooljig::providers::json_protocol::{JsonProtocol, SchemaShape, format_results};
use tooljig::*;

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "search_memories",
            "Search the user's memories.",
            json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}),
        ),
        ToolSpec::new(
            "extract_nvc_components",
            "Extract observation, feelings, needs, request.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
    ]
}

#[test]
fn response_schema_ties_each_tool_to_its_parameters() {
    let p = JsonProtocol::default();
    let s = p.response_schema(&specs());
    assert_eq!(s["required"], json!(["toolCalls"]));
    let branches = s["properties"]["toolCalls"]["items"]["anyOf"]
        .as_array()
        .unwrap();
    assert_eq!(branches.len(), 2);
    assert_eq!(
        branches[0]["properties"]["tool"],
        json!({"type": "string", "enum": ["search_memories"]})
    );
    assert_eq!(branches[0]["properties"]["params"], specs()[0].input_schema);
    assert!(branches[0]["properties"].get("dependsOn").is_some());
    assert!(s["properties"].get("reasoning").is_some());
    // The schema itself compiles, and a real answer validates against it.
    let answer = json!({"toolCalls": [{"id": "m", "tool": "search_memories", "params": {"query": "x"}}], "reasoning": "r"});
    let v = jsonschema_ok(&s, &answer);
    assert!(v);
    let flat = JsonProtocol {
        shape: SchemaShape::Flat,
        dependencies: false,
        reasoning: false,
        max_calls: Some(5),
    }
    .response_schema(&specs());
    assert_eq!(
        flat["properties"]["toolCalls"]["items"]["properties"]["tool"]["enum"],
        json!(["search_memories", "extract_nvc_components"])
    );
    assert_eq!(flat["properties"]["toolCalls"]["maxItems"], 5);
    assert!(flat["properties"].get("reasoning").is_none());
}

fn jsonschema_ok(schema: &Value, value: &Value) -> bool {
    // Validate through the engine's own compiler: register a tool whose input is the schema.
    let e = Engine::new();
    e.register(Tool::from_fn(
        "probe",
        "",
        schema.clone(),
        |v: Value, _| async move { Ok(v) },
    ))
    .is_ok()
        && tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(e.run(
                vec![Call::new("p", "probe", value.clone())],
                Caller::default(),
                Default::default(),
            ))
            .results[0]
            .envelope
            .is_ok()
}

#[test]
fn prompt_describes_tools_and_format() {
    let text = JsonProtocol::default().prompt(&specs());
    assert!(text.contains("search_memories: Search the user's memories."));
    assert!(text.contains("\"required\":[\"query\"]"));
    assert!(text.contains("dependsOn"));
    assert!(text.contains("$from"));
}

#[tokio::test]
async fn parses_repaired_json_into_a_dependent_batch() {
    let engine = Engine::new();
    engine
        .register(Tool::from_fn(
            "extract_nvc_components",
            "",
            specs()[1].input_schema.clone(),
            |_, _| async move { Ok(json!({"feelings": ["frustriert"], "needs": ["Verständnis"]})) },
        ))
        .unwrap();
    engine
        .register(Tool::from_fn(
            "retrieve_nvc_knowledge",
            "",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            |a: Value, _| async move { Ok(json!({"query_used": a["query"]})) },
        ))
        .unwrap();
    // Fenced, a trailing comma, single quotes: as models write it.
    let answer = "```json\n{'toolCalls': [\n {'id': 'x', 'tool': 'extract_nvc_components', 'params': {'message': 'Ich fühle mich frustriert'}},\n {'id': 'k', 'tool': 'retrieve_nvc_knowledge', 'params': {'query': {'$from': 'x', 'pointer': '/needs/0'}}, 'dependsOn': ['x']},\n], 'reasoning': 'feelings first'}\n```";
    let plan = JsonProtocol::default().parse(answer).unwrap();
    assert!(plan.repaired);
    assert_eq!(plan.reasoning.as_deref(), Some("feelings first"));
    assert_eq!(plan.calls[1].depends_on, vec!["x"]);
    let out = engine
        .run(plan.calls, Caller::default(), Default::default())
        .await;
    assert_eq!(
        out.get("k").unwrap().envelope.to_value(),
        json!({"ok": true, "data": {"query_used": "Verständnis"}})
    );
    let msg = format_results(&out.results);
    assert!(msg.contains(r#"{"id":"x","tool":"extract_nvc_components","result":{"ok":true"#));
    assert!(msg.contains(r#""id":"k""#));
}

#[test]
fn bad_answers_are_refused_with_a_reason() {
    let p = JsonProtocol::default();
    assert_eq!(
        p.parse("{\"toolCalls\": 3}").unwrap_err().code,
        ErrorCode::MalformedArguments
    );
    assert_eq!(
        p.parse("{\"toolCalls\": [{\"tool\": \"a\", \"params\": {\"q\": \"hel")
            .unwrap_err()
            .code,
        ErrorCode::IncompleteArguments
    );
    assert!(p.parse("[]").unwrap().calls.is_empty());
    for prose in [
        "Es klingt, als wärst du frustriert.",
        "[\"a\", \"b\"]",
        "{\"toolCalls\": [1, 2]}",
    ] {
        assert_eq!(
            p.parse(prose).unwrap_err().code,
            ErrorCode::MalformedArguments,
            "{prose}"
        );
    }
    let plan = p.parse("{\"toolCalls\": [{\"name\": \"a\", \"arguments\": {}}, {\"tool\": \"b\", \"params\": {}}]}").unwrap();
    assert_eq!(plan.calls[0].tool, "a");
    assert_eq!(plan.calls[1].id, "call_1");
}

/// The same plan twice in one conversation: the second turn's ids are renamed (they were used
/// in the first), and its `dependsOn` and `$from` follow the rename, so the dependent call
/// runs with this turn's value.
#[tokio::test]
async fn a_plan_repeated_in_a_later_turn_keeps_its_references() {
    use std::sync::Arc;
    use tooljig::agent::{Agent, AgentOptions, AgentState, ScriptedModel, ToolProtocol};
    use tooljig::providers::ModelTurn;

    let engine = Engine::new();
    engine
        .register(Tool::from_fn(
            "need",
            "The need.",
            json!({"type": "object"}),
            |a: Value, _| async move { Ok(json!({"need": a["of"]})) },
        ))
        .unwrap();
    engine
        .register(Tool::from_fn(
            "kb",
            "Knowledge.",
            json!({"type": "object", "required": ["query"]}),
            |a: Value, _| async move {
                Ok(json!(format!(
                    "about {}",
                    a["query"].as_str().unwrap_or("?")
                )))
            },
        ))
        .unwrap();
    let plan = |of: &str| {
        ModelTurn::text(
            json!({"toolCalls": [
                {"id": "n", "tool": "need", "params": {"of": of}},
                {"id": "k", "tool": "kb", "dependsOn": ["n"], "params": {"query": {"$from": "n", "pointer": "/need"}}}
            ]})
            .to_string(),
        )
    };
    let model = ScriptedModel::new(
        "m",
        [
            plan("rest"),
            ModelTurn::text("one"),
            plan("trust"),
            ModelTurn::text("two"),
        ],
    )
    .shared();
    let agent = Agent::new(Arc::new(engine), model.clone()).options(AgentOptions {
        protocol: ToolProtocol::Json(JsonProtocol::default()),
        ..Default::default()
    });
    let mut state = AgentState::new("first");
    agent.run(&mut state, &Caller::default(), None).await;
    let out = agent
        .send(&mut state, "second", &Caller::default(), None)
        .await;
    assert_eq!(out.counters.tool_successes, 4, "{out:?}");
    let answered = format!("{:?}", model.requests()[3].messages.last().unwrap());
    assert!(answered.contains("about trust"), "{answered}");
}
