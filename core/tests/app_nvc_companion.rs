//! Seed 002 in Rust (`apps/nvc_companion/main.rs`): the JSON plan's parallel and dependent
//! calls with schema defaults, the prefilter, the forced fallback, cache TTLs and the seed's
//! limits, checked in the answers, the audit log and the tools' model-call costs.

#[path = "../../apps/nvc_companion/main.rs"]
mod nvc_companion;

use nvc_companion::Companion;
use serde_json::json;
use std::time::Duration;
use tooljig::agent::model_fn;
use tooljig::audit::{AuditQuery, AuditRecord};
use tooljig::providers::ModelTurn;

const FEELING: &str = "Ich fühle mich frustriert, weil mein Partner nicht zuhört";

async fn records(c: &Companion) -> Vec<AuditRecord> {
    let mut all = c
        .engine
        .audit()
        .unwrap()
        .query(AuditQuery::all())
        .await
        .unwrap();
    all.sort_by_key(|r| r.seq);
    all
}

#[test]
fn the_demo_runs() {
    nvc_companion::main().unwrap();
}

#[tokio::test]
async fn a_plan_runs_two_calls_in_parallel_and_one_after_them_with_defaults() {
    let mut c = Companion::new("u_mia", "idle", Duration::ZERO).unwrap();
    let small = c.send("Hallo!").await;
    assert_eq!(small.counters.tool_calls, 0, "small talk costs no tool");
    let out = c.send(FEELING).await;
    assert!(
        out.answer
            .starts_with("Ich höre Frustration, und dass dir Verständnis wichtig ist."),
        "{}",
        out.answer
    );
    assert_eq!(out.counters.tool_successes, 3);
    let all = records(&c).await;
    let kb = all
        .iter()
        .find(|r| r.tool == "retrieve_nvc_knowledge")
        .unwrap();
    assert_eq!(
        kb.arguments,
        Some(json!({"query": "Verständnis", "limit": 3, "minSimilarity": 0.7}))
    );
    let mem = all.iter().find(|r| r.tool == "search_memories").unwrap();
    assert_eq!(mem.arguments.as_ref().unwrap()["userId"], "u_mia");
    assert!(
        all.iter()
            .filter(|r| r.tool != "retrieve_nvc_knowledge")
            .all(|r| r.seq < kb.seq)
    );

    // The same message again: the read tools come from the cache; the extraction runs again.
    c.send(FEELING).await;
    let again: Vec<(String, bool)> = records(&c).await[3..]
        .iter()
        .map(|r| (r.tool.clone(), r.cached))
        .collect();
    assert!(
        again.contains(&("search_memories".into(), true))
            && again.contains(&("retrieve_nvc_knowledge".into(), true))
    );
    let costs = c.costs.lock().unwrap().clone();
    assert_eq!(costs.get("extract_nvc_components"), Some(&2));
    assert_eq!(costs.get("retrieve_nvc_knowledge"), Some(&1));
}

#[tokio::test]
async fn a_switch_request_is_analysed_even_when_the_planner_forgets() {
    let mut c = Companion::new("u_mia", "idle", Duration::ZERO).unwrap();
    let out = c
        .send("Können wir zur Selbst-Empathie wechseln? Ich fühle mich gestresst.")
        .await;
    assert!(
        out.answer.contains("Gern wechseln wir zu self_empathy."),
        "{}",
        out.answer
    );
    let all = records(&c).await;
    let switch: Vec<_> = all
        .iter()
        .filter(|r| r.tool == "analyze_path_switch")
        .collect();
    assert_eq!(switch.len(), 1);
    assert_eq!(
        switch[0].arguments.as_ref().unwrap()["currentPath"],
        "idle",
        "from the caller"
    );
}

#[tokio::test]
async fn at_most_five_tools_a_turn_and_five_seconds_a_tool() {
    let six = model_fn("six", |_, _| async move {
        let calls: Vec<_> = (0..6).map(|i| json!({"id": format!("m{i}"), "tool": "search_memories", "params": {"query": format!("q{i}")}})).collect();
        Ok(ModelTurn::text(json!({"toolCalls": calls}).to_string()))
    });
    let mut c = Companion::with_planner("u_mia", "idle", Duration::ZERO, six).unwrap();
    let out = c.send(FEELING).await;
    assert_eq!(out.counters.tool_successes, 5);
    assert_eq!(
        out.counters.failures_by_code.get("too_many_calls"),
        Some(&1)
    );

    let mut slow = Companion::new("u_mia", "idle", Duration::from_millis(5_500)).unwrap();
    let out = slow.send(FEELING).await;
    assert!(
        out.answer.starts_with("Ich höre Frustration"),
        "the turn still answers"
    );
    let kb = records(&slow)
        .await
        .into_iter()
        .find(|r| r.tool == "retrieve_nvc_knowledge")
        .unwrap();
    assert_eq!(kb.code, Some(tooljig::ErrorCode::Timeout));
}
