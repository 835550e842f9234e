//! Finding tools (`Engine::search_tools`, the `search_tools` tool): what a caller may not use
//! is never found, and recall measured on BFCL's `multiple` and `parallel_multiple` questions,
//! both among each question's own candidates and among every function of the file at once.

mod corpora;

use serde_json::{Value, json};
use std::collections::HashSet;
use tooljig::import::bfcl::{BfclOptions, from_bfcl_entry};
use tooljig::{
    BatchOptions, Call, Caller, Engine, HandlerError, Tool, ToolContext, ToolSpec, handler_fn,
};

fn tool(name: &str, description: &str, policy: Value) -> Tool {
    let spec = ToolSpec::from_value(json!({
        "name": name, "description": description,
        "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}},
        "policy": policy
    }))
    .unwrap();
    Tool::new(spec, handler_fn(|_a, _c| async { Ok(json!(null)) }))
}

#[tokio::test]
async fn the_model_finds_tools_it_may_use_and_only_those() {
    let engine = Engine::new();
    engine
        .register(tool("get_weather", "Current weather.", json!({})))
        .unwrap();
    engine
        .register(tool(
            "get_forecast",
            "Weather forecast for the next days.",
            json!({}),
        ))
        .unwrap();
    engine
        .register(tool(
            "admin_weather_reset",
            "Resets the weather station.",
            json!({"scopes": ["admin"]}),
        ))
        .unwrap();
    engine
        .register(tool("send_email", "Sends an email.", json!({})))
        .unwrap();
    let alice = Caller::principal("alice");
    let names = |specs: Vec<ToolSpec>| specs.into_iter().map(|s| s.name).collect::<Vec<_>>();
    let found = names(engine.search_tools("weather forecast for tomorrow", 5, &alice));
    assert_eq!(found[0], "get_forecast");
    assert!(
        !found.contains(&"admin_weather_reset".to_string()),
        "{found:?}"
    );
    assert_eq!(names(engine.search_tools("weather", 1, &alice)).len(), 1);

    engine.register(engine.tool_search()).unwrap();
    // A tool registered after the search tool is found too.
    engine
        .register(tool("weather_alerts", "Severe weather alerts.", json!({})))
        .unwrap();
    let out = engine
        .run(
            vec![Call::new(
                "s",
                "search_tools",
                json!({"query": "severe weather alerts"}),
            )],
            alice,
            BatchOptions::default(),
        )
        .await;
    let found = out.results[0].envelope.data().cloned().unwrap();
    assert_eq!(found[0]["name"], "weather_alerts", "{found}");
    assert!(found[0]["input_schema"]["properties"]["city"].is_object());
    let all: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !all.contains(&"search_tools") && !all.contains(&"admin_weather_reset"),
        "{all:?}"
    );
}

/// `(question, candidate docs, expected function names)` of a BFCL file and its answers.
fn bfcl(file: &str) -> Option<Vec<(String, Value, HashSet<String>)>> {
    let dir = corpora::locate("bfcl")?;
    let read = |path: std::path::PathBuf| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let answers = read(dir.join("possible_answer").join(file));
    let entries = read(dir.join(file));
    Some(
        entries
            .into_iter()
            .zip(answers)
            .map(|(entry, answer)| {
                let question = entry["question"][0]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|m| m["role"] == "user")
                    .map(|m| m["content"].as_str().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" ");
                let expected = answer["ground_truth"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|call| call.as_object().unwrap().keys().cloned())
                    .collect();
                (question, entry, expected)
            })
            .collect(),
    )
}

/// Registers `entries`' functions (each name once) and answers the engine.
fn engine_of<'a>(entries: impl IntoIterator<Item = &'a Value>) -> Engine {
    let engine = Engine::new();
    for entry in entries {
        for spec in from_bfcl_entry(entry, &BfclOptions::default()).unwrap() {
            let _ = engine.register(Tool::new(
                spec,
                handler_fn(|_a, _c| async { Ok(json!(null)) }),
            ));
        }
    }
    engine
}

/// The share of questions whose expected functions (n of them) are all among the first
/// n + `extra` found.
fn recall(cases: &[(String, Value, HashSet<String>)], pooled: bool, extra: usize) -> f64 {
    let everything = pooled.then(|| engine_of(cases.iter().map(|c| &c.1)));
    let caller = Caller::default();
    let hits = cases
        .iter()
        .filter(|(question, entry, expected)| {
            let own;
            let engine = match &everything {
                Some(e) => e,
                None => {
                    own = engine_of([entry]);
                    &own
                }
            };
            let found: HashSet<String> = engine
                .search_tools(question, expected.len() + extra, &caller)
                .into_iter()
                .map(|s| s.original_name.unwrap_or(s.name))
                .collect();
            expected.iter().all(|name| found.contains(name))
        })
        .count();
    hits as f64 / cases.len() as f64
}

#[test]
fn recall_on_bfcl_multiple_questions() {
    for file in ["BFCL_v4_multiple.json", "BFCL_v4_parallel_multiple.json"] {
        let Some(cases) = bfcl(file) else { return };
        // n: how many functions the question needs (1 in `multiple`, 2 to 4 in
        // `parallel_multiple`).
        let own = recall(&cases, false, 0);
        let pooled = recall(&cases, true, 0);
        let pooled4 = recall(&cases, true, 4);
        let pool = engine_of(cases.iter().map(|c| &c.1)).specs().len();
        println!(
            "{file}: {} questions; all needed functions in the first n found: among the \
             question's own candidates {own:.3}; among all of the file's {pool} functions {pooled:.3} \
             (in the first n + 4: {pooled4:.3})",
            cases.len()
        );
        // Floors a little under what was measured (docs/tools.md), so a change that makes
        // search worse fails here.
        let (floor_own, floor_pooled4) = if file.contains("parallel") {
            (0.95, 0.7)
        } else {
            (0.95, 0.9)
        };
        assert!(own >= floor_own, "{file}: {own}");
        assert!(pooled4 >= floor_pooled4, "{file}: {pooled4}");
    }
}

#[tokio::test]
async fn an_agent_offers_the_best_matches_and_search_tools() {
    use std::sync::{Arc, Mutex};
    use tooljig::agent::{Agent, AgentOptions, AgentState, model_fn};
    use tooljig::providers::ModelTurn;
    let engine = Engine::new();
    engine
        .register(tool("get_weather", "Current weather.", json!({})))
        .unwrap();
    engine
        .register(tool("send_email", "Sends an email.", json!({})))
        .unwrap();
    engine
        .register(tool("book_table", "Books a restaurant table.", json!({})))
        .unwrap();
    engine.register(engine.tool_search()).unwrap();
    let offered = Arc::new(Mutex::new(Vec::new()));
    let seen = offered.clone();
    let model = model_fn("m", move |request: tooljig::providers::ModelRequest, _| {
        let names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        seen.lock().unwrap().push(names);
        async { Ok(ModelTurn::text("It is sunny.")) }
    });
    let options = AgentOptions {
        offer_tools: Some(1),
        ..AgentOptions::default()
    };
    let agent = Agent::new(Arc::new(engine), model).options(options);
    let mut state = AgentState::new("What's the weather in Paris?");
    agent.run(&mut state, &Caller::default(), None).await;
    let offered = offered.lock().unwrap().clone();
    assert_eq!(offered[0], ["get_weather", "search_tools"], "{offered:?}");
}

#[tokio::test]
async fn an_app_selector_picks_the_tools_of_a_turn_and_cannot_widen_them() {
    use std::sync::{Arc, Mutex};
    use tooljig::agent::{Agent, AgentState, model_fn};
    use tooljig::providers::ModelTurn;
    let engine = Engine::new();
    for (name, description) in [
        ("get_weather", "Current weather."),
        ("send_email", "Sends an email."),
        ("book_table", "Books a restaurant table."),
    ] {
        engine.register(tool(name, description, json!({}))).unwrap();
    }
    let mut admin = ToolSpec::new(
        "drop_tables",
        "Drops every table.",
        json!({"type": "object"}),
    );
    admin.policy.roles = vec!["admin".into()];
    engine
        .register(Tool::new(admin, handler_fn(|a, _| async move { Ok(a) })))
        .unwrap();
    let offered = Arc::new(Mutex::new(Vec::new()));
    let seen = offered.clone();
    let model = model_fn("m", move |request: tooljig::providers::ModelRequest, _| {
        let names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        seen.lock().unwrap().push(names);
        async { Ok(ModelTurn::text("Done.")) }
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let selector = handler_fn(move |request: serde_json::Value, ctx: ToolContext| {
        let log = log.clone();
        async move {
            let names: Vec<String> = request["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect();
            log.lock().unwrap().push((
                request["message"].clone(),
                names,
                ctx.caller.principal.clone(),
            ));
            match request["message"].as_str() {
                Some(m) if m.contains("fail") => Err(HandlerError::unexpected("selector broke")),
                // Made-up and forbidden names are ignored; the order is the selector's.
                _ => Ok(json!([
                    "send_email",
                    "drop_tables",
                    "nope",
                    "get_weather",
                    "send_email"
                ])),
            }
        }
    });
    let agent = Agent::new(Arc::new(engine), model).select_tools(selector);
    let ana = Caller::principal("ana");
    agent
        .run(&mut AgentState::new("Email Bob the forecast"), &ana, None)
        .await;
    agent
        .run(&mut AgentState::new("this will fail"), &ana, None)
        .await;
    let offered = offered.lock().unwrap().clone();
    assert_eq!(offered[0], ["send_email", "get_weather"], "{offered:?}");
    assert_eq!(
        offered[1],
        ["get_weather", "send_email", "book_table"],
        "a failing selector leaves every candidate"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked[0].0, json!("Email Bob the forecast"));
    assert_eq!(
        asked[0].1,
        ["get_weather", "send_email", "book_table"],
        "only what ana may use"
    );
    assert_eq!(asked[0].2.as_deref(), Some("ana"));
}
