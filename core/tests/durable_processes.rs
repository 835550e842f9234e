//! Suspend and resume across OS processes: a run starts in one process and suspends on an
//! approval; that process is killed; a second process approves; a third resumes; a fourth
//! resumes again and finds nothing to do. Every side effect (a line appended to a file)
//! happens exactly once, and the SQLite audit log holds every step.
//!
//! The processes are this test binary run again with `TOOLJIG_DURABLE_ROLE` set, running
//! the ignored `process_role` helper below.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use tooljig::audit::AuditQuery;
use tooljig::*;

const ROLE: &str = "TOOLJIG_DURABLE_ROLE";
const DIR: &str = "TOOLJIG_DURABLE_DIR";
const ARG: &str = "TOOLJIG_DURABLE_ARG";
const MARK: &str = "TOOLJIG-RESULT ";

/// The app, as every process builds it: same tools, same store file, same audit file.
fn app(dir: &Path) -> Engine {
    let engine = Engine::new()
        .with_state_store(Arc::new(SqliteStore::open(dir.join("state.db")).unwrap()))
        .with_audit(Arc::new(SqliteAudit::open(dir.join("audit.db")).unwrap()));
    let effects = dir.join("effects.txt");
    let append = move |args: Value, _ctx: ToolContext| {
        let effects = effects.clone();
        async move {
            let line = args["line"].as_str().unwrap_or("?").to_string();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&effects)
                .map_err(HandlerError::unexpected)?;
            writeln!(f, "{line} pid={}", std::process::id()).map_err(HandlerError::unexpected)?;
            f.sync_all().map_err(HandlerError::unexpected)?;
            Ok(json!({"wrote": line}))
        }
    };
    let schema =
        json!({"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]});
    engine
        .register(Tool::from_fn(
            "note",
            "Appends a line.",
            schema.clone(),
            append.clone(),
        ))
        .unwrap();
    let mut policy = Policy::default().risk(Risk::High).require_approval();
    policy.approval.approver_roles = vec!["reviewer".into()];
    engine
        .register(
            Tool::from_fn(
                "transfer",
                "Appends a line, after approval.",
                schema,
                append,
            )
            .policy(policy),
        )
        .unwrap();
    engine
}

fn say(v: Value) {
    println!("{MARK}{v}");
    std::io::stdout().flush().unwrap();
}

#[test]
#[ignore = "a helper process of `a_run_survives_its_process`, not a test on its own"]
fn process_role() {
    let role = std::env::var(ROLE).expect("run by a_run_survives_its_process, which sets the role");
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let arg: Value = serde_json::from_str(&std::env::var(ARG).unwrap_or("null".into())).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let engine = app(&dir);
        match role.as_str() {
            "start" => {
                let out = engine
                    .run(
                        vec![
                            Call::new("a", "note", json!({"line": "a"})),
                            Call::new("b", "transfer", json!({"line": "b"})),
                            Call::new("c", "note", json!({"line": "c"})).depends_on("b"),
                        ],
                        Caller {
                            principal: Some("alice".into()),
                            ..Default::default()
                        },
                        BatchOptions::default(),
                    )
                    .await;
                let b = out.get("b").unwrap().approval.clone().unwrap();
                say(
                    json!({"run_id": out.run_id, "approval_id": b.id, "hash": b.arguments_hash,
                           "statuses": out.results.iter().map(|r| r.status).collect::<Vec<_>>()}),
                );
                // Suspended and reported: now wait to be killed, like a server between turns.
                std::thread::sleep(std::time::Duration::from_secs(600));
            }
            "approve" => {
                let approver = Caller {
                    principal: Some("rita".into()),
                    roles: vec!["reviewer".into()],
                    ..Default::default()
                };
                let decision = Decision::Approve {
                    arguments_hash: arg["hash"].as_str().unwrap().into(),
                    remember: None,
                };
                let rec = engine
                    .decide(arg["approval_id"].as_str().unwrap(), decision, &approver)
                    .await
                    .unwrap();
                say(json!({"status": rec.status}));
            }
            "resume" => {
                let out = engine
                    .resume(arg["run_id"].as_str().unwrap())
                    .await
                    .unwrap();
                say(serde_json::to_value(&out.results).unwrap());
            }
            other => panic!("unknown role {other}"),
        }
    });
}

/// Runs this test binary as a helper process in `role`; returns its reported value. With
/// `keep`, the process is left running and returned to be killed.
fn spawn(dir: &Path, role: &str, arg: &Value) -> (Value, std::process::Child) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "process_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(DIR, dir)
        .env(ARG, arg.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next() {
        let line = line.unwrap();
        // libtest prints `test process_role ... ` before the helper's first line.
        if let Some(at) = line.find(MARK) {
            // Keep draining, or the helper's last words hit a closed pipe and it fails.
            std::thread::spawn(move || lines.for_each(drop));
            return (
                serde_json::from_str(&line[at + MARK.len()..]).unwrap(),
                child,
            );
        }
    }
    panic!(
        "the {role} process ended without reporting: {:?}",
        child.wait()
    );
}

fn run_to_end(dir: &Path, role: &str, arg: &Value) -> Value {
    let (v, mut child) = spawn(dir, role, arg);
    assert!(child.wait().unwrap().success(), "{role} process failed");
    v
}

#[test]
fn a_run_survives_its_process() {
    let dir = std::env::temp_dir().join(format!("tooljig-procs-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();

    let (started, mut first) = spawn(&dir, "start", &Value::Null);
    assert_eq!(
        started["statuses"],
        json!(["done", "pending_approval", "waiting"])
    );
    first.kill().unwrap();
    first.wait().unwrap();

    let approved = run_to_end(&dir, "approve", &started);
    assert_eq!(approved["status"], "approved");
    let resumed = run_to_end(&dir, "resume", &started);
    let envelopes: Vec<&Value> = resumed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["envelope"])
        .collect();
    assert_eq!(
        envelopes,
        [
            &json!({"ok": true, "data": {"wrote": "a"}}),
            &json!({"ok": true, "data": {"wrote": "b"}}),
            &json!({"ok": true, "data": {"wrote": "c"}})
        ]
    );
    assert_eq!(resumed[1]["approval"]["decided_by"], "rita");
    // A fourth process resumes the finished run: nothing runs again.
    let again = run_to_end(&dir, "resume", &started);
    assert_eq!(again, resumed);

    let effects = std::fs::read_to_string(dir.join("effects.txt")).unwrap();
    let lines: Vec<&str> = effects
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        lines,
        ["a", "b", "c"],
        "each side effect exactly once:\n{effects}"
    );
    let pids: std::collections::HashSet<&str> = effects
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "a ran in the first process, b and c in the third"
    );

    // The audit log, written by two processes, holds every step and an intact chain.
    let audit = SqliteAudit::query_file(dir.join("audit.db"), &AuditQuery::all()).unwrap();
    let mut steps: Vec<(String, &str)> = audit
        .iter()
        .map(|r| (r.call_id.clone(), r.outcome.as_str()))
        .collect();
    // Within one pass calls settle in any order; the passes themselves are in order.
    assert_eq!(steps.len(), 5, "{audit:#?}");
    steps[..3].sort();
    steps[3..].sort();
    assert_eq!(
        steps,
        [
            ("a".into(), "ok"),
            ("b".into(), "pending_approval"),
            ("c".into(), "waiting"),
            ("b".into(), "ok"),
            ("c".into(), "ok"),
        ],
        "{audit:#?}"
    );
    let b_done = audit
        .iter()
        .find(|r| r.call_id == "b" && r.outcome.as_str() == "ok")
        .unwrap();
    assert_eq!(b_done.approval.as_ref().unwrap()["decided_by"], "rita");
    assert!(
        b_done.approval.as_ref().unwrap()["decided_at_ms"]
            .as_u64()
            .is_some()
    );
    assert!(
        SqliteAudit::verify_file(dir.join("audit.db"))
            .unwrap()
            .is_intact()
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}
