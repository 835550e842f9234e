//! Many processes (here, connections on many threads, which SQLite locks the same way) open
//! one new SQLite file at once: creation, the switch to WAL and the schema must not fail
//! with "database is locked", for the state store and the audit log alike.

use std::sync::{Arc, Barrier};
use tooljig::*;

#[test]
fn opening_a_new_file_from_many_connections_at_once_never_fails() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..12 {
        let state = dir.path().join(format!("state-{round}.db"));
        let audit = dir.path().join(format!("audit-{round}.db"));
        let n = 10;
        let barrier = Arc::new(Barrier::new(2 * n));
        let mut threads = Vec::new();
        for i in 0..2 * n {
            let (barrier, state, audit) = (barrier.clone(), state.clone(), audit.clone());
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                if i % 2 == 0 {
                    SqliteStore::open(&state).map(drop).map_err(|e| e.0)
                } else {
                    SqliteAudit::open(&audit)
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
            }));
        }
        let failures: Vec<String> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap().err())
            .collect();
        assert!(failures.is_empty(), "round {round}: {failures:?}");
    }
}

#[test]
#[ignore = "a helper process of `opening_a_new_file_from_many_processes_at_once_never_fails`"]
fn open_role() {
    let Ok(path) = std::env::var("TOOLJIG_OPEN_PATH") else {
        return;
    };
    let start: u64 = std::env::var("TOOLJIG_OPEN_AT").unwrap().parse().unwrap();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    while now() < start {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let opened = if std::env::var("TOOLJIG_OPEN_KIND").unwrap() == "state" {
        SqliteStore::open(&path).map(drop).map_err(|e| e.0)
    } else {
        SqliteAudit::open(&path)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    if let Err(e) = opened {
        eprintln!("OPEN FAILED: {e}");
        std::process::exit(3);
    }
}

#[test]
fn opening_a_new_file_from_many_processes_at_once_never_fails() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    for round in 0..4 {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
            + 400;
        let children: Vec<_> = (0..12)
            .map(|i| {
                let kind = if i % 2 == 0 { "state" } else { "audit" };
                std::process::Command::new(&exe)
                    .args(["--exact", "open_role", "--ignored", "--nocapture"])
                    .env(
                        "TOOLJIG_OPEN_PATH",
                        dir.path().join(format!("{kind}-{round}.db")),
                    )
                    .env("TOOLJIG_OPEN_KIND", kind)
                    .env("TOOLJIG_OPEN_AT", at.to_string())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
