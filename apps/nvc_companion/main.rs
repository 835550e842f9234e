//! The NVC companion of seed 002 in Rust: JSON-structured tool calling with the seed's
//! guardrails (the Python app beside it, `companion.py`, is the same app for a Python
//! service). One planner call answers with the seed's JSON plan; tooljig runs
//! `search_memories` and `extract_nvc_components` in parallel and `retrieve_nvc_knowledge`
//! after them with the need the extraction found; the responder answers from every result in
//! one message. 5 tools a turn, 5 s a tool, 15 s a turn; cache TTLs per tool; schema
//! defaults; a prefilter that spares small talk the expensive tools (`select_tools`,
//! `review_plan`); the forced fallback: a switch request is always analysed (`review_plan`).
//!
//! `cargo run -p tooljig --example nvc_companion` (scripted models, offline).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tooljig::agent::{
    Agent, AgentLimits, AgentOptions, AgentState, RunOutcome, ToolProtocol, model_fn,
};
use tooljig::providers::json_protocol::JsonProtocol;
use tooljig::providers::{Message, ModelRequest, ModelTurn};
use tooljig::{Caller, Engine, Handler, HandlerError, Tool, ToolSpec, handler_fn};

/// The tools that cost a model call; the prefilter spares them for small talk.
pub const EXPENSIVE: [&str; 3] = [
    "extract_nvc_components",
    "retrieve_nvc_knowledge",
    "analyze_path_switch",
];

const MEMORIES: [&str; 3] = [
    "Partner hat unseren Jahrestag vergessen",
    "Streit mit dem Partner über das Zuhören beim Abendessen",
    "Spaziergang mit der Schwester, der gutgetan hat",
];
const KNOWLEDGE: [(&str, &str); 3] = [
    (
        "Empathisches Zuhören",
        "Zuhören ohne zu bewerten, Verständnis für Gefühle und Bedürfnisse",
    ),
    (
        "Selbst-Empathie",
        "Sich selbst zuwenden bei Stress: Ruhe und Selbstfürsorge",
    ),
    (
        "Verbindung",
        "Einsamkeit weist auf das Bedürfnis nach Verbindung hin",
    ),
];
const FEELINGS: [(&str, &str); 3] = [
    ("frustriert", "Frustration"),
    ("gestresst", "Stress"),
    ("traurig", "Traurigkeit"),
];
const NEEDS: [(&str, &str); 3] = [
    ("zuhört", "Verständnis"),
    ("gestresst", "Ruhe"),
    ("allein", "Verbindung"),
];

/// Model calls the tools made, per tool (the seed's cost column).
pub type Costs = Arc<Mutex<BTreeMap<String, u32>>>;

/// One user's conversation with the companion.
pub struct Companion {
    /// The engine, its audit log in memory.
    pub engine: Arc<Engine>,
    /// Model calls made by the tools.
    pub costs: Costs,
    agent: Agent,
    state: Option<AgentState>,
    caller: Caller,
}

impl Companion {
    /// A companion for `user` on conversation path `path`; the knowledge base answers after
    /// `kb_delay` (a slow vector search).
    pub fn new(
        user: &str,
        path: &str,
        kb_delay: Duration,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        Self::with_planner(
            user,
            path,
            kb_delay,
            model_fn("scripted-planner", |r, _| async move { Ok(plan(&r)) }),
        )
    }

    /// As [`Companion::new`], with another planner.
    pub fn with_planner(
        user: &str,
        path: &str,
        kb_delay: Duration,
        planner: Arc<dyn tooljig::agent::ModelClient>,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let costs: Costs = Default::default();
        let engine = Arc::new(engine(costs.clone(), kb_delay)?);
        let responder = model_fn("scripted-responder", |r, _| async move { Ok(respond(&r)) });
        let agent = Agent::new(engine.clone(), planner)
            .responder(responder)
            .options(AgentOptions {
                system: Some("Du begleitest Menschen mit Gewaltfreier Kommunikation (GFK).".into()),
                protocol: ToolProtocol::Json(JsonProtocol {
                    max_calls: Some(5),
                    ..Default::default()
                }),
                limits: AgentLimits {
                    max_tool_calls_per_step: 5,
                    deadline_ms: Some(15_000),
                    ..Default::default()
                },
                ..Default::default()
            })
            .select_tools(prefilter())
            .review_plan(reviewer());
        let mut caller = Caller::principal(user);
        caller.attributes.insert("path".into(), json!(path));
        Ok(Companion {
            engine,
            costs,
            agent,
            state: None,
            caller,
        })
    }

    /// The user's next message; the outcome holds the answer and the run's counters.
    pub async fn send(&mut self, message: &str) -> RunOutcome {
        match &mut self.state {
            Some(state) => self.agent.send(state, message, &self.caller, None).await,
            None => {
                let state = self.state.insert(AgentState::new(message));
                self.agent.run(state, &self.caller, None).await
            }
        }
    }
}

fn spec(value: Value) -> Result<ToolSpec, Box<dyn std::error::Error>> {
    Ok(ToolSpec::from_value(value)?)
}

fn engine(costs: Costs, kb_delay: Duration) -> Result<Engine, Box<dyn std::error::Error>> {
    let engine = Engine::new().with_audit(Arc::new(tooljig::MemoryAudit::new()));
    let cost = move |tool: &str| {
        *costs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tool.into())
            .or_default() += 1
    };
    let memories = spec(
        json!({"name": "search_memories", "description": "Search the user's personal memories for relevant context.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 3},
            "minSimilarity": {"type": "number", "default": 0.7}, "userId": {"type": "string"}}, "required": ["query", "userId"]},
        "policy": {"hidden": {"userId": {"from": "principal"}}, "effect": "read", "cache": {"ttl_ms": 60_000}, "timeout_ms": 5_000}}),
    )?;
    engine.register(Tool::new(
        memories,
        handler_fn(|a: Value, _| async move {
            let limit = a["limit"].as_u64().unwrap_or(3) as usize;
            let hits: Vec<Value> = MEMORIES
                .iter()
                .filter(|m| overlaps(&a["query"], m))
                .take(limit)
                .map(|m| json!({"text": m}))
                .collect();
            Ok(json!(hits))
        }),
    ))?;
    let c = cost.clone();
    let knowledge = spec(
        json!({"name": "retrieve_nvc_knowledge", "description": "Retrieve relevant NVC knowledge from the knowledge base.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 3},
            "minSimilarity": {"type": "number", "default": 0.7}, "category": {"type": "string"}}, "required": ["query"]},
        "policy": {"effect": "read", "cache": {"ttl_ms": 300_000}, "timeout_ms": 5_000}}),
    )?;
    engine.register(Tool::new(
        knowledge,
        handler_fn(move |a: Value, _| {
            c("retrieve_nvc_knowledge");
            async move {
                tokio::time::sleep(kb_delay).await;
                let hits: Vec<Value> = KNOWLEDGE
                    .iter()
                    .filter(|(t, text)| overlaps(&a["query"], &format!("{t} {text}")))
                    .map(|(t, text)| json!({"title": t, "text": text}))
                    .collect();
                Ok(json!(hits))
            }
        }),
    ))?;
    let c = cost.clone();
    let extract = spec(
        json!({"name": "extract_nvc_components", "description": "Extract observation, feelings, needs and request from a message.",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}, "locale": {"type": "string", "default": "de"}}, "required": ["message"]},
        "policy": {"timeout_ms": 5_000}}),
    )?;
    engine.register(Tool::new(extract, handler_fn(move |a: Value, _| {
        c("extract_nvc_components");
        let text = a["message"].as_str().unwrap_or_default().to_lowercase();
        let pick = |table: &[(&'static str, &'static str)]| -> Vec<&'static str> {
            table.iter().filter(|(w, _)| text.contains(w)).map(|(_, v)| *v).collect()
        };
        let (feelings, needs) = (pick(&FEELINGS), pick(&NEEDS));
        async move { Ok(json!({"observation": null, "feelings": feelings, "needs": needs, "request": null})) }
    })))?;
    let switch = spec(
        json!({"name": "analyze_path_switch", "description": "Determine whether the user wants to switch conversation paths.",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}, "currentPath": {"type": "string"}}, "required": ["message", "currentPath"]},
        "policy": {"hidden": {"currentPath": {"from": "attribute", "name": "path"}}, "timeout_ms": 5_000}}),
    )?;
    engine.register(Tool::new(switch, handler_fn(move |a: Value, _| {
        cost("analyze_path_switch");
        let target = a["message"].as_str().unwrap_or_default().to_lowercase().contains("selbst-empathie").then_some("self_empathy");
        let should = target.is_some() && a["currentPath"].as_str() != target;
        async move { Ok(json!({"shouldSwitch": should, "suggestedPath": target, "confidence": if should { 90 } else { 20 }})) }
    })))?;
    Ok(engine)
}

fn overlaps(query: &Value, text: &str) -> bool {
    let text = text.to_lowercase();
    query
        .as_str()
        .unwrap_or_default()
        .to_lowercase()
        .split_whitespace()
        .any(|w| w.len() > 3 && text.contains(w))
}

/// Small talk: a greeting or thanks, or two words at most.
pub fn is_small_talk(message: &str) -> bool {
    let lower = message.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.len() <= 2 || ["hallo", "hi", "danke", "hey"].contains(&words[0])
}

fn wants_switch(message: &str) -> bool {
    let lower = message.to_lowercase();
    ["wechseln", "switch"].iter().any(|w| lower.contains(w))
}

/// The prefilter: small talk is not offered the expensive tools.
fn prefilter() -> Arc<dyn Handler> {
    handler_fn(|request: Value, _| async move {
        let small = is_small_talk(request["message"].as_str().unwrap_or_default());
        let names: Vec<Value> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .filter(|n| !(small && EXPENSIVE.contains(n)))
            .map(|n| json!(n))
            .collect();
        Ok(Value::Array(names))
    })
}

/// The plan as it runs: no expensive call for small talk; a switch request always analysed.
fn reviewer() -> Arc<dyn Handler> {
    handler_fn(|request: Value, _| async move {
        let message = request["message"].as_str().unwrap_or_default().to_string();
        let mut calls = request["calls"]
            .as_array()
            .cloned()
            .ok_or_else(|| HandlerError::unexpected("no calls"))?;
        if is_small_talk(&message) {
            calls.retain(|c| !EXPENSIVE.contains(&c["name"].as_str().unwrap_or_default()));
        } else if wants_switch(&message)
            && !calls.iter().any(|c| c["name"] == "analyze_path_switch")
        {
            calls.push(json!({"name": "analyze_path_switch", "arguments": {"message": message}}));
        }
        Ok(Value::Array(calls))
    })
}

fn last_text(request: &ModelRequest) -> String {
    match request.messages.last() {
        Some(Message::User { content }) => content.clone(),
        _ => String::new(),
    }
}

/// The scripted planner (Gemini 2.0 Flash-Lite in the seed): the seed's plan for a message
/// with feelings, using only the tools offered; it never thinks of the path switch.
fn plan(request: &ModelRequest) -> ModelTurn {
    let message = last_text(request);
    let offered = request
        .response_schema
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    let feels = FEELINGS
        .iter()
        .any(|(w, _)| message.to_lowercase().contains(w));
    let calls = if feels && EXPENSIVE[..2].iter().all(|t| offered.contains(t)) {
        json!([
            {"id": "mem", "tool": "search_memories", "params": {"query": message, "limit": 2}},
            {"id": "nvc", "tool": "extract_nvc_components", "params": {"message": message}},
            {"id": "kb", "tool": "retrieve_nvc_knowledge", "dependsOn": ["mem"], "params": {"query": {"$from": "nvc", "pointer": "/needs/0"}}}
        ])
    } else {
        json!([])
    };
    ModelTurn::text(json!({"toolCalls": calls, "reasoning": "what the message needs"}).to_string())
}

/// The scripted responder (Gemini 2.5 Flash): the answer from every result at once.
fn respond(request: &ModelRequest) -> ModelTurn {
    let text = last_text(request);
    let items: Vec<Value> = text
        .find('[')
        .and_then(|i| serde_json::from_str(&text[i..]).ok())
        .unwrap_or_default();
    let data = |tool: &str| {
        items
            .iter()
            .find(|i| i["tool"] == tool && i["result"]["ok"] == true)
            .map(|i| i["result"]["data"].clone())
    };
    let mut parts = Vec::new();
    if let Some(nvc) = data("extract_nvc_components") {
        parts.push(format!(
            "Ich höre {}, und dass dir {} wichtig ist.",
            nvc["feelings"][0].as_str().unwrap_or("etwas"),
            nvc["needs"][0].as_str().unwrap_or("etwas")
        ));
    }
    if let Some(switch) = data("analyze_path_switch").filter(|s| s["shouldSwitch"] == true) {
        parts.push(format!(
            "Gern wechseln wir zu {}.",
            switch["suggestedPath"].as_str().unwrap_or("?")
        ));
    }
    if let Some(kb) = data("retrieve_nvc_knowledge").filter(|k| k[0].is_object()) {
        parts.push(format!(
            "Dazu passt „{}“.",
            kb[0]["title"].as_str().unwrap_or("?")
        ));
    }
    if let Some(memory) = data("search_memories").filter(|m| m[0].is_object()) {
        parts.push(format!(
            "Ich erinnere mich: {}.",
            memory[0]["text"].as_str().unwrap_or("?")
        ));
    }
    let answer = if items.is_empty() {
        "Hallo! Schön, dass du da bist. Wie geht es dir gerade?".to_string()
    } else {
        parts.join(" ")
    };
    ModelTurn::text(answer)
}

#[tokio::main]
/// The demo: small talk, a feeling, a switch request.
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut mia = Companion::new("u_mia", "idle", Duration::ZERO)?;
    let mut before = 0;
    for message in [
        "Hallo!",
        "Ich fühle mich frustriert, weil mein Partner nicht zuhört",
        "Können wir zur Selbst-Empathie wechseln? Ich fühle mich gestresst.",
    ] {
        let out = mia.send(message).await;
        let ran = out.counters.tool_calls - before;
        before = out.counters.tool_calls;
        println!(
            "  Mia: {message}\n  GFK: {}\n       ({ran} tool calls)",
            out.answer
        );
    }
    println!(
        "\nmodel calls made by tools: {:?}",
        mia.costs.lock().map(|c| c.clone()).unwrap_or_default()
    );
    Ok(())
}
