//! Resume races and crashes: two processes resuming one run at once run each call once;
//! a call claimed by a resume that died is reported, never run again; unknown runs refused.

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
    let refused: Vec<&ToolError> = [&ra, &rb]
        .into_iter()
        .filter_map(|r| r.as_ref().err())
        .collect();
    for e in &refused {
        assert_eq!(e.details["reason"], "run_busy", "{e}");
    }
    assert!(refused.len() <= 1, "at least one resume goes through");
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
    assert_eq!(t1.envelope.code(), Some(ErrorCode::InternalError));
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
