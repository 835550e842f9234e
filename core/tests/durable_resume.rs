//! Resume races and crashes: two processes resuming one run at once run each call once and
//! both return its results; a call claimed by a pass that died is decided by its effect
//! class; unknown runs refused.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tooljig::store::{Expect, Namespace};
use tooljig::*;

fn app(store: Arc<dyn StateStore>, runs: Arc<AtomicUsize>) -> Engine {
    let engine = Engine::new().with_state_store(store);
    engine
        .register(
            Tool::from_fn(
                "transfer",
                "Moves money.",
                json!({"type": "object"}),
                move |a: Value, _| {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        Ok(a)
                    }
                },
            )
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    engine
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tooljig-resume-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn suspended(engine: &Engine) -> (String, Vec<CallResult>) {
    let alice = Caller::principal("alice");
    let out = engine
        .run(
            vec![
                Call::new("t1", "transfer", json!({"n": 1})),
                Call::new("t2", "transfer", json!({"n": 2})),
            ],
            alice.clone(),
            BatchOptions::default(),
        )
        .await;
    for r in &out.results {
        let a = r.approval.as_ref().unwrap();
        engine
            .decide(
                a.id.as_deref().unwrap(),
                Decision::Approve {
                    arguments_hash: a.arguments_hash.clone(),
                    remember: None,
                },
                &alice,
            )
            .await
            .unwrap();
    }
    (out.run_id.unwrap(), out.results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_resumers_racing_run_each_call_once() {
    let dir = tempdir();
    let runs = Arc::new(AtomicUsize::new(0));
    let open = || -> Arc<dyn StateStore> { Arc::new(SqliteStore::open(dir.join("s.db")).unwrap()) };
    // Two "processes": separate engines, separate connections to one file.
    let a = app(open(), runs.clone());
    let b = app(open(), runs.clone());
    let (run_id, _) = suspended(&a).await;
    let (ra, rb) = tokio::join!(a.resume(&run_id), b.resume(&run_id));
    // One pass runs the calls; the other waits for it and returns its results.
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert!(
        ra.results
            .iter()
            .chain(&rb.results)
            .all(|r| r.envelope.is_ok())
    );
    assert_eq!(
        ra.results
            .iter()
            .map(|r| r.envelope.to_value())
            .collect::<Vec<_>>(),
        rb.results
            .iter()
            .map(|r| r.envelope.to_value())
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "each approved call ran once"
    );
    // Whoever was refused can resume later: everything is finished, nothing runs.
    let end = b.resume(&run_id).await.unwrap();
    assert!(end.results.iter().all(|r| r.envelope.is_ok()), "{end:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_claimed_by_a_dead_resume_is_reported_not_rerun() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = app(store.clone(), runs.clone());
    let (run_id, _) = suspended(&engine).await;
    // A resume in a process that died after starting t1: its claim stays, unfinished.
    store
        .put(
            Namespace::RunCall,
            &format!("{run_id}/t1"),
            Expect::Absent,
            json!({"state": "started", "at_ms": 1}),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    let out = engine.resume(&run_id).await.unwrap();
    let t1 = out.get("t1").unwrap();
    assert_eq!(t1.envelope.code(), Some(ErrorCode::OutcomeUnknown));
    assert_eq!(t1.envelope.to_value()["error"]["started_at_ms"], 1);
    assert!(
        t1.envelope.to_value()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not run again")
    );
    assert!(out.get("t2").unwrap().envelope.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only t2 ran");
}

#[tokio::test]
async fn unknown_runs_are_refused() {
    let engine = Engine::new();
    let e = engine.resume("run_nope").await.unwrap_err();
    assert_eq!(
        (e.code, e.details["reason"].as_str()),
        (ErrorCode::NotFound, Some("unknown_run"))
    );
    assert!(engine.run_record("run_nope").await.unwrap().is_none());
}

/// What a crash mid-call leaves is decided by the tool's effect class: `pure` and
/// `idempotent` calls run again (the handler gets the same idempotency key every time), an
/// `at_most_once` call ends as `outcome_unknown` and does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_recovered_by_effect_class() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let engine = Engine::new().with_state_store(store.clone());
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    for (name, class) in [
        ("look", Some(EffectClass::Pure)),
        ("send", Some(EffectClass::Idempotent)),
        ("charge", None),
    ] {
        let seen = seen.clone();
        let mut policy = Policy::default().require_approval();
        if let Some(class) = class {
            policy = policy.effect_class(class);
        }
        engine
            .register(
                Tool::from_fn(name, "", json!({"type": "object"}), move |a: Value, ctx| {
                    let seen = seen.clone();
                    async move {
                        seen.lock()
                            .unwrap()
                            .push((ctx.tool.to_string(), ctx.idempotency_key()));
                        Ok(a)
                    }
                })
                .policy(policy),
            )
            .unwrap();
    }
    let alice = Caller::principal("alice");
    let calls = ["look", "send", "charge"]
        .map(|t| Call::new(t, t, json!({})))
        .to_vec();
    let out = engine
        .run(calls, alice.clone(), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().unwrap();
    for r in &out.results {
        let a = r.approval.as_ref().unwrap();
        engine
            .approve(a.id.as_deref().unwrap(), &a.arguments_hash, &alice, None)
            .await
            .unwrap();
        // A resume that died after starting each call: claims stay, unfinished.
        store
            .put(
                Namespace::RunCall,
                &format!("{run_id}/{}", r.call_id),
                Expect::Absent,
                json!({"state": "started", "at_ms": 7}),
                None,
            )
            .await
            .unwrap()
            .unwrap();
    }
    let done = engine.resume(&run_id).await.unwrap();
    assert!(done.get("look").unwrap().envelope.is_ok());
    let send = done.get("send").unwrap();
    assert!(send.envelope.is_ok() && send.recovered);
    let charge = done.get("charge").unwrap().envelope.to_value();
    assert_eq!(charge["error"]["code"], "outcome_unknown", "{charge}");
    let snapshot = seen.lock().unwrap().clone();
    let tools: Vec<&str> = snapshot.iter().map(|(t, _)| t.as_str()).collect();
    assert!(tools.contains(&"look") && tools.contains(&"send") && !tools.contains(&"charge"));
    // The key is stable: derived from the run and the call, whoever runs it.
    let expected = ToolContext {
        call_id: Arc::from("send"),
        tool: Arc::from("send"),
        attempt: 1,
        caller: Arc::new(alice),
        cancel: CancellationToken::new(),
        host: None,
        run_id: Arc::from(run_id.as_str()),
        app_key: None,
        progress: Default::default(),
        tools: None,
    }
    .idempotency_key();
    let key = &snapshot.iter().find(|(t, _)| t == "send").unwrap().1;
    assert_eq!(key, &expected);
    assert!(key.starts_with("tj_") && key.len() == 35);
    // Finished now: a later resume runs nothing again.
    engine.resume(&run_id).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// A pass that crashed after asking for approval leaves the request in the store; the pass
/// that takes the run over finds it, and the decision made on it meanwhile, instead of asking
/// again: the approved call runs on the first `resume`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_on_a_crashed_passs_request_is_honoured_on_takeover() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = app(store.clone(), runs.clone());
    let (run_id, results) = suspended(&engine).await;
    // As the crashed first pass left it: written before its calls, no results recorded.
    let got = store.get(Namespace::Run, &run_id).await.unwrap().unwrap();
    let mut record = got.value;
    record["state"] = json!("running");
    record["results"] = json!([]);
    store
        .put(
            Namespace::Run,
            &run_id,
            Expect::Version(got.version),
            record,
            None,
        )
        .await
        .unwrap()
        .unwrap();
    let out = engine.resume(&run_id).await.unwrap();
    assert!(out.results.iter().all(|r| r.envelope.is_ok()), "{out:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "each approved call ran once"
    );
    assert!(
        engine.pending(None).await.unwrap().is_empty(),
        "nothing asked again"
    );
    for (r, before) in out.results.iter().zip(&results) {
        assert_eq!(
            r.approval.as_ref().unwrap().id,
            before.approval.as_ref().unwrap().id,
            "the predecessor's request"
        );
    }
}
