//! Guardrails combined the way a real app combines them (docs/guardrails.md, "How the
//! guardrails combine"): a call is charged against a rate limit once, for the execution that
//! runs; a replay or a cache hit is not charged; a decided approval is never dropped; a turn's
//! `needs` and its pending approvals surface together; the agent loop keys its calls.

mod guardrails_common;

use guardrails_common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tooljig::agent::*;
use tooljig::providers::{ModelTurn, ToolCall};
use tooljig::*;

/// Three a minute per principal: the support desk's refund limit.
fn three_a_minute() -> RateLimit {
    RateLimit::per_principal(3, Duration::from_secs(60))
}

fn refunds(e: &Engine, runs: &Runs, policy: Policy) {
    let schema = json!({"type": "object", "properties": {"amount": {"type": "number"}}});
    e.register(echo(
        "refund",
        schema,
        policy.rate_limit(three_a_minute()),
        runs,
    ))
    .unwrap();
}

/// Approval by a supervisor, not by the user who asked.
fn supervised() -> Policy {
    let mut p = Policy::default().require_approval();
    p.approval.approver_roles = vec!["supervisor".into()];
    p
}

fn supervisor() -> Caller {
    let mut c = caller("sam");
    c.roles = vec!["supervisor".into()];
    c
}

fn refund(id: &str, amount: u32) -> Call {
    Call::new(id, "refund", json!({ "amount": amount }))
}

fn codes(out: &BatchResult) -> Vec<String> {
    out.results
        .iter()
        .map(|r| match r.envelope.code() {
            Some(c) => c.as_str().to_string(),
            None => "ok".into(),
        })
        .collect()
}

async fn approve_all(e: &Engine, out: &BatchResult, who: &Caller) {
    for r in &out.results {
        let info = r.approval.as_ref().expect("a pending approval");
        let decision = Decision::Approve {
            arguments_hash: info.arguments_hash.clone(),
            remember: None,
        };
        e.decide(info.id.as_deref().unwrap(), decision, who)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn approved_calls_run_on_the_charge_they_made_when_they_asked() {
    let runs = Runs::default();
    let e = Engine::new();
    refunds(&e, &runs, supervised());
    let user = caller("u1");
    let calls = (0..3).map(|i| refund(&format!("r{i}"), 60 + i)).collect();
    let out = run(&e, calls, user.clone()).await;
    assert!(
        out.results
            .iter()
            .all(|r| r.status == CallStatus::PendingApproval)
    );
    // The fourth refund of the minute is refused at once: the three held ones hold the budget.
    let fourth = run(&e, vec![refund("r3", 70)], user.clone()).await;
    assert_eq!(codes(&fourth), ["rate_limited"]);
    approve_all(&e, &out, &supervisor()).await;
    let resumed = e.resume(out.run_id.as_deref().unwrap()).await.unwrap();
    assert_eq!(codes(&resumed), ["ok", "ok", "ok"], "{resumed:?}");
    assert_eq!(runs.get(), 3);
}

#[tokio::test]
async fn an_edited_approval_is_not_charged_again() {
    let runs = Runs::default();
    let e = Engine::new();
    let one = RateLimit::per_principal(1, Duration::from_secs(60));
    let schema = json!({"type": "object", "properties": {"amount": {"type": "number"}}});
    e.register(echo("refund", schema, supervised().rate_limit(one), &runs))
        .unwrap();
    let out = run(&e, vec![refund("r0", 80)], caller("u1")).await;
    let info = out.results[0].approval.clone().unwrap();
    let edit = Decision::Edit {
        arguments_hash: info.arguments_hash,
        arguments: json!({"amount": 50}),
    };
    e.decide(info.id.as_deref().unwrap(), edit, &supervisor())
        .await
        .unwrap();
    let resumed = e.resume(out.run_id.as_deref().unwrap()).await.unwrap();
    assert_eq!(resumed.results[0].envelope.to_value()["data"]["amount"], 50);
}

#[tokio::test]
async fn a_retry_with_the_same_key_replays_without_spending_budget() {
    let runs = Runs::default();
    let e = Engine::new();
    refunds(
        &e,
        &runs,
        Policy::default().idempotent(IdempotencyMode::Key),
    );
    let user = caller("u1");
    for i in 0..3 {
        let call = refund(&format!("r{i}"), 10).idempotency_key(format!("req-{i}"));
        assert_eq!(codes(&run(&e, vec![call], user.clone()).await), ["ok"]);
    }
    // The budget is spent: a new request is limited, the client's retry of one it lost the
    // answer to gets the stored result.
    let fresh = refund("r3", 10).idempotency_key("req-3");
    assert_eq!(
        codes(&run(&e, vec![fresh], user.clone()).await),
        ["rate_limited"]
    );
    let retry = refund("r0-again", 10).idempotency_key("req-0");
    let out = run(&e, vec![retry], user.clone()).await;
    assert_eq!(codes(&out), ["ok"]);
    assert!(out.results[0].replayed);
    assert_eq!(runs.get(), 3);
}

#[tokio::test]
async fn a_replay_is_refused_to_a_caller_who_may_not_use_the_tool() {
    let runs = Runs::default();
    let e = Engine::new();
    let policy = Policy::default()
        .idempotent(IdempotencyMode::Arguments)
        .scopes(["refunds.write"]);
    refunds(&e, &runs, policy);
    let mut allowed = caller("u1");
    allowed.scopes = vec!["refunds.write".into()];
    assert_eq!(
        codes(&run(&e, vec![refund("r0", 10)], allowed).await),
        ["ok"]
    );
    // Same principal and arguments (so the same key), without the scope: no stored result.
    let out = run(&e, vec![refund("r0", 10)], caller("u1")).await;
    assert_eq!(codes(&out), ["scopes_missing"]);
    assert!(!out.results[0].replayed);
}

#[tokio::test]
async fn a_cache_hit_is_not_charged() {
    let runs = Runs::default();
    let e = Engine::new();
    let policy = Policy::default()
        .effect(Effect::Read)
        .cache(CachePolicy::ttl(Duration::from_secs(60)))
        .rate_limit(RateLimit::per_principal(1, Duration::from_secs(60)));
    e.register(echo("balance", object(), policy, &runs))
        .unwrap();
    let ask = || vec![Call::new("b", "balance", json!({"account": 1}))];
    for _ in 0..3 {
        assert_eq!(codes(&run(&e, ask(), caller("u1")).await), ["ok"]);
    }
    assert_eq!(runs.get(), 1);
    // The one charge was the execution's: another account is limited.
    let other = vec![Call::new("b", "balance", json!({"account": 2}))];
    assert_eq!(codes(&run(&e, other, caller("u1")).await), ["rate_limited"]);
}

#[tokio::test]
async fn retries_of_one_call_are_one_charge() {
    let e = Engine::new();
    let tries = Runs::default();
    let t = tries.clone();
    let tool = Tool::from_fn("flaky", "Fails once.", object(), move |_, _| {
        let t = t.clone();
        async move {
            let n = t.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n == 0 {
                Err(HandlerError::Tool(ToolError::new(
                    ErrorCode::ExternalApiError,
                    "transient",
                )))
            } else {
                Ok(json!("done"))
            }
        }
    });
    let mut policy =
        Policy::default().rate_limit(RateLimit::per_principal(2, Duration::from_secs(60)));
    policy.retry.attempts = 3;
    policy.retry.backoff_ms = 1;
    e.register(tool.policy(policy)).unwrap();
    let once = |id: &str| vec![Call::new(id, "flaky", json!({}))];
    assert_eq!(codes(&run(&e, once("a"), caller("u1")).await), ["ok"]);
    assert_eq!(tries.get(), 2);
    assert_eq!(codes(&run(&e, once("b"), caller("u1")).await), ["ok"]);
    assert_eq!(
        codes(&run(&e, once("c"), caller("u1")).await),
        ["rate_limited"]
    );
}

#[tokio::test]
async fn a_running_batch_tells_its_run_id_so_it_can_be_cancelled_from_outside() {
    let store = Arc::new(MemoryStore::new());
    let e = Engine::new().with_state_store(store);
    let started = Arc::new(tokio::sync::Notify::new());
    let s = started.clone();
    e.register(Tool::from_fn("slow", "Waits.", object(), move |_, ctx| {
        let s = s.clone();
        async move {
            s.notify_one();
            ctx.cancel.cancelled().await;
            Ok(json!("stopped"))
        }
    }))
    .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let options = BatchOptions {
        events: Some(tx),
        ..Default::default()
    };
    let e = Arc::new(e);
    let running = {
        let e = e.clone();
        tokio::spawn(async move {
            e.run(
                vec![Call::new("s", "slow", json!({}))],
                Caller::default(),
                options,
            )
            .await
        })
    };
    let Some(Event::BatchStarted { run_id, .. }) = rx.recv().await else {
        panic!("the first event is the batch's start")
    };
    started.notified().await;
    assert!(e.cancel_run(&run_id, Some("operator")).await.unwrap());
    let out = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the cancelled run ends")
        .unwrap();
    assert_eq!(out.run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(codes(&out), ["cancelled"]);
}

#[tokio::test]
async fn the_pending_envelope_names_the_run_to_resume() {
    let e = Engine::new();
    e.register(echo(
        "send",
        object(),
        Policy::default().require_approval(),
        &Runs::default(),
    ))
    .unwrap();
    let out = run(&e, vec![Call::new("s", "send", json!({}))], caller("u1")).await;
    let error = &out.results[0].envelope.to_value()["error"];
    assert_eq!(error["run_id"], json!(out.run_id.unwrap()));
    assert_eq!(
        error["approval_id"],
        json!(out.results[0].approval.as_ref().unwrap().id)
    );
}

// ---- the agent loop ----

fn turn(calls: &[(&str, &str, Value)]) -> ModelTurn {
    ModelTurn::calls(
        calls
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.to_string()))
            .collect(),
    )
}

fn agent(e: &Arc<Engine>, turns: Vec<ModelTurn>) -> Agent {
    Agent::new(e.clone(), ScriptedModel::new("m", turns).shared())
}

#[tokio::test]
async fn the_loop_keys_each_model_call_so_key_mode_tools_run_once() {
    let runs = Runs::default();
    let e = Arc::new(Engine::new());
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let k = keys.clone();
    let r = runs.clone();
    let tool = Tool::from_fn("charge", "Charges a card.", object(), move |_, ctx| {
        k.lock().unwrap().push(ctx.idempotency_key());
        r.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move { Ok(json!("charged")) }
    });
    e.register(tool.policy(Policy::default().idempotent(IdempotencyMode::Key)))
        .unwrap();
    let turns = vec![
        turn(&[("c1", "charge", json!({"cents": 500}))]),
        ModelTurn::text("Charged."),
    ];
    let mut state = AgentState::new("charge me");
    let out = agent(&e, turns).run(&mut state, &caller("u1"), None).await;
    assert_eq!(out.answer, "Charged.", "{out:?}");
    assert_eq!(runs.get(), 1);
    // The same call of the same conversation, run again (a reloaded state replayed by the
    // app), is replayed: the key is the conversation's run id and the call's id.
    let again = e
        .run(
            vec![
                Call::new("c1", "charge", json!({"cents": 500}))
                    .idempotency_key(tooljig::agent::call_key(&state.run_id, "c1")),
            ],
            caller("u1"),
            BatchOptions::default(),
        )
        .await;
    assert!(again.results[0].replayed, "{again:?}");
    assert_eq!(runs.get(), 1);
    assert_eq!(keys.lock().unwrap().len(), 1);
}

fn approval_tools(e: &Engine, runs: &Runs) {
    e.register(echo("refund", object(), supervised(), runs))
        .unwrap();
    let schema = json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]});
    e.register(echo("ship", schema, Policy::default(), runs))
        .unwrap();
}

#[tokio::test]
async fn a_new_message_runs_what_was_approved_and_cancels_only_what_still_waits() {
    let runs = Runs::default();
    let store = Arc::new(MemoryStore::new());
    let e = Arc::new(Engine::new().with_state_store(store));
    approval_tools(&e, &runs);
    let turns = vec![
        turn(&[
            ("a", "refund", json!({"amount": 60})),
            ("b", "refund", json!({"amount": 70})),
        ]),
        ModelTurn::text("One refund done; the other was not made."),
    ];
    let agent = agent(&e, turns);
    let user = caller("u1");
    let mut state = AgentState::new("refund both");
    let out = agent.run(&mut state, &user, None).await;
    let RunStatus::Suspended { pending, .. } = &out.status else {
        panic!("{:?}", out.status)
    };
    let a = pending.iter().find(|p| p.call_id == "a").unwrap();
    let decision = Decision::Approve {
        arguments_hash: a.arguments_hash.clone().unwrap(),
        remember: None,
    };
    e.decide(a.approval_id.as_deref().unwrap(), decision, &supervisor())
        .await
        .unwrap();
    let mut state = AgentState::from_json(&state.to_json()).unwrap();
    let engine_run = state
        .suspended
        .as_ref()
        .unwrap()
        .batch_run_id
        .clone()
        .unwrap();
    let out = agent
        .send(&mut state, "and what about shipping?", &user, None)
        .await;
    assert_eq!(
        runs.get(),
        1,
        "the approved refund ran, the undecided one did not"
    );
    assert!(matches!(out.status, RunStatus::Finished { .. }), "{out:?}");
    let filed: Vec<_> = state
        .messages
        .iter()
        .filter_map(|m| match m {
            tooljig::providers::Message::Tool { results } => Some(results.clone()),
            _ => None,
        })
        .flatten()
        .map(|r| (r.call_id.clone(), r.envelope.is_ok()))
        .collect();
    assert_eq!(filed, [("a".to_string(), true), ("b".to_string(), false)]);
    // The run was cancelled: a late decision on the abandoned call runs nothing.
    let b = pending.iter().find(|p| p.call_id == "b").unwrap();
    let late = Decision::Approve {
        arguments_hash: b.arguments_hash.clone().unwrap(),
        remember: None,
    };
    let _ = e
        .decide(b.approval_id.as_deref().unwrap(), late, &supervisor())
        .await;
    assert!(
        state.suspended.is_none(),
        "the state no longer waits on the engine's run"
    );
    let _ = e.resume(&engine_run).await;
    assert_eq!(
        runs.get(),
        1,
        "a cancelled run runs nothing, whatever is decided later"
    );
}

#[tokio::test]
async fn needs_and_a_pending_approval_of_one_turn_surface_together() {
    let runs = Runs::default();
    let e = Arc::new(Engine::new());
    approval_tools(&e, &runs);
    let turns = vec![turn(&[
        ("a", "refund", json!({"amount": 60})),
        ("s", "ship", json!({})),
    ])];
    let mut state = AgentState::new("refund and ship");
    let out = agent(&e, turns).run(&mut state, &caller("u1"), None).await;
    let RunStatus::Suspended { pending, needs } = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "a");
    assert_eq!(needs.len(), 1);
    assert_eq!(needs[0].call_id, "s");
    assert_eq!(needs[0].fields, ["order"]);
    assert!(out.answer.contains("order"), "{}", out.answer);
    // It survives being stored.
    assert_eq!(AgentState::from_json(&state.to_json()).unwrap(), state);
}
