//! Operators' requests (`Engine::ask_operator`): a process without handlers asks, exactly one
//! of the app's workers carries the request out, the asker is woken by the answer; a request
//! nobody takes is withdrawn; one whose worker died is taken again once its lease lapses.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tooljig::store::{Expect, Namespace};
use tooljig::*;

/// An engine on `store` with `send` (needs approval; counts its runs) and `book` (undone by
/// `unbook`, which logs).
fn app(store: Arc<dyn StateStore>, sent: Arc<AtomicUsize>, log: Arc<Mutex<Vec<String>>>) -> Engine {
    let engine = Engine::new().with_state_store(store);
    let obj = json!({"type": "object"});
    engine
        .register(
            Tool::from_fn("send", "Sends.", obj.clone(), move |_: Value, _| {
                let sent = sent.clone();
                async move {
                    sent.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"sent": true}))
                }
            })
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    engine
        .register(Tool::from_fn("book", "Books.", obj, |_: Value, _| async {
            Ok(json!({"booking": "b1"}))
        }))
        .unwrap();
    engine.compensate_with(
        "book",
        handler_fn(move |a: Value, _| {
            let log = log.clone();
            async move {
                log.lock()
                    .unwrap()
                    .push(format!("unbook {}", a["result"]["booking"]));
                Ok(json!({"unbooked": true}))
            }
        }),
    );
    engine
}

/// A run suspended on `send`'s approval, approved: what an operator resumes.
async fn approved_run(engine: &Engine) -> String {
    let calls = vec![
        Call::new("b", "book", json!({})),
        Call::new("s", "send", json!({})),
    ];
    let out = engine
        .run(calls, Caller::principal("ada"), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().unwrap();
    let pending = out.get("s").unwrap().approval.clone().unwrap();
    engine
        .approve(
            pending.id.as_deref().unwrap(),
            &pending.arguments_hash,
            &Caller::principal("ada"),
            None,
        )
        .await
        .unwrap();
    run_id
}

fn sqlite_store(dir: &std::path::Path) -> Arc<dyn StateStore> {
    Arc::new(SqliteStore::open(dir.join("state.db")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_worker_carries_out_a_request_and_the_asker_hears_it() {
    let dir = tempfile::tempdir().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    // Three workers (engines with handlers) and an operator's engine without any, one file.
    let workers: Vec<Arc<Engine>> = (0..3)
        .map(|_| Arc::new(app(sqlite_store(dir.path()), sent.clone(), log.clone())))
        .collect();
    let operator = Engine::new().with_state_store(sqlite_store(dir.path()));
    let run_id = approved_run(&workers[0]).await;

    let stop = CancellationToken::new();
    let serving: Vec<_> = workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (w, stop) = (w.clone(), stop.clone());
            tokio::spawn(async move { w.serve_operator_requests(&format!("w{i}"), stop).await })
        })
        .collect();

    let asked = operator
        .ask_operator(OperatorAction::Resume, &run_id, None, Some("olga"))
        .await
        .unwrap();
    assert_eq!(asked.state, RequestState::Queued);
    let answered = operator
        .wait_operator_request(&asked.id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(answered.state, RequestState::Answered, "{answered:?}");
    assert_eq!(answered.asked_by.as_deref(), Some("olga"));
    assert!(answered.worker.as_deref().unwrap().starts_with('w'));
    let result: BatchResult = serde_json::from_value(answered.result.unwrap()).unwrap();
    assert!(result.get("s").unwrap().envelope.is_ok(), "{result:?}");
    assert_eq!(sent.load(Ordering::SeqCst), 1);

    let asked = operator
        .ask_operator(OperatorAction::Rollback, &run_id, Some("b"), Some("olga"))
        .await
        .unwrap();
    let answered = operator
        .wait_operator_request(&asked.id, Duration::from_secs(20))
        .await
        .unwrap();
    let report: RollbackReport = serde_json::from_value(answered.result.unwrap()).unwrap();
    assert_eq!(report.entries.len(), 1, "{report:?}");
    assert_eq!(report.entries[0].outcome, RollbackOutcome::Compensated);
    assert_eq!(*log.lock().unwrap(), vec!["unbook \"b1\"".to_string()]);

    // Asked again: the engine's own answer (nothing left to undo) comes back, not a rerun.
    let asked = operator
        .ask_operator(OperatorAction::Rollback, &run_id, Some("b"), None)
        .await
        .unwrap();
    let again = operator
        .wait_operator_request(&asked.id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(again.state, RequestState::Answered);
    let report: RollbackReport = serde_json::from_value(again.result.unwrap()).unwrap();
    assert_eq!(
        report.entries[0].outcome,
        RollbackOutcome::AlreadyRolledBack
    );
    assert_eq!(log.lock().unwrap().len(), 1);

    stop.cancel();
    for s in serving {
        tokio::time::timeout(Duration::from_secs(5), s)
            .await
            .expect("the workers stop when asked")
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_run_is_refused_and_a_request_nobody_takes_is_withdrawn() {
    let dir = tempfile::tempdir().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let worker = app(sqlite_store(dir.path()), sent.clone(), Default::default());
    let operator = Engine::new().with_state_store(sqlite_store(dir.path()));
    let refused = operator
        .ask_operator(OperatorAction::Resume, "no-such-run", None, None)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::NotFound);

    let run_id = approved_run(&worker).await;
    let asked = operator
        .ask_operator(OperatorAction::Resume, &run_id, None, None)
        .await
        .unwrap();
    let started = Instant::now();
    let gave_up = operator
        .wait_operator_request(&asked.id, Duration::from_millis(300))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(gave_up.state, RequestState::Queued);
    assert!(
        operator
            .operator_request(&asked.id)
            .await
            .unwrap()
            .is_none()
    );
    // A worker that starts later finds nothing to do: the run is not resumed by surprise.
    let none = worker
        .serve_operator_request("late", Duration::from_millis(200), BatchOptions::default())
        .await
        .unwrap();
    assert!(none.is_none());
    assert_eq!(sent.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_worker_died_is_taken_again_when_its_lease_lapses() {
    let dir = tempfile::tempdir().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let store = sqlite_store(dir.path());
    let worker = app(store.clone(), sent.clone(), Default::default());
    let run_id = approved_run(&worker).await;
    let asked = worker
        .ask_operator(OperatorAction::Resume, &run_id, None, None)
        .await
        .unwrap();
    // A worker that takes the request and dies before it answers: taken, then nothing.
    let key = format!("q/{}", asked.id);
    let raw = store
        .get(Namespace::OperatorRequest, &key)
        .await
        .unwrap()
        .unwrap();
    let mut taken: OperatorRequest = serde_json::from_value(raw.value).unwrap();
    taken.state = RequestState::Taken;
    taken.worker = Some("dead".into());
    taken.lease_until_ms = Some(tooljig::store::now_ms() + 60_000);
    let v = store
        .put(
            Namespace::OperatorRequest,
            &key,
            Expect::Version(raw.version),
            serde_json::to_value(&taken).unwrap(),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    // Its lease still runs: nobody else takes it.
    let none = worker
        .serve_operator_request("w2", Duration::from_millis(200), BatchOptions::default())
        .await
        .unwrap();
    assert!(none.is_none());
    // The lease lapses (moved back rather than waited for).
    taken.lease_until_ms = Some(tooljig::store::now_ms() - 1);
    store
        .put(
            Namespace::OperatorRequest,
            &key,
            Expect::Version(v),
            serde_json::to_value(&taken).unwrap(),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    let answered = worker
        .serve_operator_request("w2", Duration::from_secs(5), BatchOptions::default())
        .await
        .unwrap()
        .expect("taken again");
    assert_eq!(answered.worker.as_deref(), Some("w2"));
    assert_eq!(answered.state, RequestState::Answered);
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    let seen = worker.operator_request(&asked.id).await.unwrap().unwrap();
    assert_eq!(seen, answered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_requests_never_crowd_out_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let worker = app(sqlite_store(dir.path()), sent.clone(), Default::default());
    let run_id = approved_run(&worker).await;
    // More answered requests than a worker scans in one go (64), all kept for their answers.
    for _ in 0..70 {
        let asked = worker
            .ask_operator(OperatorAction::Resume, &run_id, None, None)
            .await
            .unwrap();
        let served = worker
            .serve_operator_request("w", Duration::from_secs(5), BatchOptions::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(served.id, asked.id);
    }
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    let last = worker
        .ask_operator(OperatorAction::Rollback, &run_id, Some("b"), None)
        .await
        .unwrap();
    let served = worker
        .serve_operator_request("w", Duration::from_secs(5), BatchOptions::default())
        .await
        .unwrap()
        .expect("the new request is found behind the answered ones");
    assert_eq!(served.id, last.id);
    assert_eq!(served.action, OperatorAction::Rollback);
}

/// Across processes on PostgreSQL, the asker is woken by the answer through the store's wake
/// bus rather than by reading again (skipped when the server does not answer, a failure
/// under CI=true).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_the_answer_wakes_the_asker() {
    let Some(pg) = postgres::Scratch::new("operator").await else {
        return;
    };
    let sent = Arc::new(AtomicUsize::new(0));
    let store = || -> Arc<dyn StateStore> { Arc::new(PostgresStore::open(&pg.url).unwrap()) };
    let worker = Arc::new(app(store(), sent.clone(), Default::default()));
    let operator = Engine::new().with_state_store(store());
    let run_id = approved_run(&worker).await;
    let stop = CancellationToken::new();
    let serving = {
        let (w, stop) = (worker.clone(), stop.clone());
        tokio::spawn(async move { w.serve_operator_requests("pg-worker", stop).await })
    };
    // Let the worker start waiting, so the request reaches it by wake-up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let asked = operator
        .ask_operator(OperatorAction::Resume, &run_id, None, None)
        .await
        .unwrap();
    let answered = operator
        .wait_operator_request(&asked.id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(answered.state, RequestState::Answered);
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    // Without the bus both sides would read again only every 2 s.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    stop.cancel();
    serving.await.unwrap();
}

#[path = "support/postgres.rs"]
mod postgres;
