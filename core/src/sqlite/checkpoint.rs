//! WAL checkpoints on a thread of their own.
//!
//! SQLite copies the write-ahead log back into the database file (a checkpoint) from within
//! the commit that makes the log long enough, and with `synchronous = NORMAL` or `FULL` that
//! copy ends in an `fsync`. On a writer thread that others wait for (the audit writer, whose
//! flush `Engine::run` awaits), that stalls every waiter for the length of a disk sync. Here
//! the commit only signals; a checkpointer thread with its own connection does the copy,
//! concurrently with the writer, as WAL mode allows.

use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// WAL pages (4 KiB each) after which a commit asks for a checkpoint: SQLite's own default.
const CHECKPOINT_PAGES: i32 = 1000;

/// WAL pages after which the writer checkpoints itself. Under a steady stream of commits the
/// background checkpointer never catches up with the last one, and SQLite reuses the log
/// only once everything in it was copied back; the writer's own checkpoint, between its
/// transactions, copies the few pages left so the next transaction starts the log over.
const WRITER_CHECKPOINT_PAGES: i32 = 4 * CHECKPOINT_PAGES;

thread_local! {
    /// Pages in the log after this thread's last commit, as the WAL hook reported them. The
    /// hook is a plain function (it can capture nothing), and it runs on the committing
    /// thread, inside the commit; the writer reads the count right after.
    static LOG_PAGES: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// WAL pages after which the writer waits for a checkpoint. On a loaded machine the background
/// checkpointer may hold the checkpoint lock at every commit, so the writer's own passive
/// checkpoint above is refused each time and the log would grow without end; past this size
/// the writer waits for the lock once (and for readers of old pages) and copies the rest, so
/// the next transaction starts the log over.
const BLOCKING_CHECKPOINT_PAGES: i32 = 6 * CHECKPOINT_PAGES;

fn on_commit(wal: &rusqlite::hooks::Wal, pages: i32) -> rusqlite::Result<()> {
    if pages >= WRITER_CHECKPOINT_PAGES {
        use rusqlite::hooks::CheckpointMode::{PASSIVE, RESTART};
        // Busy when the checkpointer is at work: the next commit tries again.
        let copied_all = matches!(wal.checkpoint_v2(PASSIVE), Ok((log, done)) if log == done);
        if !copied_all && pages >= BLOCKING_CHECKPOINT_PAGES {
            // A failure (readers held on past the busy timeout) leaves it to a later commit.
            let _ = wal.checkpoint_v2(RESTART);
        }
    }
    LOG_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// The background checkpointer of one connection; call [`Checkpointer::after_commit`] on the
/// connection's thread after each commit.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    tx: mpsc::SyncSender<()>,
}

impl Checkpointer {
    /// Asks for a checkpoint when the commit just made left the log long enough.
    pub(crate) fn after_commit(&self) {
        if LOG_PAGES.with(|p| p.replace(0)) >= CHECKPOINT_PAGES {
            // Full: a checkpoint is already asked for; it will see these pages too.
            let _ = self.tx.try_send(());
        }
    }
}

/// Replaces `conn`'s automatic checkpoints with ones run by a background thread over its own
/// connection to `path`. The thread ends when the returned checkpointer is dropped.
pub(crate) fn checkpoint_in_background(
    conn: &mut Connection,
    path: &Path,
) -> Result<Checkpointer, String> {
    let checkpointer = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| e.to_string())?;
    checkpointer
        .busy_timeout(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    // A connection finds the database in WAL mode on its first read; until then a
    // checkpoint does nothing.
    let mode: String =
        super::patiently(|| checkpointer.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
            .map_err(|e| e.to_string())?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("the database is in {mode} mode, not WAL"));
    }
    let (tx, rx) = mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("tooljig-sqlite-checkpoint".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // PASSIVE never waits for the writer; what it cannot copy now, a later
                // round does. A failure leaves the log longer, never loses data.
                if let Err(e) =
                    checkpointer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                {
                    tracing::warn!(target: "tooljig::sqlite", error = %e, "WAL checkpoint failed");
                }
            }
        })
        .map_err(|e| format!("cannot start the checkpointer: {e}"))?;
    // Registering a hook replaces SQLite's automatic checkpoint, which is a hook too.
    conn.wal_hook(Some(on_commit));
    Ok(Checkpointer { tx })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(path: &Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn the_log_is_copied_back_by_the_checkpointer_not_left_to_grow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT);")
            .unwrap();
        let checkpointer = checkpoint_in_background(&mut conn, &path).unwrap();
        let row = "x".repeat(1000);
        // 40 MB in 400 commits, one right after the other: without checkpoints, or with
        // background ones that never catch up, the log would hold all of it.
        for _ in 0..400 {
            let tx = conn.transaction().unwrap();
            for _ in 0..100 {
                tx.execute("INSERT INTO t VALUES (?1)", [&row]).unwrap();
            }
            tx.commit().unwrap();
            checkpointer.after_commit();
        }
        let wal = dir.path().join("db.sqlite-wal");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size(&path) < 35_000_000 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            size(&path) >= 35_000_000,
            "the rows reached the database file"
        );
        // Without checkpoints the log would hold all 40 MB; on a loaded machine the
        // checkpointer lags some commits behind, so the bound leaves room for that lag.
        assert!(
            size(&wal) < 30_000_000,
            "the log was reused, not grown: {} bytes",
            size(&wal)
        );
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 40_000);
    }

    #[test]
    fn a_database_not_in_wal_mode_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x TEXT);").unwrap();
        let err = checkpoint_in_background(&mut conn, &path).unwrap_err();
        assert!(err.contains("not WAL"), "{err}");
    }
}
