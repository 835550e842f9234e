//! The PostgreSQL audit log against the real server: several workers writing at once make
//! one sealed chain that verifies; queries; and every way of editing the tables behind
//! tooljig's back is found by `verify` at the first broken link.

#[path = "support/postgres.rs"]
mod postgres;

use postgres::Scratch;
use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::audit::{AuditOptions, AuditQuery, AuditSink, PostgresAudit};
use tooljig::*;

fn key() -> SealKey {
    SealKey::new([7u8; 32]).unwrap()
}

fn sink(scratch: &Scratch) -> Arc<dyn AuditSink> {
    Arc::new(PostgresAudit::open(&scratch.url, AuditOptions::default().key(key())).unwrap())
}

fn worker(audit: Arc<dyn AuditSink>) -> Engine {
    let engine = Engine::new().with_audit(audit);
    engine
        .register(Tool::from_fn(
            "echo",
            "Echoes.",
            json!({"type": "object"}),
            |a: Value, _| async move { Ok(a) },
        ))
        .unwrap();
    engine
}

/// Four workers, 25 batches of 8 calls each, at once; then the log's seq numbers, count and
/// chain.
async fn written(scratch: &Scratch) -> Arc<dyn AuditSink> {
    let sinks: Vec<_> = (0..4).map(|_| sink(scratch)).collect();
    let mut tasks = Vec::new();
    for (w, s) in sinks.iter().enumerate() {
        let engine = Arc::new(worker(s.clone()));
        for b in 0..25 {
            let engine = engine.clone();
            tasks.push(tokio::spawn(async move {
                let calls = (0..8)
                    .map(|i| Call::new(format!("w{w}b{b}c{i}"), "echo", json!({"i": i})))
                    .collect();
                engine
                    .run(
                        calls,
                        Caller::principal(format!("p{w}")),
                        BatchOptions::default(),
                    )
                    .await
            }));
        }
    }
    for t in tasks {
        assert!(t.await.unwrap().results.iter().all(|r| r.envelope.is_ok()));
    }
    sinks[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_writers_make_one_sealed_chain() {
    let Some(scratch) = Scratch::new("audit_chain").await else {
        return;
    };
    let reader = written(&scratch).await;
    let report = reader.verify().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 800);
    let all = reader.query(AuditQuery::default()).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=800).collect::<Vec<_>>(), "one chain, no gaps");
    let p2 = reader
        .query(AuditQuery {
            principal: Some("p2".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(p2.len(), 200);
    let last = reader
        .query(AuditQuery {
            limit: Some(3),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        last.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [798, 799, 800]
    );

    // A writer with another key (or none) refuses to continue the log.
    let stranger = worker(Arc::new(
        PostgresAudit::open(&scratch.url, AuditOptions::default()).unwrap(),
    ));
    stranger
        .run(
            vec![Call::new("x", "echo", json!({}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    let refused = stranger.audit().unwrap().flush().await.unwrap_err();
    assert!(refused.to_string().contains("sealed"), "{refused}");
    assert_eq!(reader.verify().await.unwrap().records, 800);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_behind_its_back_are_found() {
    let Some(scratch) = Scratch::new("audit_tamper").await else {
        return;
    };
    let reader = written(&scratch).await;
    let log = format!("\"{}\".tooljig_audit", scratch.schema);
    let broken_at = |report: audit::ChainReport| report.broken.map(|b| b.seq);

    // The last rows deleted: the head still says 800.
    scratch
        .execute(&format!(
            "CREATE TABLE \"{}\".saved AS SELECT * FROM {log}",
            scratch.schema
        ))
        .await
        .unwrap();
    scratch
        .execute(&format!("DELETE FROM {log} WHERE seq > 797"))
        .await
        .unwrap();
    assert_eq!(broken_at(reader.verify().await.unwrap()), Some(798));
    let restore = || async {
        scratch
            .execute(&format!("DELETE FROM {log}"))
            .await
            .unwrap();
        scratch
            .execute(&format!(
                "INSERT INTO {log} SELECT * FROM \"{}\".saved",
                scratch.schema
            ))
            .await
            .unwrap();
        assert!(reader.verify().await.unwrap().is_intact());
    };
    restore().await;

    // A record's text edited (its principal changed), without the key to reseal it.
    scratch
        .execute(&format!(
            "UPDATE {log} SET record = replace(record, '\"p1\"', '\"p9\"'), principal = 'p9'
             WHERE seq = (SELECT min(seq) FROM {log} WHERE principal = 'p1')"
        ))
        .await
        .unwrap();
    let first_p1 = {
        let rows = reader
            .query(AuditQuery {
                principal: Some("p9".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        rows[0].seq
    };
    assert_eq!(broken_at(reader.verify().await.unwrap()), Some(first_p1));
    restore().await;

    // An indexed column edited alone, so a query would lie.
    scratch
        .execute(&format!("UPDATE {log} SET tool = 'other' WHERE seq = 5"))
        .await
        .unwrap();
    assert_eq!(broken_at(reader.verify().await.unwrap()), Some(5));
    restore().await;

    // A row removed from the middle, and two rows swapped.
    scratch
        .execute(&format!("DELETE FROM {log} WHERE seq = 400"))
        .await
        .unwrap();
    assert_eq!(broken_at(reader.verify().await.unwrap()), Some(401));
    restore().await;
    for sql in [
        format!(
            "UPDATE {log} SET seq = CASE seq WHEN 10 THEN -11 ELSE -10 END WHERE seq IN (10, 11)"
        ),
        format!("UPDATE {log} SET seq = -seq WHERE seq < 0"),
    ] {
        scratch.execute(&sql).await.unwrap();
    }
    // The walk breaks where the swapped rows are: the row read as 10 says it is 11.
    let swapped = broken_at(reader.verify().await.unwrap());
    assert!(matches!(swapped, Some(10 | 11)), "{swapped:?}");
}
