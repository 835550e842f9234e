//! Durable commits without the writer waiting for the disk.
//!
//! With `synchronous = FULL` SQLite syncs the write-ahead log inside every commit, so the one
//! thread that writes a database spends most of a small group's time in `fsync`, and the
//! next group waits behind it. Here the writer commits with `synchronous = NORMAL` (the log
//! is written, not synced) and hands the group's answers to a sync thread, which syncs the
//! log file itself and only then releases them: one sync covers every group committed before
//! it began, and the writer runs the next group meanwhile.
//!
//! What a caller sees is what `FULL` gives it: an answer comes after its write is on disk.
//! What others see differs by one sync: a reader may see a committed write before it is on
//! disk. That cannot turn into an effect a power cut undoes, because acting on a record means
//! writing (a claim, a decision), and that write's own answer waits for a later sync, which
//! covers the log up to it. SQLite's `NORMAL` still syncs the log before each checkpoint and
//! when it starts the log over, so a checkpoint never copies back what is not on disk.

use rusqlite::Connection;
use std::fs::File;
use std::sync::mpsc;

/// Releases one group's answers: `None` once they are on disk, or why they may not be.
pub(crate) type Release = Box<dyn FnOnce(Option<String>) + Send>;

/// The sync thread of one database's writer; the thread ends when this is dropped.
pub(crate) struct WalSync {
    groups: mpsc::Sender<Release>,
}

impl WalSync {
    /// Starts syncing `conn`'s log, and switches `conn` to `synchronous = NORMAL`. `Err` when
    /// the log file cannot be opened (then `conn` keeps syncing in its commits).
    pub(crate) fn start(conn: &Connection) -> Result<WalSync, String> {
        let db = conn
            .path()
            .filter(|p| !p.is_empty())
            .ok_or("the database has no file")?;
        // SQLite names the log after the database's full path; it exists from the first
        // transaction in WAL mode, and is kept while a connection is open. SQLite locks the
        // database and its `-shm` file, never the log, so this descriptor's closing cannot
        // drop a lock of SQLite's (closing one on the database file would: POSIX locks are
        // per process).
        let wal = format!("{db}-wal");
        let file = File::open(&wal).map_err(|e| format!("cannot open {wal}: {e}"))?;
        let (groups, waiting) = mpsc::channel::<Release>();
        std::thread::Builder::new()
            .name("tooljig-sqlite-sync".into())
            .spawn(move || sync_groups(&file, &waiting))
            .map_err(|e| format!("cannot start the sync thread: {e}"))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(|e| e.to_string())?;
        Ok(WalSync { groups })
    }

    /// Releases a group committed on the writer once the log holding it is on disk.
    pub(crate) fn after_commit(&self, release: Release) {
        if let Err(mpsc::SendError(release)) = self.groups.send(release) {
            release(Some("the store's sync thread has stopped".into()));
        }
    }
}

/// Syncs the log once for every group waiting, however many committed since the last sync.
fn sync_groups(file: &File, waiting: &mpsc::Receiver<Release>) {
    while let Ok(first) = waiting.recv() {
        // Taken before the sync: all of them were committed before it starts.
        let group: Vec<Release> = std::iter::once(first).chain(waiting.try_iter()).collect();
        let synced = file.sync_data().err().map(|e| {
            format!("the write was committed but the log could not be synced to disk: {e}")
        });
        for release in group {
            release(synced.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_group_is_released_after_the_sync_and_the_writer_no_longer_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("db.sqlite")).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);")
            .unwrap();
        let sync = WalSync::start(&conn).unwrap();
        let level: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(level, 1, "NORMAL: the sync thread syncs instead");
        let released = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = mpsc::channel();
        for i in 0..3 {
            conn.execute("INSERT INTO t VALUES (?1)", [i]).unwrap();
            let (released, done) = (released.clone(), done.clone());
            sync.after_commit(Box::new(move |e| {
                released.lock().unwrap().push((i, e));
                done.send(()).unwrap();
            }));
        }
        for _ in 0..3 {
            finished
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap();
        }
        assert_eq!(
            *released.lock().unwrap(),
            vec![(0, None), (1, None), (2, None)],
            "released in commit order, each after a sync that succeeded"
        );
    }

    #[test]
    fn a_database_in_memory_keeps_syncing_itself() {
        let conn = Connection::open_in_memory().unwrap();
        let err = WalSync::start(&conn).err().unwrap();
        assert!(err.contains("no file"), "{err}");
    }
}
