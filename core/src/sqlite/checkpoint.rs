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
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::Duration;

/// WAL pages (4 KiB each) after which a commit asks for a checkpoint: SQLite's own default.
const CHECKPOINT_PAGES: i32 = 1000;

/// WAL pages after which the writer checkpoints itself. Under a steady stream of commits the
/// background checkpointer never catches up with the last one, and SQLite reuses the log
/// only once everything in it was copied back; the writer's own checkpoint, between its
/// transactions, copies the few pages left so the next transaction starts the log over.
const WRITER_CHECKPOINT_PAGES: i32 = 4 * CHECKPOINT_PAGES;

/// WAL pages after which the writer waits for the checkpointer's round to end before its own.
/// On a loaded machine the checkpointer may be at work at every commit, and a checkpoint that
/// finds another one running fails at once, whatever the busy timeout; so past this size
/// (24 MB) the writer waits on the gate they share, then copies the rest and waits for
/// readers of old pages, so the next transaction starts the log over.
const BLOCKING_CHECKPOINT_PAGES: i32 = 6 * CHECKPOINT_PAGES;

thread_local! {
    /// Pages in the log after this thread's last commit, as the WAL hook reported them. The
    /// hook is a plain function (it can capture nothing), and it runs on the committing
    /// thread, inside the commit; the writer reads the count right after.
    static LOG_PAGES: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

fn on_commit(_: &rusqlite::hooks::Wal, pages: i32) -> rusqlite::Result<()> {
    LOG_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// Held by whoever checkpoints a database, so the writer can wait for the checkpointer's
/// round instead of failing beside it.
type Gate = Arc<Mutex<()>>;

fn hold(gate: &Mutex<()>) -> MutexGuard<'_, ()> {
    // Nothing is guarded but the turn; a panic while holding it leaves nothing half-done.
    gate.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The background checkpointer of one connection; call [`Checkpointer::after_commit`] on the
/// connection's thread after each commit.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    tx: mpsc::SyncSender<()>,
    gate: Gate,
}

impl Checkpointer {
    /// Copies the log back, or asks the checkpointer to, when the commit just made on `conn`
    /// left it long enough.
    pub(crate) fn after_commit(&self, conn: &Connection) {
        let pages = LOG_PAGES.with(|p| p.replace(0));
        if pages >= BLOCKING_CHECKPOINT_PAGES {
            let _turn = hold(&self.gate);
            // A failure (readers held on past the busy timeout) leaves it to a later commit.
            checkpoint(conn, "RESTART");
        } else if pages >= WRITER_CHECKPOINT_PAGES {
            // Busy when the checkpointer is at work: it copies these pages, or the next
            // commit tries again.
            if let Ok(_turn) = self.gate.try_lock() {
                checkpoint(conn, "PASSIVE");
            }
        } else if pages >= CHECKPOINT_PAGES {
            // Full: a checkpoint is already asked for; it will see these pages too.
            let _ = self.tx.try_send(());
        }
    }
}

/// Runs one checkpoint in `mode`; a failure leaves the log longer, never loses data.
fn checkpoint(conn: &Connection, mode: &str) {
    let sql = format!("PRAGMA wal_checkpoint({mode})");
    if let Err(e) = conn.query_row(&sql, [], |_| Ok(())) {
        tracing::warn!(target: "tooljig::sqlite", error = %e, mode, "WAL checkpoint failed");
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
    let gate = Gate::default();
    let turn = gate.clone();
    std::thread::Builder::new()
        .name("tooljig-sqlite-checkpoint".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // PASSIVE never waits for the writer; what it cannot copy now, a later
                // round does.
                let _turn = hold(&turn);
                checkpoint(&checkpointer, "PASSIVE");
            }
        })
        .map_err(|e| format!("cannot start the checkpointer: {e}"))?;
    // Registering a hook replaces SQLite's automatic checkpoint, which is a hook too.
    conn.wal_hook(Some(on_commit));
    Ok(Checkpointer { tx, gate })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(path: &Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// Writes 40 MB in 400 commits, one right after the other, and returns the most the log
    /// held after a commit: without checkpoints, or with background ones that never catch
    /// up, it would hold all of it.
    fn write_40_mb(conn: &mut Connection, checkpointer: &Checkpointer, wal: &Path) -> u64 {
        let row = "x".repeat(1000);
        let mut longest = 0;
        for _ in 0..400 {
            let tx = conn.transaction().unwrap();
            for _ in 0..100 {
                tx.execute("INSERT INTO t VALUES (?1)", [&row]).unwrap();
            }
            tx.commit().unwrap();
            checkpointer.after_commit(conn);
            longest = longest.max(size(wal));
        }
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 40_000);
        longest
    }

    fn database() -> (tempfile::TempDir, Connection, Checkpointer) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT);")
            .unwrap();
        let checkpointer = checkpoint_in_background(&mut conn, &path).unwrap();
        (dir, conn, checkpointer)
    }

    #[test]
    fn the_log_is_copied_back_by_the_checkpointer_not_left_to_grow() {
        let (dir, mut conn, checkpointer) = database();
        let (path, wal) = (
            dir.path().join("db.sqlite"),
            dir.path().join("db.sqlite-wal"),
        );
        let longest = write_40_mb(&mut conn, &checkpointer, &wal);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size(&path) < 35_000_000 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            size(&path) >= 35_000_000,
            "the rows reached the database file"
        );
        // However far the checkpointer lags, the writer restarts the log once it passes
        // 24 MB (plus the commit that crossed it).
        assert!(
            longest < 26_000_000,
            "the log was reused, not grown: {longest} bytes at most"
        );
    }

    #[test]
    fn the_writer_waits_its_turn_when_the_checkpointer_is_long_at_work() {
        // What a loaded machine does by chance, done on purpose: the checkpoint turn is
        // taken for longer than writing 40 MB lasts (a checkpointer round that fsyncs on a
        // slow disk), so neither the checkpointer nor the writer's passive try gets it.
        let (dir, mut conn, checkpointer) = database();
        let wal = dir.path().join("db.sqlite-wal");
        let (taken, stop) = (
            Arc::new(std::sync::Barrier::new(2)),
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
        );
        let busy = {
            let (gate, taken, stop) = (checkpointer.gate.clone(), taken.clone(), stop.clone());
            std::thread::spawn(move || {
                let _turn = hold(&gate);
                taken.wait();
                let deadline = std::time::Instant::now() + Duration::from_secs(1);
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        taken.wait();
        let longest = write_40_mb(&mut conn, &checkpointer, &wal);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        assert!(
            longest < 26_000_000,
            "the log was reused, not grown: {longest} bytes at most"
        );
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
