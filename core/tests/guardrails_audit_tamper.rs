//! Tamper evidence that deserves the name: with a seal key the app holds outside the
//! database and an anchor of the head written out of band, every edit an attacker with
//! write access to the log can make is caught by `verify` (and by the next open): records
//! cut off the end, forged, appended, or altered with every later hash recomputed.

mod guardrails_common;

use guardrails_common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tooljig::audit::chain::{GENESIS, hash_body, splice};
use tooljig::*;

const KEY: &str = "an app secret of at least thirty-two bytes";

fn key() -> SealKey {
    SealKey::new(KEY).unwrap()
}

struct Log {
    _dir: tempfile::TempDir,
    db: PathBuf,
    jsonl: PathBuf,
    anchor: PathBuf,
}

fn options(anchor: &Path) -> AuditOptions {
    AuditOptions::default().key(key()).anchor(anchor)
}

/// Ten calls audited into a keyed, anchored log (SQLite when `sqlite`, else JSON Lines).
async fn log(sqlite: bool) -> Log {
    let dir = tempfile::tempdir().unwrap();
    let (db, jsonl) = (dir.path().join("audit.db"), dir.path().join("audit.jsonl"));
    // Out of band: in a real app another volume or machine; here another directory.
    std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
    let anchor = dir.path().join("elsewhere/audit.anchor");
    let sink: Arc<dyn AuditSink> = if sqlite {
        Arc::new(SqliteAudit::open_with(&db, options(&anchor)).unwrap())
    } else {
        Arc::new(JsonlAudit::open_with(&jsonl, options(&anchor)).unwrap())
    };
    let e = Engine::new().with_audit(sink.clone());
    e.register(echo("send", object(), Policy::default(), &Runs::default()))
        .unwrap();
    let calls = (0..10)
        .map(|i| Call::new(format!("c{i}"), "send", json!({"n": i})))
        .collect();
    run(&e, calls, caller("u1")).await;
    assert!(sink.verify().await.unwrap().is_intact());
    Log {
        _dir: dir,
        db,
        jsonl,
        anchor,
    }
}

fn verify_db(l: &Log) -> ChainReport {
    SqliteAudit::verify_file_with(&l.db, &options(&l.anchor)).unwrap()
}

fn sql(l: &Log, statement: &str) {
    rusqlite::Connection::open(&l.db)
        .unwrap()
        .execute_batch(statement)
        .unwrap();
}

fn broken_at(report: &ChainReport) -> u64 {
    report
        .broken
        .as_ref()
        .unwrap_or_else(|| panic!("tampering went unnoticed: {report:?}"))
        .seq
}

use tooljig::audit::ChainReport;

#[tokio::test]
async fn an_intact_keyed_anchored_log_verifies_and_goes_on_only_with_its_key() {
    let l = log(true).await;
    assert!(verify_db(&l).is_intact());
    assert_eq!(verify_db(&l).records, 10);
    // Without the key, or with another, the log is not continued (its records would not
    // verify) and does not verify.
    let err = SqliteAudit::open_with(&l.db, AuditOptions::default().anchor(&l.anchor)).unwrap_err();
    assert!(err.to_string().contains("sealed with a key"), "{err}");
    let other = AuditOptions::default()
        .key(SealKey::new([9u8; 32]).unwrap())
        .anchor(&l.anchor);
    assert!(SqliteAudit::open_with(&l.db, other.clone()).is_err());
    assert!(
        !SqliteAudit::verify_file_with(&l.db, &other)
            .unwrap()
            .is_intact()
    );
    // With it, the chain goes on and the anchor follows.
    let sink = SqliteAudit::open_with(&l.db, options(&l.anchor)).unwrap();
    drop(sink);
    assert!(verify_db(&l).is_intact());
}

#[tokio::test]
async fn cutting_records_off_the_end_is_caught() {
    for (what, statement, first_missing) in [
        ("the last row", "DELETE FROM audit_log WHERE seq = 10", 10),
        ("the last 3 rows", "DELETE FROM audit_log WHERE seq > 7", 8),
        ("every row", "DELETE FROM audit_log", 1),
    ] {
        let l = log(true).await;
        sql(&l, statement);
        let report = verify_db(&l);
        assert_eq!(broken_at(&report), first_missing, "{what}: {report:?}");
        assert!(
            report
                .broken
                .unwrap()
                .reason
                .contains("removed from the end")
        );
        let err = SqliteAudit::open_with(&l.db, options(&l.anchor)).unwrap_err();
        assert!(err.to_string().contains("anchor"), "{what}: {err}");
    }
}

#[tokio::test]
async fn a_forged_record_is_caught_whether_appended_or_recomputed() {
    // Appended with an unkeyed hash, linked to the real last record.
    let l = log(true).await;
    let conn = rusqlite::Connection::open(&l.db).unwrap();
    let (last_hash, last_record): (String, String) = conn
        .query_row(
            "SELECT hash, record FROM audit_log WHERE seq = 10",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let content = format!(
        "{{{}",
        last_record.split_once("\"prev_hash\":\"").unwrap().1[65..].trim_start_matches(',')
    );
    let body = splice(11, &last_hash, &content);
    conn.execute(
        "INSERT INTO audit_log (seq, time_ms, principal, tenant, tool, call_id, outcome, code, hash, record)
         SELECT 11, time_ms, principal, tenant, tool, call_id, outcome, code, ?1, ?2 FROM audit_log WHERE seq = 10",
        rusqlite::params![hash_body(&body), body],
    )
    .unwrap();
    assert_eq!(broken_at(&verify_db(&l)), 11);

    // A record edited, and every later hash recomputed (as an unkeyed chain allows).
    let l = log(true).await;
    let conn = rusqlite::Connection::open(&l.db).unwrap();
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT seq, record FROM audit_log ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut prev = GENESIS.to_string();
    for (seq, record) in rows {
        let mut v: serde_json::Value = serde_json::from_str(&record).unwrap();
        if seq == 4 {
            v["principal"] = json!("someone_else");
        }
        v["prev_hash"] = json!(prev);
        let body = serde_json::to_string(&v).unwrap();
        let hash = hash_body(&body);
        conn.execute(
            "UPDATE audit_log SET record = ?1, hash = ?2, principal = ?3 WHERE seq = ?4",
            rusqlite::params![body, hash, v["principal"].as_str(), seq],
        )
        .unwrap();
        prev = hash;
    }
    assert_eq!(
        broken_at(&verify_db(&l)),
        1,
        "the first recomputed hash is not keyed"
    );
}

#[tokio::test]
async fn a_removed_or_forged_anchor_is_caught() {
    let l = log(true).await;
    std::fs::remove_file(&l.anchor).unwrap();
    let report = verify_db(&l);
    assert!(
        report
            .broken
            .unwrap()
            .reason
            .contains("anchor file is missing"),
        "{:?}",
        verify_db(&l)
    );
    assert!(SqliteAudit::open_with(&l.db, options(&l.anchor)).is_err());

    // Cut the log and write an anchor that matches the cut, without the key.
    let l = log(true).await;
    sql(&l, "DELETE FROM audit_log WHERE seq > 7");
    let hash: String = rusqlite::Connection::open(&l.db)
        .unwrap()
        .query_row("SELECT hash FROM audit_log WHERE seq = 7", [], |r| r.get(0))
        .unwrap();
    std::fs::write(&l.anchor, json!({"records": 7, "hash": hash}).to_string()).unwrap();
    let report = verify_db(&l);
    assert!(
        report.broken.unwrap().reason.contains("MAC"),
        "{:?}",
        verify_db(&l)
    );
}

#[tokio::test]
async fn jsonl_lines_deleted_or_cut_at_the_end_are_caught() {
    let l = log(false).await;
    let opts = options(&l.anchor);
    assert!(
        JsonlAudit::verify_file_with(&l.jsonl, &opts)
            .unwrap()
            .is_intact()
    );
    let text = std::fs::read_to_string(&l.jsonl).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The last line deleted.
    std::fs::write(&l.jsonl, lines[..9].join("\n") + "\n").unwrap();
    let report = JsonlAudit::verify_file_with(&l.jsonl, &opts).unwrap();
    assert_eq!(broken_at(&report), 10);
    // The last line cut in the middle.
    std::fs::write(&l.jsonl, lines[..9].join("\n") + "\n" + &lines[9][..40]).unwrap();
    let report = JsonlAudit::verify_file_with(&l.jsonl, &opts).unwrap();
    assert_eq!(broken_at(&report), 10);
    assert!(JsonlAudit::open_with(&l.jsonl, opts.clone()).is_err());
    // The file emptied.
    std::fs::write(&l.jsonl, "").unwrap();
    assert_eq!(
        broken_at(&JsonlAudit::verify_file_with(&l.jsonl, &opts).unwrap()),
        1
    );
}

#[tokio::test]
async fn the_seal_key_option_seals_the_log_and_the_engine_from_one_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let anchor = dir.path().join("a.anchor");
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let e = EngineOptions::from_value(json!({
        "audit": format!("sqlite://{}", db.display()),
        "seal_key": format!("hex:{hex}"),
        "audit_anchor": anchor.display().to_string(),
    }))
    .unwrap()
    .build()
    .unwrap();
    e.register(echo("send", object(), Policy::default(), &Runs::default()))
        .unwrap();
    run(&e, vec![Call::new("a", "send", json!({}))], caller("u1")).await;
    assert!(e.audit().unwrap().verify().await.unwrap().is_intact());
    assert!(
        SqliteAudit::verify_file_with(&db, &AuditOptions::default().key(key()).anchor(&anchor))
            .unwrap()
            .is_intact()
    );
    assert!(
        !SqliteAudit::verify_file(&db).unwrap().is_intact(),
        "the chain is keyed"
    );
    for (bad, says) in [
        (json!({"seal_key": "short"}), "32 bytes"),
        (
            json!({"audit_anchor": "/tmp/x.anchor"}),
            "give one with `audit`",
        ),
        (
            json!({"audit": "memory", "audit_anchor": "/tmp/x.anchor"}),
            "cannot be anchored",
        ),
    ] {
        let err = EngineOptions::from_value(bad.clone())
            .and_then(EngineOptions::build)
            .err()
            .unwrap_or_else(|| panic!("{bad} was accepted"));
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
}
