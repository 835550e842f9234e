//! What the SQLite-backed stores share: opening a file that other processes may be creating
//! or migrating at the same moment, and checkpoints off the writer's thread
//! ([`checkpoint`]).

pub(crate) mod checkpoint;
pub(crate) mod wal_sync;

use rusqlite::{Connection, ErrorCode};
use std::time::{Duration, Instant};

/// How long setting up a file waits for other processes doing the same.
const SETUP_PATIENCE: Duration = Duration::from_secs(10);

/// Whether an error only says another connection holds a lock now.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `step` until it does not fail for a lock another connection holds, for up to ten
/// seconds. Some of SQLite's lock waits do not call the busy handler (switching a new file
/// to WAL, upgrading a read to a write, reading a log another connection is recovering):
/// they fail at once with "database is locked", which is only a matter of waiting here.
pub(crate) fn patiently<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + SETUP_PATIENCE;
    let mut wait = Duration::from_millis(1);
    loop {
        match step() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                // Spread the retries of processes that collided, so they do not collide again.
                let jitter = Duration::from_micros(u64::from(std::process::id() % 997));
                std::thread::sleep(wait + jitter);
                wait = (wait * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Sets up a connection to a file others may be setting up at once: the pragmas (which
/// cannot run in a transaction), the switch to WAL, then the schema inside one
/// `BEGIN IMMEDIATE` transaction (taking the write lock first, so the busy handler applies),
/// each step retried while the file is locked.
pub(crate) fn set_up(conn: &Connection, pragmas: &str, schema: &str) -> rusqlite::Result<()> {
    // Statement journals in memory: a statement that writes several rows inside a
    // transaction keeps the pages it changes in one, and past 64 KiB (four 16 KiB pages)
    // SQLite spills it to a temporary file, which cost the audit writer a write of every page
    // it touched, on top of the log's own (BENCHMARKS.md).
    patiently(|| conn.execute_batch("PRAGMA temp_store = MEMORY;"))?;
    patiently(|| conn.execute_batch(pragmas))?;
    patiently(|| {
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        // An in-memory database has no log to switch: it answers "memory".
        if mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory") {
            Ok(())
        } else {
            // Another connection held the file in a way that kept it in rollback mode.
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                Some(format!("the database stayed in {mode} mode")),
            ))
        }
    })?;
    patiently(|| {
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {schema} COMMIT;"))
            .inspect_err(|_| {
                let _ = conn.execute_batch("ROLLBACK");
            })
    })
}
