//! Durability of the audit log: a writer process is killed (SIGKILL) mid-run; every record
//! of every batch it reported as returned is in the file afterwards, and the chain verifies.
//!
//! The test re-runs its own binary as the child (`child_writer`, which does nothing unless
//! the environment variable below is set).

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tooljig::audit::{AuditQuery, JsonlAudit, SqliteAudit};
use tooljig::*;

const CHILD_ENV: &str = "TOOLJIG_AUDIT_CRASH_CHILD";
const CALLS: usize = 25;

/// The child: runs batches against an audited engine and reports each one that returned.
#[test]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (kind, path) = spec.split_once(':').expect("kind:path");
    let sink: Arc<dyn AuditSink> = match kind {
        "sqlite" => Arc::new(SqliteAudit::open(path).unwrap()),
        _ => Arc::new(JsonlAudit::open(path).unwrap()),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = Engine::new().with_audit(sink);
    engine
        .register(Tool::from_fn(
            "work",
            "Works.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    for b in 0..100_000 {
        if Instant::now() > deadline {
            break;
        }
        let calls = (0..CALLS)
            .map(|c| {
                Call::new(
                    format!("b{b}-c{c}"),
                    "work",
                    json!({"b": b, "pad": "x".repeat(200)}),
                )
            })
            .collect();
        rt.block_on(engine.run(calls, Caller::principal("writer"), BatchOptions::default()));
        println!("returned {b}");
    }
}

fn kill_mid_run(kind: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("audit.{kind}"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{kind}:{}", path.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut returned = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("returned ") {
            let n: usize = n.trim().parse().unwrap();
            returned = Some(n);
            if n >= 40 {
                // Kill while the next batch is being written.
                child.kill().unwrap();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed, not finished");
    let last = returned.expect("the child reported returned batches");
    assert!(last >= 40);

    let (records, report) = match kind {
        "sqlite" => (
            SqliteAudit::query_file(&path, &AuditQuery::all()).unwrap(),
            SqliteAudit::verify_file(&path).unwrap(),
        ),
        _ => {
            // Reopening trims a line cut short by the kill.
            drop(JsonlAudit::open(&path).unwrap());
            (
                JsonlAudit::query_file(&path, &AuditQuery::all()).unwrap(),
                JsonlAudit::verify_file(&path).unwrap(),
            )
        }
    };
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records as usize, records.len());
    let ids: std::collections::HashSet<&str> = records.iter().map(|r| r.call_id.as_str()).collect();
    for b in 0..=last {
        for c in 0..CALLS {
            assert!(
                ids.contains(format!("b{b}-c{c}").as_str()),
                "record of b{b}-c{c} lost"
            );
        }
    }
    assert!(records.len() >= (last + 1) * CALLS);
}

#[test]
fn sqlite_records_survive_a_killed_writer() {
    kill_mid_run("sqlite");
}

#[test]
fn jsonl_records_survive_a_killed_writer() {
    kill_mid_run("jsonl");
}
