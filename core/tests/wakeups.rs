//! Wake-ups and cancellation between workers that share a store: each worker is an engine of
//! its own with its own connections (as a separate process would be), on PostgreSQL, on
//! Redis, and on one SQLite file (no bus: the lease heartbeat carries cancellation).
//!
//! - a duplicate waiting in one worker is woken the moment the call in another finishes,
//!   not at its next read of the store (which, with a bus, is up to 2 s away);
//! - `cancel_run` in one worker stops the run another is running, at once with a bus and
//!   within a heartbeat without one;
//! - a suspended run asked to stop is cancelled by its next resume;
//! - PostgreSQL's listening connection cut by the server: the listener connects again and
//!   wake-ups arrive as before.

#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/redis.rs"]
mod redis_support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tooljig::*;

/// A place of its own on each server that is up, and one SQLite file: its URL, and what
/// cleans it up when dropped.
async fn backends(tag: &str) -> Vec<(String, Box<dyn std::any::Any>)> {
    let mut out: Vec<(String, Box<dyn std::any::Any>)> = Vec::new();
    if let Some(s) = postgres::Scratch::new(tag).await {
        out.push((s.url.clone(), Box::new(s)));
    }
    if let Some(p) = redis_support::Prefix::new(tag) {
        out.push((p.url.clone(), Box::new(p)));
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    out.push((url, Box::new(dir)));
    out
}

/// A worker on the store at `url`, with `slow_pay` (idempotent, 1.5 s), `hold` (reports its
/// run id, then waits to be cancelled), `after` (runs after `hold`) and `transfer` (needs
/// approval). On SQLite, which has no bus, its lease is 900 ms (a heartbeat every 300 ms);
/// elsewhere the default 15 s (a heartbeat every 5 s), so only a wake-up stops a run sooner.
fn worker(url: &str, run_ids: Option<tokio::sync::mpsc::UnboundedSender<String>>) -> Engine {
    let store = StoreSpec::parse(&json!(url)).unwrap().open().unwrap();
    let mut engine = Engine::new().with_state_store(store);
    if url.starts_with("sqlite") {
        engine = engine.with_run_lease_ms(900);
    }
    let schema = json!({"type": "object"});
    engine
        .register(
            Tool::from_fn(
                "slow_pay",
                "Pays, slowly.",
                schema.clone(),
                |a: Value, _| async move {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    Ok(json!({"paid": a}))
                },
            )
            .policy(Policy::default().idempotent(IdempotencyMode::Arguments)),
        )
        .unwrap();
    engine
        .register(Tool::from_fn(
            "hold",
            "Waits until cancelled.",
            schema.clone(),
            move |_: Value, ctx: ToolContext| {
                let run_ids = run_ids.clone();
                async move {
                    if let Some(tx) = run_ids {
                        let _ = tx.send(ctx.run_id.to_string());
                    }
                    tokio::select! {
                        _ = ctx.cancel.cancelled() => Ok(json!("stopped")),
                        _ = tokio::time::sleep(Duration::from_secs(30)) => Ok(json!("never stopped")),
                    }
                }
            },
        ))
        .unwrap();
    engine
        .register(Tool::from_fn(
            "after",
            "Runs after hold.",
            schema.clone(),
            |_: Value, _| async { Ok(json!("ran")) },
        ))
        .unwrap();
    engine
        .register(
            Tool::from_fn("transfer", "Moves money.", schema, |_: Value, _| async {
                Ok(json!("moved"))
            })
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    engine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_another_worker_is_woken_when_the_first_finishes() {
    for (url, _cleanup) in backends("wake").await {
        if url.starts_with("sqlite") {
            continue; // no bus: a duplicate there reads the file every 250 ms
        }
        let (a, b) = (Arc::new(worker(&url, None)), Arc::new(worker(&url, None)));
        let call = || vec![Call::new("c", "slow_pay", json!({"amount": 5}))];
        let first = tokio::spawn({
            let a = a.clone();
            async move {
                let out = a
                    .run(call(), Caller::principal("ana"), BatchOptions::default())
                    .await;
                (out, Instant::now())
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let out = b
            .run(call(), Caller::principal("ana"), BatchOptions::default())
            .await;
        let second_done = Instant::now();
        let (first_out, first_done) = first.await.unwrap();
        assert!(
            first_out.results[0].envelope.is_ok(),
            "{url}: {first_out:?}"
        );
        assert!(
            out.results[0].replayed,
            "{url}: the duplicate shares the first's result"
        );
        assert_eq!(out.results[0].envelope, first_out.results[0].envelope);
        // Without a wake-up, the duplicate's reads back off to every 2 s and it would end
        // about a second after the first.
        let late = second_done.saturating_duration_since(first_done);
        assert!(
            late < Duration::from_millis(300),
            "{url}: the duplicate ended {late:?} after the first"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_cancelled_from_another_worker() {
    for (url, _cleanup) in backends("cancel").await {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let a = Arc::new(worker(&url, Some(tx)));
        let b = worker(&url, None);
        let running = tokio::spawn({
            let a = a.clone();
            async move {
                let calls = vec![
                    Call::new("h", "hold", json!({})),
                    Call::new("n", "after", json!({})).depends_on("h"),
                ];
                let out = a
                    .run(calls, Caller::principal("ana"), BatchOptions::default())
                    .await;
                (out, Instant::now())
            }
        });
        let run_id = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("the run starts")
            .unwrap();
        let asked = Instant::now();
        assert!(b.cancel_run(&run_id, Some("the user left")).await.unwrap());
        let (out, ended) = tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the run stops")
            .unwrap();
        let took = ended.saturating_duration_since(asked);
        let patience = if url.starts_with("sqlite") {
            Duration::from_millis(1500) // a heartbeat is every 300 ms
        } else {
            Duration::from_millis(500)
        };
        assert!(
            took < patience,
            "{url}: the run stopped {took:?} after it was asked"
        );
        let codes: Vec<_> = out.results.iter().map(|r| r.envelope.code()).collect();
        assert_eq!(
            codes,
            [Some(ErrorCode::Cancelled), Some(ErrorCode::Cancelled)],
            "{url}: {out:?}"
        );
        // Finished runs have nothing to stop; unknown ones are refused.
        let finished = b.cancel_run(&run_id, None).await;
        assert!(matches!(finished, Ok(false)), "{url}: {finished:?}");
        let unknown = b.cancel_run("no-such-run", None).await.unwrap_err();
        assert_eq!(unknown.code, ErrorCode::NotFound);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_asked_to_stop_is_cancelled_by_its_resume() {
    for (url, _cleanup) in backends("cancel_suspended").await {
        let (a, b) = (worker(&url, None), worker(&url, None));
        let out = a
            .run(
                vec![Call::new("t", "transfer", json!({"to": "bo"}))],
                Caller::principal("ana"),
                BatchOptions::default(),
            )
            .await;
        assert_eq!(out.results[0].status, CallStatus::PendingApproval, "{url}");
        let run_id = out.run_id.clone().unwrap();
        assert!(b.cancel_run(&run_id, None).await.unwrap());
        let resumed = a.resume(&run_id).await.unwrap();
        let r = &resumed.results[0];
        assert_eq!(r.status, CallStatus::Done, "{url}: {r:?}");
        assert_eq!(r.envelope.code(), Some(ErrorCode::Cancelled));
        let record = a.run_record(&run_id).await.unwrap().unwrap();
        assert_eq!(record.state, RunState::Finished, "{url}");
    }
}

/// An agent's worker waits for the decisions on its run; the inbox, in another worker, decides
/// two requests: the waiter is woken by the second decision (through the bus; on SQLite at its
/// next read), not at the end of its timeout, and the resumed run carries both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_for_decisions_is_woken_by_the_last_one() {
    for (url, _cleanup) in backends("wait_decisions").await {
        let (agent, inbox) = (worker(&url, None), worker(&url, None));
        let out = agent
            .run(
                vec![
                    Call::new("a", "transfer", json!({"to": "bo"})),
                    Call::new("b", "transfer", json!({"to": "cy"})),
                ],
                Caller::principal("ana"),
                BatchOptions::default(),
            )
            .await;
        let run_id = out.run_id.clone().unwrap();
        assert!(
            !agent
                .wait_for_decisions(&run_id, Duration::from_millis(50))
                .await
                .unwrap(),
            "{url}: nothing decided yet"
        );
        let waiting = {
            let run_id = run_id.clone();
            let agent = Arc::new(agent);
            let waiter = agent.clone();
            (
                agent,
                tokio::spawn(async move {
                    let t0 = Instant::now();
                    let done = waiter
                        .wait_for_decisions(&run_id, Duration::from_secs(20))
                        .await
                        .unwrap();
                    (done, t0.elapsed())
                }),
            )
        };
        let asker = Caller::principal("ana");
        let mut decided_at = Instant::now();
        for r in &out.results {
            let approval = r.approval.as_ref().unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            decided_at = Instant::now();
            inbox
                .approve(
                    approval.id.as_deref().unwrap(),
                    &approval.arguments_hash,
                    &asker,
                    None,
                )
                .await
                .unwrap();
        }
        let (agent, handle) = waiting;
        let (done, waited) = handle.await.unwrap();
        let late = decided_at.elapsed();
        assert!(done, "{url}");
        assert!(
            late < Duration::from_millis(1500),
            "{url}: woken {late:?} after the last decision (waited {waited:?})"
        );
        let resumed = agent.resume(&run_id).await.unwrap();
        assert!(
            resumed
                .results
                .iter()
                .all(|r| r.envelope == Envelope::Ok(json!("moved"))),
            "{url}"
        );
    }
}

/// The listening connection cut by the server (a restart, `pg_terminate_backend`): the
/// listener connects again on its own, and wake-ups reach the waiters as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_ups_resume_after_the_listening_connection_is_cut() {
    let Some(scratch) = postgres::Scratch::new("wake_cut").await else {
        return;
    };
    let url = scratch.url.clone();
    let (a, b) = (Arc::new(worker(&url, None)), Arc::new(worker(&url, None)));
    let lateness = |n: u64| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let call = move || vec![Call::new("c", "slow_pay", json!({"amount": n}))];
            let first = tokio::spawn(async move {
                a.run(call(), Caller::principal("ana"), BatchOptions::default())
                    .await;
                Instant::now()
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            let out = b
                .run(call(), Caller::principal("ana"), BatchOptions::default())
                .await;
            let done = Instant::now();
            assert!(out.results[0].replayed);
            done.saturating_duration_since(first.await.unwrap())
        }
    };
    assert!(lateness(1).await < Duration::from_millis(300));
    let (client, conn) = tokio_postgres::connect(&postgres::base_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    // Only this test's listeners: the channel is named after the schema (its first 50).
    let schema: String = scratch.schema.chars().take(50).collect();
    let listen = format!("LISTEN \"tooljig_wake_{schema}\"");
    let cut = client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
            &[&listen],
        )
        .await
        .unwrap();
    assert!(!cut.is_empty(), "a listening connection was there to cut");
    // The listener notices at once and connects again after half a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late = lateness(2).await;
    assert!(
        late < Duration::from_millis(300),
        "after the cut, the duplicate ended {late:?} after the first"
    );
}

/// A worker that starts listening late has missed what was published before: once its bus
/// has subscribed, every waiter reads the store again. Without that, a run cancelled the
/// moment it started, before its process had subscribed, stopped only at its lease's next
/// beat (5 s), which a loaded machine showed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_read_the_store_again_once_the_bus_listens() {
    for (url, _cleanup) in backends("wake_late").await {
        let store = StoreSpec::parse(&json!(url)).unwrap().open().unwrap();
        let Some(bus) = store.wake_bus() else {
            assert!(url.starts_with("sqlite"), "{url} has a bus");
            continue;
        };
        let wakeups = tooljig::wakeup::Wakeups::new(Some(bus));
        // Nobody publishes: only the bus, once it listens, wakes this waiter.
        let (_asked, woken) = wakeups.armed("cancel/late");
        tokio::time::timeout(Duration::from_secs(5), woken)
            .await
            .unwrap_or_else(|_| panic!("{url}: not woken once the bus listened"));
    }
}
