//! Step 11 through the engine: one record per call, refusals included; redaction; queries;
//! the hash chain and its verification; both file sinks; telemetry beside it.

mod guardrails_common;

use guardrails_common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::audit::{AuditQuery, JsonlAudit, MemoryAudit, Outcome, SqliteAudit};
use tooljig::*;

fn engine(sink: Arc<dyn AuditSink>, runs: &Runs) -> Engine {
    let e = Engine::new().with_audit(sink);
    let schema = json!({
        "type": "object",
        "properties": {"to": {"type": "string"}, "password": {"type": "string"}, "body": {"type": "string"}, "user_id": {"type": "string"}},
        "required": ["to"]
    });
    let mut policy = Policy::default()
        .hidden("user_id", HiddenParam::Principal)
        .redact("password", Redaction::Redact)
        .redact("to", Redaction::Hash)
        .redact("user_id", Redaction::Hash);
    policy.risk = tooljig::policy::Risk::High;
    policy.effect = Effect::External;
    e.register(echo("send", schema, policy, runs)).unwrap();
    let scoped = Policy::default().scopes(["crm.write"]);
    e.register(echo("update", object(), scoped, runs)).unwrap();
    e
}

fn batch() -> Vec<Call> {
    vec![
        Call::new(
            "ok",
            "send",
            json!({"to": "a@b.c", "password": "hunter2", "body": "hi", "user_id": "root"}),
        ),
        Call::new("unknown", "sned", json!({"to": "x"})),
        Call::new(
            "broken",
            "send",
            "{\"to\": \"a@b.c\", \"password\": \"hunter2",
        ),
        Call::new("scopes", "update", json!({"id": 1})),
        Call::new("needs", "send", json!({"body": "hi"})),
        Call::new("cycle", "update", json!({})).depends_on("cycle"),
    ]
}

async fn exercise(sink: Arc<dyn AuditSink>) {
    let runs = Runs::default();
    let e = engine(sink.clone(), &runs);
    let before = tooljig::audit::record::now_ms();
    let out = run(&e, batch(), caller("u1")).await;
    assert_eq!(out.results.len(), 6);
    // Run returned: every record is already durable and queryable.
    let all = sink.query(AuditQuery::all()).await.unwrap();
    assert_eq!(all.len(), 6, "one record per call, refusals included");
    let by = |id: &str| all.iter().find(|r| r.call_id == id).unwrap().clone();

    let ok = by("ok");
    assert_eq!(ok.outcome, Outcome::Ok);
    assert_eq!(
        (
            ok.principal.as_deref(),
            ok.tenant.as_deref(),
            ok.session.as_deref()
        ),
        (Some("u1"), Some("acme"), Some("s-1"))
    );
    assert_eq!(ok.tool, "send");
    assert_eq!(ok.risk, Some(tooljig::policy::Risk::High));
    assert_eq!(ok.effect, Some(Effect::External));
    assert_eq!(ok.attempts, 1);
    assert!(ok.time_ms >= before);
    let args = ok.arguments.clone().unwrap();
    assert_eq!(args["password"], "[redacted]");
    assert_eq!(args["body"], "hi");
    assert!(args["to"].as_str().unwrap().starts_with("sha256:"));
    assert!(
        args["user_id"].as_str().unwrap().starts_with("sha256:"),
        "injected values are redacted too"
    );
    let note = &ok.hidden[0];
    assert_eq!(
        (note.parameter.as_str(), note.source.as_str(), note.injected),
        ("user_id", "principal", true)
    );
    let supplied = note.supplied.as_ref().unwrap().as_str().unwrap();
    assert!(
        supplied.starts_with("sha256:") && !supplied.contains("root"),
        "the dropped value is noted, redacted"
    );
    assert!(!serde_json::to_string(&all).unwrap().contains("hunter2"));

    let unknown = by("unknown");
    assert_eq!(unknown.code, Some(ErrorCode::UnknownTool));
    assert_eq!(unknown.risk, None);
    assert_eq!(unknown.arguments, Some(json!({"to": "x"})));
    let broken = by("broken");
    assert_eq!(broken.code, Some(ErrorCode::IncompleteArguments));
    assert_eq!(
        broken.arguments,
        Some(json!("[redacted]")),
        "unparsed text cannot be redacted field by field"
    );
    let scopes = by("scopes");
    assert_eq!(scopes.code, Some(ErrorCode::ScopesMissing));
    assert_eq!(
        scopes.arguments,
        Some(json!({"id": 1})),
        "a call refused on its path keeps the arguments it was refused with"
    );
    assert_eq!(by("needs").outcome, Outcome::Needs);
    assert_eq!(by("cycle").code, Some(ErrorCode::DependencyCycle));

    // Queries: principal, tool, outcome, code, time range, limit.
    run(
        &e,
        vec![Call::new("other", "send", json!({"to": "z@z.z"}))],
        caller("u2"),
    )
    .await;
    let q = |q: AuditQuery| {
        let sink = sink.clone();
        async move {
            sink.query(q)
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.call_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(q(AuditQuery::principal("u2")).await, vec!["other"]);
    assert_eq!(
        q(AuditQuery {
            tool: Some("update".into()),
            ..Default::default()
        })
        .await
        .len(),
        2
    );
    assert_eq!(
        q(AuditQuery {
            outcome: Some(Outcome::Ok),
            ..Default::default()
        })
        .await,
        vec!["ok", "other"]
    );
    assert_eq!(
        q(AuditQuery {
            code: Some(ErrorCode::ScopesMissing),
            ..Default::default()
        })
        .await,
        vec!["scopes"]
    );
    assert_eq!(
        q(AuditQuery {
            since_ms: Some(before),
            until_ms: Some(u64::MAX),
            ..Default::default()
        })
        .await
        .len(),
        7
    );
    assert!(
        q(AuditQuery {
            until_ms: Some(before),
            ..Default::default()
        })
        .await
        .is_empty()
    );
    assert_eq!(
        q(AuditQuery {
            limit: Some(2),
            ..Default::default()
        })
        .await
        .len(),
        2
    );

    let report = sink.verify().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 7);

    let t = e.telemetry();
    assert_eq!(t.tools["send"].calls, 4);
    assert_eq!(t.tools["send"].ok, 2);
    assert_eq!(t.tools["send"].needs, 1);
    assert_eq!(t.tools["update"].errors["scopes_missing"], 1);
    assert_eq!(t.total().calls, 7);
    assert_eq!(runs.get(), 2);
}

#[tokio::test]
async fn sqlite_records_every_call_and_detects_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    exercise(Arc::new(SqliteAudit::open(&path).unwrap())).await;

    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Alter a record's content.
    conn.execute("UPDATE audit_log SET record = replace(record, '\"call_id\":\"', '\"call_id\":\"x') WHERE seq = 1", []).unwrap();
    let report = SqliteAudit::verify_file(&path).unwrap();
    assert_eq!(report.broken.as_ref().unwrap().seq, 1, "{report:?}");
    assert!(report.broken.unwrap().reason.contains("altered"));
    conn.execute("UPDATE audit_log SET record = replace(record, '\"call_id\":\"x', '\"call_id\":\"') WHERE seq = 1", []).unwrap();
    assert!(SqliteAudit::verify_file(&path).unwrap().is_intact());
    // Edit an indexed column only: queries would lie, verify says so.
    conn.execute(
        "UPDATE audit_log SET principal = 'someone' WHERE seq = 4",
        [],
    )
    .unwrap();
    let report = SqliteAudit::verify_file(&path).unwrap();
    assert_eq!(report.broken.as_ref().unwrap().seq, 4);
    assert_eq!(report.records, 4);
    conn.execute("UPDATE audit_log SET principal = 'u1' WHERE seq = 4", [])
        .unwrap();
    // Remove a record.
    conn.execute("DELETE FROM audit_log WHERE seq = 3", [])
        .unwrap();
    let report = SqliteAudit::verify_file(&path).unwrap();
    assert_eq!(report.broken.as_ref().unwrap().seq, 4);
    assert_eq!(report.records, 2);
}

#[tokio::test]
async fn sqlite_continues_the_chain_when_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    for round in 0..3 {
        let sink = Arc::new(SqliteAudit::open(&path).unwrap());
        let e = engine(sink.clone(), &Runs::default());
        run(
            &e,
            vec![Call::new(format!("r{round}"), "send", json!({"to": "x"}))],
            caller("u1"),
        )
        .await;
    }
    let records = SqliteAudit::query_file(&path, &AuditQuery::all()).unwrap();
    assert_eq!(
        records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(SqliteAudit::verify_file(&path).unwrap().is_intact());
}

/// The SQLite sink inserts rows in groups (one statement for many rows): every row must keep
/// its own columns, whatever its place in its group, and a hand-over that does not fill its
/// last group must lose nothing.
#[tokio::test]
async fn sqlite_keeps_each_rows_columns_in_a_large_hand_over() {
    use tooljig::audit::AuditEntry;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let sink = SqliteAudit::open(&path).unwrap();
    let entry = |i: usize| {
        let record: AuditRecord = serde_json::from_value(json!({
            "time_ms": 1_700_000_000_000u64 + i as u64, "principal": format!("p{}", i % 7),
            "tenant": if i.is_multiple_of(2) { json!("acme") } else { json!(null) }, "session": null,
            "tool": format!("t{}", i % 5), "call_id": format!("c{i}"), "arguments": {"i": i},
            "hidden": [], "outcome": if i.is_multiple_of(3) { "error" } else { "ok" },
            "code": if i.is_multiple_of(3) { json!("timeout") } else { json!(null) },
            "message": null, "detail": null, "output": null, "risk": "low", "effect": "read",
            "duration_us": i, "attempts": 1, "cached": false, "replayed": false,
            "repaired": false, "approval": null
        }))
        .unwrap();
        AuditEntry::new(record)
    };
    // 1,000 at once, then 37, then one: full groups, a part-filled one, a lone row.
    sink.record_all((0..1000).map(entry).collect());
    sink.record_all((1000..1037).map(entry).collect());
    sink.record(entry(1037));
    sink.flush().await.unwrap();

    let records = SqliteAudit::query_file(&path, &AuditQuery::all()).unwrap();
    assert_eq!(records.len(), 1038);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1);
        assert_eq!(r.call_id, format!("c{i}"));
        assert_eq!(r.arguments, Some(json!({"i": i})));
    }
    // The indexed columns, read through queries that filter on them, match each record.
    for p in 0..7 {
        let hits = SqliteAudit::query_file(&path, &AuditQuery::principal(format!("p{p}"))).unwrap();
        assert_eq!(hits.len(), (0..1038).filter(|i| i % 7 == p).count());
        assert!(
            hits.iter()
                .all(|r| r.principal.as_deref() == Some(&*format!("p{p}")))
        );
    }
    let query = AuditQuery {
        tool: Some("t3".into()),
        outcome: Some(Outcome::Error),
        tenant: Some("acme".into()),
        ..AuditQuery::default()
    };
    let hits = SqliteAudit::query_file(&path, &query).unwrap();
    let expected: Vec<String> = (0..1038usize)
        .filter(|&i| i % 5 == 3 && i.is_multiple_of(6))
        .map(|i| format!("c{i}"))
        .collect();
    assert_eq!(
        hits.iter().map(|r| r.call_id.clone()).collect::<Vec<_>>(),
        expected
    );
    assert!(hits.iter().all(|r| r.code == Some(ErrorCode::Timeout)));
    let report = SqliteAudit::verify_file(&path).unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 1038);
}

#[tokio::test]
async fn jsonl_records_every_call_and_detects_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    exercise(Arc::new(JsonlAudit::open(&path).unwrap())).await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 7);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], 1);
    assert_eq!(first["prev_hash"], tooljig::audit::chain::GENESIS);
    // Reorder two lines.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.swap(2, 3);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let report = JsonlAudit::verify_file(&path).unwrap();
    assert_eq!(report.broken.unwrap().seq, 4);
    // A partial last line (a crash mid-write) is dropped on open; the chain goes on.
    std::fs::write(&path, text.clone() + "{\"hash\":\"ab").unwrap();
    let sink = Arc::new(JsonlAudit::open(&path).unwrap());
    let e = engine(sink.clone(), &Runs::default());
    run(
        &e,
        vec![Call::new("later", "send", json!({"to": "x"}))],
        caller("u1"),
    )
    .await;
    let report = sink.verify().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 8);
}

/// Records written before the body put `seq` and `prev_hash` first: their stored text is what
/// their hash covers, so a log that holds them goes on, and verifies, with records of today.
#[tokio::test]
async fn a_log_written_with_the_earlier_body_layout_goes_on_and_verifies() {
    use tooljig::audit::chain::{GENESIS, hash_body};
    let dir = tempfile::tempdir().unwrap();
    let old_body = format!(
        r#"{{"seq":1,"time_ms":1700000000000,"principal":"u1","tenant":null,"session":null,"tool":"send","call_id":"old","arguments":{{"to":"x"}},"hidden":[],"outcome":"ok","code":null,"message":null,"detail":null,"output":null,"risk":"low","effect":"read","duration_us":5,"attempts":1,"cached":false,"replayed":false,"repaired":false,"approval":null,"prev_hash":"{GENESIS}"}}"#
    );
    let hash = hash_body(&old_body);
    let jsonl = dir.path().join("old.jsonl");
    std::fs::write(
        &jsonl,
        format!("{{\"hash\":\"{hash}\",{}\n", &old_body[1..]),
    )
    .unwrap();
    let db = dir.path().join("old.db");
    {
        // The table as `SqliteAudit` creates it, holding one record of the earlier layout.
        drop(SqliteAudit::open(&db).unwrap());
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO audit_log (seq, time_ms, principal, tenant, tool, call_id, outcome, code, hash, record)
             VALUES (1, 1700000000000, 'u1', NULL, 'send', 'old', 'ok', NULL, ?1, ?2)",
            [&hash, &old_body],
        )
        .unwrap();
    }
    let sinks: [Arc<dyn AuditSink>; 2] = [
        Arc::new(JsonlAudit::open(&jsonl).unwrap()),
        Arc::new(SqliteAudit::open(&db).unwrap()),
    ];
    for sink in sinks {
        let e = engine(sink.clone(), &Runs::default());
        run(&e, batch(), caller("u1")).await;
        let report = sink.verify().await.unwrap();
        assert!(report.is_intact(), "{report:?}");
        assert_eq!(report.records, 7);
        let records = sink.query(AuditQuery::all()).await.unwrap();
        assert_eq!(records[0].call_id, "old");
        assert_eq!(records[1].prev_hash, hash);
    }
}

#[tokio::test]
async fn memory_sink_verifies_and_reports_the_first_broken_link() {
    let sink = Arc::new(MemoryAudit::new());
    exercise(sink.clone()).await;
    sink.with_records(|r| r[4].tool = "forged".into());
    let report = sink.verify().await.unwrap();
    assert_eq!(report.broken.unwrap().seq, 5);
    assert_eq!(report.records, 4);
}

#[tokio::test]
async fn memory_sink_hands_its_records_over_as_json_lines_and_its_chain_goes_on() {
    let sink = Arc::new(MemoryAudit::new());
    exercise(sink.clone()).await;
    let queried = sink.query(AuditQuery::all()).await.unwrap();
    let lines = sink.take_lines();
    assert_eq!(lines.len(), queried.len());
    // Each line is the record with its hash first, as the JSON Lines sink writes it.
    for (line, record) in lines.iter().zip(&queried) {
        assert!(line.starts_with(&format!("{{\"hash\":\"{}\",\"seq\":", record.hash)));
        let read: tooljig::audit::AuditRecord = serde_json::from_str(line).unwrap();
        assert_eq!(&read, record);
    }
    assert!(sink.records().is_empty(), "taken out");
    let last = queried.last().unwrap().clone();
    exercise_again(sink.clone()).await;
    let after = sink.records();
    assert_eq!(after[0].seq, last.seq + 1, "the chain goes on");
    assert_eq!(after[0].prev_hash, last.hash);
    let report = sink.verify().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, after.len() as u64);
    sink.with_records(|r| r[1].message = Some("forged".into()));
    let report = sink.verify().await.unwrap();
    assert_eq!(report.broken.unwrap().seq, last.seq + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_sink_lines_taken_while_batches_run_make_one_intact_chain() {
    // Batches record from several tasks while another takes lines out again and again: every
    // record is taken exactly once, and the lines, one file end to end, verify as one chain.
    let sink = Arc::new(MemoryAudit::new());
    let runs = Runs::default();
    let e = Arc::new(engine(sink.clone(), &runs));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let taker = {
        let (sink, done) = (sink.clone(), done.clone());
        tokio::spawn(async move {
            let mut lines = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                lines.extend(sink.take_lines());
                tokio::task::yield_now().await;
            }
            lines
        })
    };
    let batches: Vec<_> = (0..8)
        .map(|_| {
            let e = e.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    assert_eq!(run(&e, batch(), caller("u1")).await.results.len(), 6);
                }
            })
        })
        .collect();
    for b in batches {
        b.await.unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let mut lines = taker.await.unwrap();
    lines.extend(sink.take_lines());
    assert_eq!(lines.len(), 8 * 10 * 6, "every record taken once");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forwarded.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let report = JsonlAudit::verify_file(&path).unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 480);
    assert!(sink.verify().await.unwrap().is_intact(), "an empty rest");
}

/// One more batch of calls, recorded after those of [`exercise`].
async fn exercise_again(sink: Arc<MemoryAudit>) {
    let runs = Runs::default();
    let e = engine(sink, &runs);
    let out = run(&e, batch(), caller("u1")).await;
    assert_eq!(out.results.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_ran_is_audited_while_its_batch_still_runs() {
    // The batch hands its records over whenever it waits, so a record of a finished call does
    // not wait for the slow calls beside it (a crash meanwhile would lose a call that ran).
    let sink = Arc::new(MemoryAudit::new());
    let e = Arc::new(Engine::new().with_audit(sink.clone()));
    e.register(Tool::from_fn("fast", "", object(), |_, _| async {
        Ok(json!("done"))
    }))
    .unwrap();
    e.register(Tool::from_fn("slow", "", object(), |_, _| async {
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        Ok(json!("done"))
    }))
    .unwrap();
    let batch = tokio::spawn({
        let e = e.clone();
        async move {
            let calls = vec![
                Call::new("f", "fast", json!({})),
                Call::new("s", "slow", json!({})),
            ];
            e.run(calls, caller("u1"), BatchOptions::default()).await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let seen: Vec<String> = sink.records().into_iter().map(|r| r.call_id).collect();
    assert_eq!(
        seen,
        ["f"],
        "the fast call's record reached the sink mid-batch"
    );
    batch.await.unwrap();
    assert_eq!(sink.records().len(), 2);
}
