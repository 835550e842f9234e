//! Long-running tools: a handler accepts the work as a background job, the call is
//! `pending_job` until the app reports how the job ended (from another engine sharing the
//! store: SQLite, PostgreSQL, Redis), then the run resumes; status queries, refusals, the
//! overall expiry, a reused reference, and an idempotent duplicate that starts no second job.

#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/redis.rs"]
mod redis_support;

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::*;

/// An engine on `store` with `render` (accepts a job named by its `id` argument; counts its
/// runs in `runs`) and `publish` (returns what it is given).
fn engine(store: Arc<dyn StateStore>, runs: Arc<AtomicUsize>, policy: Policy) -> Engine {
    let engine = Engine::new().with_state_store(store);
    engine
        .register(
            Tool::from_fn(
                "render",
                "Renders a video in the background.",
                json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
                move |args, _| {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        let id = args["id"].as_str().unwrap_or_default();
                        Err(HandlerError::accepted(format!("render-{id}")))
                    }
                },
            )
            .output_schema(json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}))
            .policy(policy),
        )
        .unwrap();
    engine
        .register(Tool::from_fn(
            "publish",
            "Publishes.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    engine
}

fn batch(id: &str) -> Vec<Call> {
    vec![
        Call::new("r", "render", json!({"id": id})),
        Call::new(
            "p",
            "publish",
            json!({"url": {"$from": "r", "pointer": "/url"}}),
        ),
    ]
}

fn failure(e: &Envelope) -> &ToolError {
    match e {
        Envelope::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn reason(e: &ToolError) -> &str {
    e.details["reason"].as_str().unwrap_or("")
}

/// The whole life of a job, accepted by `a` and reported by `b` (another worker on the same
/// store), then resumed by `a`.
async fn accepted_reported_resumed(a: &Engine, b: &Engine, runs: &AtomicUsize, id: &str) {
    let out = a
        .run(batch(id), Caller::principal("u1"), BatchOptions::default())
        .await;
    let r = out.get("r").unwrap();
    assert_eq!(r.status, CallStatus::PendingJob);
    let e = failure(&r.envelope);
    assert_eq!(e.code, ErrorCode::PendingJob);
    let job = format!("render-{id}");
    assert_eq!(e.details["job"], json!(job));
    assert_eq!(out.get("p").unwrap().status, CallStatus::Waiting);
    let run_id = out.run_id.clone().unwrap();
    // A job is not a client-side call: nobody is asked to run it.
    assert!(a.pending_external(&run_id).await.unwrap().is_empty());

    let status = b.job_status(&job).await.unwrap().unwrap();
    assert_eq!(status.state, JobState::Pending);
    assert_eq!(
        (
            status.run_id.as_str(),
            status.call_id.as_str(),
            status.tool.as_str()
        ),
        (run_id.as_str(), "r", "render")
    );
    assert_eq!(status.arguments, json!({"id": id}));

    // Still pending: a resume changes nothing and runs nothing again.
    let again = a.resume(&run_id).await.unwrap();
    assert_eq!(again.get("r").unwrap().status, CallStatus::PendingJob);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let bad = b
        .complete_job(&job, Ok(json!({"url": 3})))
        .await
        .unwrap_err();
    assert_eq!(
        (bad.code, reason(&bad)),
        (ErrorCode::InvalidOutput, "invalid_result")
    );
    let unknown = b
        .complete_job("render-nope", Ok(json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.code, reason(&unknown)),
        (ErrorCode::NotFound, "unknown_job")
    );
    assert!(b.job_status("render-nope").await.unwrap().is_none());

    let done = b
        .complete_job(&job, Ok(json!({"url": "https://v/1.mp4"})))
        .await
        .unwrap();
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(done.run_id, run_id);
    assert!(done.completed_at_ms.is_some());
    let twice = b
        .complete_job(&job, Ok(json!({"url": "x"})))
        .await
        .unwrap_err();
    assert_eq!(
        (twice.code, reason(&twice)),
        (ErrorCode::Conflict, "duplicate")
    );

    let resumed = a.resume(&run_id).await.unwrap();
    assert_eq!(
        resumed.get("r").unwrap().envelope,
        Envelope::Ok(json!({"url": "https://v/1.mp4"}))
    );
    assert_eq!(
        resumed.get("p").unwrap().envelope,
        Envelope::Ok(json!({"url": "https://v/1.mp4"}))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran once");
    let status = a.job_status(&job).await.unwrap().unwrap();
    assert_eq!(status.state, JobState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_reported_by_another_worker_on_sqlite_resumes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let runs = Arc::new(AtomicUsize::new(0));
    let a = engine(
        Arc::new(SqliteStore::open(&path).unwrap()),
        runs.clone(),
        Policy::default(),
    );
    let b = engine(
        Arc::new(SqliteStore::open(&path).unwrap()),
        Arc::new(AtomicUsize::new(0)),
        Policy::default(),
    );
    accepted_reported_resumed(&a, &b, &runs, "1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_reported_by_another_worker_on_postgres_and_redis_resumes_the_run() {
    let scratch = postgres::Scratch::new("jobs").await;
    let prefix = redis_support::Prefix::new("jobs");
    let urls: Vec<String> = scratch
        .iter()
        .map(|s| s.url.clone())
        .chain(prefix.iter().map(|p| p.url.clone()))
        .collect();
    for (i, url) in urls.iter().enumerate() {
        let open = || StoreSpec::parse(&json!(url)).unwrap().open().unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let a = engine(open(), runs.clone(), Policy::default());
        let b = engine(open(), Arc::new(AtomicUsize::new(0)), Policy::default());
        accepted_reported_resumed(&a, &b, &runs, &format!("shared-{i}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_reaches_the_model_and_dependents_do_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let audit = Arc::new(audit::MemoryAudit::new());
    let engine = engine(
        Arc::new(MemoryStore::default()),
        runs.clone(),
        Policy::default(),
    )
    .with_audit(audit.clone());
    let out = engine
        .run(batch("f"), Caller::default(), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().unwrap();
    let failed = engine
        .complete_job(
            "render-f",
            Err(ToolError::new(ErrorCode::ExternalApiError, "the encoder crashed").retryable(true)),
        )
        .await
        .unwrap();
    assert_eq!(failed.state, JobState::Failed);
    let resumed = engine.resume(&run_id).await.unwrap();
    let r = failure(&resumed.get("r").unwrap().envelope);
    assert_eq!(
        (r.code, r.message.as_str()),
        (ErrorCode::ExternalApiError, "the encoder crashed")
    );
    let p = resumed.get("p").unwrap();
    assert_eq!(p.status, CallStatus::Done);
    assert!(!p.envelope.is_ok(), "{:?}", p.envelope);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The acceptance and the reported failure are both in the audit log, in that order.
    let renders: Vec<_> = audit
        .query(audit::AuditQuery::all())
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.tool == "render")
        .map(|r| (r.outcome, r.code))
        .collect();
    assert_eq!(
        renders,
        vec![
            (audit::Outcome::PendingJob, Some(ErrorCode::PendingJob)),
            (audit::Outcome::Error, Some(ErrorCode::ExternalApiError)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_not_reported_before_its_expiry_times_out() {
    let engine = engine(
        Arc::new(MemoryStore::default()),
        Arc::new(AtomicUsize::new(0)),
        Policy {
            job_expiry_ms: Some(100),
            ..Policy::default()
        },
    );
    let out = engine
        .run(batch("late"), Caller::default(), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().unwrap();
    let status = engine.job_status("render-late").await.unwrap().unwrap();
    assert_eq!(status.expires_at_ms - status.created_at_ms, 100);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(
        engine
            .job_status("render-late")
            .await
            .unwrap()
            .unwrap()
            .state,
        JobState::Expired
    );
    let late = engine
        .complete_job("render-late", Ok(json!({"url": "u"})))
        .await
        .unwrap_err();
    assert_eq!((late.code, reason(&late)), (ErrorCode::Conflict, "late"));
    let resumed = engine.resume(&run_id).await.unwrap();
    let r = failure(&resumed.get("r").unwrap().envelope);
    assert_eq!(r.code, ErrorCode::Timeout);
    assert!(r.message.contains("background job"), "{}", r.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_in_use_refuses_the_second_call_and_a_duplicate_starts_no_second_job() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = engine(
        Arc::new(MemoryStore::default()),
        runs.clone(),
        Policy::default().idempotent(IdempotencyMode::Arguments),
    );
    let first = engine
        .run(
            vec![Call::new("r", "render", json!({"id": "same"}))],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(first.get("r").unwrap().status, CallStatus::PendingJob);
    // The same call again (another run): the idempotency record tells of the job; the
    // handler does not run again, so no second job starts.
    let dup = engine
        .run(
            vec![Call::new("r", "render", json!({"id": "same"}))],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
        .await;
    let d = dup.get("r").unwrap();
    assert!(d.replayed);
    assert_eq!(failure(&d.envelope).details["job"], json!("render-same"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Another caller's call maps to the same reference: refused, nothing shared.
    let other = engine
        .run(
            vec![Call::new("r", "render", json!({"id": "same"}))],
            Caller::principal("u2"),
            BatchOptions::default(),
        )
        .await;
    let o = other.get("r").unwrap();
    assert_eq!(o.status, CallStatus::Done);
    assert_eq!(o.envelope.code(), Some(ErrorCode::Conflict));
    assert!(
        o.detail
            .as_deref()
            .unwrap_or("")
            .contains("already names another call")
    );
    let status = engine.job_status("render-same").await.unwrap().unwrap();
    assert_eq!(status.run_id, first.run_id.clone().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_handlers_may_answer_accepted() {
    let engine = Engine::new().with_resolver(
        "who",
        resolver_fn(|_| async move { Err(HandlerError::accepted("j")) }),
    );
    let policy = Policy::default().hidden(
        "id",
        HiddenParam::Resolver {
            resolver: "who".into(),
            input: "name".into(),
        },
    );
    engine
        .register(
            Tool::from_fn(
                "t",
                "",
                json!({"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "string"}}}),
                |a, _| async move { Ok(a) },
            )
            .policy(policy),
        )
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("c", "t", json!({"name": "x"}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let c = out.get("c").unwrap();
    assert_eq!(c.envelope.code(), Some(ErrorCode::InternalError));
    assert!(
        c.detail
            .as_deref()
            .unwrap_or("")
            .contains("which only a handler may")
    );
}
