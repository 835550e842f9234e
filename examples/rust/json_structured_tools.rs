//! JSON-structured tool calling for a model whose native tool calling is not good
//! enough. A cheap planner (Gemini 2.0 Flash-Lite in the seed) answers with one JSON object
//! naming three tools: `search_memories` and `extract_nvc_components` run in parallel,
//! `retrieve_nvc_knowledge` waits for the extraction and searches with the need it found.
//! All results go back in one message, and a better responder (Gemini 2.5 Flash) answers.
//!
//! Both models are scripted, so it runs offline: `cargo run -p tooljig --example json_structured_tools`

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tooljig::agent::{Agent, AgentOptions, AgentState, Mode, ScriptedModel, ToolProtocol};
use tooljig::providers::ModelTurn;
use tooljig::providers::json_protocol::JsonProtocol;
use tooljig::{Caller, Engine, Policy, Tool};

fn engine(start: Instant) -> Result<Arc<Engine>, Box<dyn std::error::Error>> {
    let engine = Engine::new();
    let stamp = move |name: &str| println!("  {:>4} ms  {name}", start.elapsed().as_millis());
    let five_s = Policy::default().timeout(Duration::from_secs(5));
    engine.register(
        Tool::from_fn(
            "search_memories",
            "Search the user's personal memories for relevant context.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}, "limit": {"type": "integer", "default": 3},
                "minSimilarity": {"type": "number", "default": 0.7}}, "required": ["query"]}),
            move |a: Value, _| async move {
                stamp("search_memories started");
                tokio::time::sleep(Duration::from_millis(120)).await; // a vector search
                Ok(json!([{"text": "Partner forgot our anniversary dinner", "similarity": 0.82, "query": a["query"]}]))
            },
        )
        .policy(five_s.clone()),
    )?;
    engine.register(
        Tool::from_fn(
            "extract_nvc_components",
            "Extract observation, feelings, needs and request from a message.",
            json!({"type": "object", "properties": {"message": {"type": "string"}, "locale": {"type": "string", "default": "de"}},
                   "required": ["message"]}),
            move |_a: Value, _| async move {
                stamp("extract_nvc_components started");
                tokio::time::sleep(Duration::from_millis(100)).await; // a lightweight model call
                Ok(json!({"observation": "mein Partner hört nicht zu", "feelings": ["frustriert"], "needs": ["Verständnis"], "request": null}))
            },
        )
        .policy(five_s.clone()),
    )?;
    engine.register(
        Tool::from_fn(
            "retrieve_nvc_knowledge",
            "Retrieve relevant NVC knowledge from the knowledge base.",
            json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}),
            move |a: Value, _| async move {
                stamp("retrieve_nvc_knowledge started");
                tokio::time::sleep(Duration::from_millis(80)).await;
                Ok(json!([{"title": "Empathisches Zuhören", "about": a["query"]}]))
            },
        )
        .policy(five_s),
    )?;
    Ok(Arc::new(engine))
}

/// The planner's JSON, as the model writes it (`responseSchema` keeps it well-formed).
const PLAN: &str = r#"{
  "toolCalls": [
    {"id": "mem", "tool": "search_memories", "params": {"query": "Partner Zuhören", "limit": 3}},
    {"id": "nvc", "tool": "extract_nvc_components", "params": {"message": "Ich fühle mich frustriert, weil mein Partner nicht zuhört"}},
    {"id": "kb", "tool": "retrieve_nvc_knowledge", "dependsOn": ["nvc"],
     "params": {"query": {"$from": "nvc", "pointer": "/needs/0"}, "limit": 3}}
  ],
  "reasoning": "Feelings and needs are named; memories give context; knowledge should follow the extracted need."
}"#;

#[tokio::main]
/// Runs the scenario: the JSON plan, three tools (two in parallel), the answer.
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let protocol = JsonProtocol {
        max_calls: Some(5),
        ..Default::default()
    };
    let planner = Arc::new(ScriptedModel::new(
        "gemini-2.0-flash-lite",
        Vec::<ModelTurn>::new(),
    ));
    planner.push_with(|req| {
        // What the planner was given: the tools in the prompt and a response schema.
        assert!(req.tools.is_empty() && req.response_schema.is_some());
        Ok(ModelTurn::text(PLAN))
    });
    let responder = Arc::new(ScriptedModel::new(
        "gemini-2.5-flash",
        Vec::<ModelTurn>::new(),
    ));
    responder.push_with(|req| {
        let results = req
            .messages
            .last()
            .map(|m| format!("{m:?}"))
            .unwrap_or_default();
        let need = if results.contains("Verständnis") {
            "Verständnis"
        } else {
            "?"
        };
        Ok(ModelTurn::text(format!(
            "Es klingt, als wärst du frustriert, weil dir {need} wichtig ist. Magst du erzählen, \
             was du dir in dem Moment von deinem Partner gewünscht hättest?"
        )))
    });
    let engine = engine(start)?;
    let caller = Caller::principal("user_1");
    let schema = protocol.response_schema(&engine.specs_for(&caller));
    let agent = Agent::new(engine, planner.clone())
        .responder(responder.clone())
        .options(AgentOptions {
            system: Some("Du begleitest Menschen mit Gewaltfreier Kommunikation.".into()),
            protocol: ToolProtocol::Json(protocol.clone()),
            mode: Mode::ActFirst,
            ..Default::default()
        });

    println!(
        "response schema offered to the planner:\n{}\n",
        serde_json::to_string_pretty(&schema)?
    );
    let mut state = AgentState::new("Ich fühle mich frustriert, weil mein Partner nicht zuhört");
    println!("tools as they start:");
    let out = agent.run(&mut state, &caller, None).await;
    println!("\nanswer: {}", out.answer);
    let c = &out.counters;
    println!(
        "model calls {}, tool calls {} ({} ok), tools wall time {} ms (sequential would be ~300 ms)",
        c.model_calls, c.tool_calls, c.tool_successes, c.tools_ms
    );
    assert_eq!(c.tool_successes, 3);
    assert!(out.answer.contains("Verständnis"));
    Ok(())
}
