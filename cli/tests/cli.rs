//! The `tooljig` command against a store and audit log seeded by a real run (SQLite and
//! JSON Lines files; PostgreSQL): each command's success and failure, exit codes, and
//! `--json` parsed.

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use tooljig::{BatchOptions, Call, Caller, Engine, EngineOptions, Tool, ToolSpec, handler_fn};

/// Where a scenario keeps its state: a store URL and an audit URL.
struct Backend {
    store: String,
    audit: String,
}

impl Backend {
    fn files(dir: &Path) -> Backend {
        Backend {
            store: format!("sqlite://{}", dir.join("store.db").display()),
            audit: format!("jsonl://{}", dir.join("audit.jsonl").display()),
        }
    }
}

fn cli(backend: &Backend, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tooljig"))
        .args(args)
        .env("TOOLJIG_STORE", &backend.store)
        .env("TOOLJIG_AUDIT", &backend.audit)
        .env_remove("TOOLJIG_SEAL_KEY")
        .output()
        .expect("the binary runs")
}

fn tooljig(dir: &Path, args: &[&str]) -> Output {
    cli(&Backend::files(dir), args)
}

fn ok_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// One line on stderr, exit code 1.
fn failed(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("tooljig: error: "), "{err}");
    err
}

fn engine(backend: &Backend, sent: std::sync::Arc<std::sync::Mutex<Vec<Value>>>) -> Engine {
    let engine = EngineOptions::from_value(json!({
        "state_store": backend.store,
        "audit": backend.audit,
    }))
    .and_then(EngineOptions::build)
    .unwrap();
    let spec = ToolSpec::from_value(json!({
        "name": "send_email", "description": "Sends.",
        "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
        "policy": {"effect": "external", "risk": "high", "approval": {"required": "always"}}
    }))
    .unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(move |args, _ctx| {
                let sent = sent.clone();
                async move {
                    sent.lock().unwrap().push(args.clone());
                    Ok(json!({"sent": args["to"]}))
                }
            }),
        ))
        .unwrap();
    engine
}

/// A run asks for two approvals; the operator approves one and rejects the other from the
/// command line; the app resumes; runs, the run, the audit log and its chain are as they must be.
async fn decide_and_resume(backend: &Backend) -> Engine {
    let sent = std::sync::Arc::default();
    let app = engine(backend, std::sync::Arc::clone(&sent));
    let calls = vec![
        Call::new("a", "send_email", json!({"to": "ada@example.com"})),
        Call::new("b", "send_email", json!({"to": "eve@example.com"})),
        Call::new("c", "send_email", json!({"to": "carol@example.com"})),
    ];
    let out = app
        .run(calls, Caller::principal("alice"), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().expect("the run suspended");

    let pending = ok_json(&cli(backend, &["pending", "--json"]));
    let pending = pending.as_array().unwrap();
    assert_eq!(pending.len(), 3);
    let id_of = |to: &str| {
        let r = pending.iter().find(|r| r["arguments"]["to"] == to).unwrap();
        (
            r["id"].as_str().unwrap().to_string(),
            r["arguments_hash"].as_str().unwrap().to_string(),
        )
    };
    let (ada, ada_hash) = id_of("ada@example.com");
    let (eve, _) = id_of("eve@example.com");
    let (carol, _) = id_of("carol@example.com");
    let table = cli(backend, &["pending"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.starts_with("ID") && text.contains("send_email") && text.contains("alice"),
        "{text}"
    );

    // Only the principal who asked may confirm, and only the arguments they saw.
    assert!(
        failed(&cli(backend, &["approve", &ada, "--as", "mallory"])).contains("not_an_approver")
    );
    failed(&cli(
        backend,
        &["approve", &ada, "--as", "alice", "--hash", "0000"],
    ));
    let approved = ok_json(&cli(
        backend,
        &[
            "approve", &ada, "--as", "alice", "--hash", &ada_hash, "--json",
        ],
    ));
    assert_eq!(approved["status"], "approved");
    failed(&cli(backend, &["approve", &ada, "--as", "alice"])); // replayed
    let rejected = ok_json(&cli(
        backend,
        &[
            "reject",
            &eve,
            "--as",
            "alice",
            "--message",
            "not her",
            "--json",
        ],
    ));
    assert_eq!(rejected["status"], "rejected");
    // An edit is checked against the tool's schema (kept with the request: this process has
    // no tools) before it is accepted.
    let bad = failed(&cli(
        backend,
        &[
            "edit",
            &carol,
            "--as",
            "alice",
            "--arguments",
            r#"{"to": 5}"#,
        ],
    ));
    assert!(bad.contains("invalid_edit"), "{bad}");
    let not_json = failed(&cli(
        backend,
        &["edit", &carol, "--as", "alice", "--arguments", "{to"],
    ));
    assert!(not_json.contains("not JSON"), "{not_json}");
    let edited = ok_json(&cli(
        backend,
        &[
            "edit",
            &carol,
            "--as",
            "alice",
            "--arguments",
            r#"{"to": "carol@new.example"}"#,
            "--json",
        ],
    ));
    assert_eq!(edited["status"], "edited");
    assert_eq!(ok_json(&cli(backend, &["pending", "--json"])), json!([]));

    // The app resumes; the approved call runs, the rejected one does not.
    let resumed = app.resume(&run_id).await.unwrap();
    assert_eq!(sent.lock().unwrap().len(), 2);
    assert_eq!(
        resumed.get("c").unwrap().envelope.data(),
        Some(&json!({"sent": "carol@new.example"}))
    );
    assert!(resumed.get("a").unwrap().envelope.is_ok());
    assert_eq!(
        resumed
            .get("b")
            .unwrap()
            .envelope
            .code()
            .map(|c| c.as_str()),
        Some("approval_rejected")
    );

    let runs = ok_json(&cli(backend, &["runs", "--json"]));
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == run_id.as_str())
    );
    let run = ok_json(&cli(backend, &["run", &run_id, "--json"]));
    assert_eq!(run["calls"].as_array().unwrap().len(), 3);
    assert!(
        String::from_utf8_lossy(&cli(backend, &["run", &run_id]).stdout)
            .contains("approval_rejected")
    );
    assert!(failed(&cli(backend, &["run", "no-such-run"])).contains("(not_found, unknown_run)"));

    // The audit log, as JSON Lines and filtered.
    let audit = cli(backend, &["audit", "--json", "--tool", "send_email"]);
    assert!(audit.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&audit.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(|r| r["outcome"] == "ok"));
    assert!(lines.iter().all(|r| r["tool"] == "send_email"));
    let verify = cli(backend, &["audit", "verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(String::from_utf8_lossy(&verify.stdout).starts_with("intact:"));
    // Stats from the audit log: the approved call ran, the rejected one was refused.
    let stats = ok_json(&cli(backend, &["stats", "--json"]));
    let email = stats
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tool"] == "send_email")
        .unwrap();
    assert_eq!(email["ok"], 2, "{email}");
    assert_eq!(email["codes"]["approval_rejected"], 1, "{email}");
    let table = cli(backend, &["stats"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("approval_rejected:1"));
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_decides_from_the_command_line_and_the_run_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let app = decide_and_resume(&Backend::files(dir.path())).await;
    // An edited record is named.
    drop(app);
    let path = dir.path().join("audit.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("ada@example.com", "adb@example.com", 1),
    )
    .unwrap();
    let broken = tooljig(dir.path(), &["audit", "verify", "--json"]);
    assert_eq!(broken.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert!(report["broken"]["seq"].is_u64(), "{report}");
}

#[test]
fn mistakes_are_one_line_and_a_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let no_store = Command::new(env!("CARGO_BIN_EXE_tooljig"))
        .args(["pending"])
        .env_remove("TOOLJIG_STORE")
        .output()
        .unwrap();
    assert!(failed(&no_store).contains("--store"));
    let bad_url = tooljig(dir.path(), &["--store", "ftp://x", "pending"]);
    failed(&bad_url);
    let usage = tooljig(dir.path(), &["dance"]);
    assert_eq!(usage.status.code(), Some(2));
}

/// A decision on a request that does not exist fails as docs/operators.md promises: one line
/// with the core's closed code and reason, whether or not the operator named a hash.
#[test]
fn an_unknown_approval_is_refused_with_its_code_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[&[&str]] = &[
        &["approve", "apr_nope", "--as", "alice"],
        &["approve", "apr_nope", "--as", "alice", "--hash", "abc"],
        &["reject", "apr_nope", "--as", "alice", "--message", "no"],
        &["edit", "apr_nope", "--as", "alice", "--arguments", "{}"],
    ];
    for args in cases {
        let err = failed(&tooljig(dir.path(), args));
        assert!(err.contains("apr_nope"), "{args:?}: {err}");
        assert!(
            err.trim_end().ends_with("(not_found, unknown_approval)"),
            "{args:?}: {err}"
        );
    }
}

/// The same against PostgreSQL (store and audit log in a schema of the test's own, dropped
/// after): skipped when the server does not answer, a failure under CI=true.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_against_postgresql() {
    let base = std::env::var("TOOLJIG_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let psql = |sql: &str| {
        Command::new("psql")
            .args([base.as_str(), "-q", "-c", sql])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !psql("select 1") {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "PostgreSQL at {base} is unreachable under CI=true"
        );
        eprintln!("skipped: PostgreSQL at {base} is unreachable (or psql is missing)");
        return;
    }
    let schema = format!("tj_cli_{}", std::process::id());
    struct Dropped<'a>(&'a dyn Fn(&str) -> bool, String);
    impl Drop for Dropped<'_> {
        fn drop(&mut self) {
            (self.0)(&format!("drop schema if exists {} cascade", self.1));
        }
    }
    let _cleanup = Dropped(&psql, schema.clone());
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema={schema}");
    let backend = Backend {
        store: url.clone(),
        audit: url,
    };
    drop(decide_and_resume(&backend).await);
}
