//! Rollback: compensations in reverse completion order, once each; not-reversible calls
//! reported; atomic batches compensate automatically.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::*;

type Log = Arc<Mutex<Vec<String>>>;

fn engine() -> (Engine, Log) {
    let log: Log = Default::default();
    let engine = Engine::new();
    let obj = json!({"type": "object"});
    let l = log.clone();
    engine
        .register(
            Tool::from_fn("book", "Books a room.", obj.clone(), move |a: Value, _| {
                let l = l.clone();
                async move {
                    l.lock().unwrap().push(format!("book {}", a["room"]));
                    Ok(json!({"booking": format!("b-{}", a["room"])}))
                }
            })
            .policy(Policy::default().compensation("cancel_booking")),
        )
        .unwrap();
    let l = log.clone();
    engine
        .register(Tool::from_fn(
            "cancel_booking",
            "Cancels a booking.",
            json!({"type": "object", "required": ["arguments", "result"]}),
            move |a: Value, _| {
                let l = l.clone();
                async move {
                    l.lock().unwrap().push(format!(
                        "cancel {} {}",
                        a["arguments"]["room"], a["result"]["booking"]
                    ));
                    Ok(json!({"cancelled": true}))
                }
            },
        ))
        .unwrap();
    let l = log.clone();
    engine
        .register(Tool::from_fn(
            "charge",
            "Charges a card.",
            obj.clone(),
            move |a: Value, _| {
                let l = l.clone();
                async move {
                    l.lock().unwrap().push(format!("charge {}", a["amount"]));
                    Ok(json!({"charge": "ch_1"}))
                }
            },
        ))
        .unwrap();
    let l = log.clone();
    engine.compensate_with(
        "charge",
        handler_fn(move |a: Value, _| {
            let l = l.clone();
            async move {
                l.lock()
                    .unwrap()
                    .push(format!("refund {}", a["result"]["charge"]));
                Ok(json!({"refunded": true}))
            }
        }),
    );
    let l = log.clone();
    engine
        .register(Tool::from_fn(
            "email",
            "Sends an email.",
            obj.clone(),
            move |_, _| {
                let l = l.clone();
                async move {
                    l.lock().unwrap().push("email".into());
                    Ok(json!({"sent": true}))
                }
            },
        ))
        .unwrap();
    engine
        .register(Tool::from_fn("fail", "Fails.", obj, |_, _| async move {
            Err(HandlerError::tool(
                ErrorCode::Conflict,
                "the slot was taken meanwhile",
            ))
        }))
        .unwrap();
    (engine, log)
}

fn outcomes(r: &RollbackReport) -> Vec<(String, RollbackOutcome)> {
    r.entries
        .iter()
        .map(|e| (e.call_id.clone(), e.outcome))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_runs_compensations_latest_first_once_and_names_the_irreversible() {
    let (engine, log) = engine();
    let out = engine
        .run(
            vec![
                Call::new("b", "book", json!({"room": 7})),
                Call::new("c", "charge", json!({"amount": 90})).depends_on("b"),
                Call::new("e", "email", json!({})).depends_on("c"),
            ],
            Caller::principal("u1"),
            BatchOptions::default(),
        )
        .await;
    let run_id = out.run_id.expect("a run with compensable calls is kept");
    let report = engine.rollback(&run_id, None).await.unwrap();
    use RollbackOutcome::*;
    assert_eq!(
        outcomes(&report),
        [
            ("e".into(), NotReversible),
            ("c".into(), Compensated),
            ("b".into(), Compensated)
        ]
    );
    assert!(!report.complete(), "an email cannot be unsent");
    assert!(report.entries[0].message.contains("cannot be undone"));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "book 7",
            "charge 90",
            "email",
            "refund \"ch_1\"",
            "cancel 7 \"b-7\""
        ]
    );
    // Again: nothing runs twice.
    let again = engine.rollback(&run_id, None).await.unwrap();
    assert_eq!(
        outcomes(&again),
        [
            ("e".into(), NotReversible),
            ("c".into(), AlreadyRolledBack),
            ("b".into(), AlreadyRolledBack)
        ]
    );
    assert_eq!(log.lock().unwrap().len(), 5);
    let record = engine.run_record(&run_id).await.unwrap().unwrap();
    assert_eq!(record.rollback.len(), 6, "both rollbacks are recorded");
    assert!(record.steps.iter().any(|s| s.what == "compensated"));
    // Unknown runs and calls are refused.
    assert_eq!(
        engine.rollback("run_nope", None).await.unwrap_err().code,
        ErrorCode::NotFound
    );
    assert_eq!(
        engine.rollback(&run_id, Some("zz")).await.unwrap_err().code,
        ErrorCode::NotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_can_be_rolled_back_alone() {
    let (engine, log) = engine();
    let out = engine
        .run(
            vec![
                Call::new("b", "book", json!({"room": 1})),
                Call::new("c", "charge", json!({"amount": 5})),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let report = engine
        .rollback(out.run_id.as_deref().unwrap(), Some("b"))
        .await
        .unwrap();
    assert_eq!(
        outcomes(&report),
        [("b".into(), RollbackOutcome::Compensated)]
    );
    assert!(!log.lock().unwrap().iter().any(|l| l.starts_with("refund")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_call_has_nothing_to_undo_and_keeps_the_rollback_complete() {
    let (engine, _log) = engine();
    engine
        .register(
            Tool::from_fn(
                "lookup",
                "Looks a room up.",
                json!({"type": "object"}),
                |_, _| async { Ok(json!({"free": true})) },
            )
            .policy(Policy::default().effect(Effect::Read)),
        )
        .unwrap();
    let out = engine
        .run(
            vec![
                Call::new("l", "lookup", json!({})),
                Call::new("b", "book", json!({"room": 2})).depends_on("l"),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let report = engine
        .rollback(out.run_id.as_deref().unwrap(), None)
        .await
        .unwrap();
    use RollbackOutcome::*;
    assert_eq!(
        outcomes(&report),
        [("b".into(), Compensated), ("l".into(), NothingToUndo)]
    );
    assert!(report.entries[1].message.contains("only reads"));
    assert!(!report.entries[1].message.contains("cannot be undone"));
    assert!(
        report.complete(),
        "a read changed nothing: the rollback is whole"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_atomic_batch_that_fails_is_compensated_automatically() {
    let (engine, log) = engine();
    let out = engine
        .run(
            vec![
                Call::new("b", "book", json!({"room": 3})),
                Call::new("c", "charge", json!({"amount": 40})).depends_on("b"),
                Call::new("f", "fail", json!({})).depends_on("c"),
                Call::new("late", "email", json!({})).depends_on("f"),
            ],
            Caller::default(),
            BatchOptions {
                atomic: true,
                ..Default::default()
            },
        )
        .await;
    assert_eq!(
        out.get("f").unwrap().envelope.code(),
        Some(ErrorCode::Conflict)
    );
    assert_ne!(out.get("late").unwrap().envelope.code(), None);
    let report = out
        .rollback
        .as_ref()
        .expect("the failure triggered a rollback");
    assert_eq!(
        outcomes(report),
        [
            ("c".into(), RollbackOutcome::Compensated),
            ("b".into(), RollbackOutcome::Compensated)
        ]
    );
    assert!(!log.lock().unwrap().contains(&"email".to_string()));
    assert!(
        log.lock()
            .unwrap()
            .contains(&"cancel 3 \"b-3\"".to_string())
    );
    // A successful atomic batch is left alone.
    let ok = engine
        .run(
            vec![Call::new("b", "book", json!({"room": 4}))],
            Caller::default(),
            BatchOptions {
                atomic: true,
                ..Default::default()
            },
        )
        .await;
    assert!(ok.rollback.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_an_atomic_batch_nothing_starts_after_a_failure() {
    let (engine, log) = engine();
    let out = engine
        .run(
            vec![
                Call::new("f", "fail", json!({})),
                Call::new("e", "email", json!({})),
                Call::new("b", "book", json!({"room": 9})),
            ],
            Caller::default(),
            BatchOptions {
                atomic: true,
                concurrency: Some(1),
                ..Default::default()
            },
        )
        .await;
    assert!(log.lock().unwrap().is_empty(), "{:?}", log.lock().unwrap());
    assert_eq!(
        out.get("e").unwrap().envelope.code(),
        Some(ErrorCode::Cancelled)
    );
    assert_eq!(
        out.get("b").unwrap().envelope.code(),
        Some(ErrorCode::Cancelled)
    );
}

/// What a rollback did is in the audit log, after the calls' own records: `rolled_back` for
/// each call a compensation undid, `not_reversible` for the email; for an atomic batch and
/// for a rollback asked later alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_says_what_each_rollback_undid_and_what_stays() {
    use tooljig::audit::{AuditQuery, MemoryAudit, Outcome};
    let audit = Arc::new(MemoryAudit::new());
    let (engine, _log) = engine();
    let engine = engine.with_audit(audit.clone());
    let out = engine
        .run(
            vec![
                Call::new("b", "book", json!({"room": 3})),
                Call::new("e", "email", json!({})).depends_on("b"),
                Call::new("f", "fail", json!({})).depends_on("e"),
            ],
            Caller::principal("ana"),
            BatchOptions {
                atomic: true,
                ..Default::default()
            },
        )
        .await;
    assert!(out.rollback.is_some());
    let records = audit.query(AuditQuery::all()).await.unwrap();
    let seen: Vec<(String, &str)> = records
        .iter()
        .map(|r| (format!("{}/{}", r.call_id, r.tool), r.outcome.as_str()))
        .collect();
    let tail = &seen[seen.len() - 2..];
    assert_eq!(
        tail,
        [
            ("e/email".to_string(), "not_reversible"),
            ("b/book".to_string(), "rolled_back")
        ],
        "{seen:?}"
    );
    let undone = records
        .iter()
        .find(|r| r.outcome == Outcome::RolledBack)
        .unwrap();
    assert_eq!(undone.principal.as_deref(), Some("ana"));
    assert!(undone.detail.as_deref().unwrap().contains("cancel_booking"));

    // A rollback asked for later, of a run that finished well.
    let fine = engine
        .run(
            vec![Call::new("b", "book", json!({"room": 5}))],
            Caller::principal("ana"),
            BatchOptions::default(),
        )
        .await;
    let run_id = fine.run_id.clone().expect("a compensable run is kept");
    engine.rollback(&run_id, None).await.unwrap();
    let last = audit.query(AuditQuery::all()).await.unwrap();
    assert_eq!(last.last().unwrap().outcome, Outcome::RolledBack);
    assert_eq!(audit.verify().await.unwrap().broken, None);
}
