//! The embedded SQLite state store: one file in WAL mode, shared by every process that
//! opens it. Operations run inside `BEGIN IMMEDIATE` transactions, so a compare-and-set
//! holds against writers in other processes too; a write answers only once the log holding
//! it is synced, so it survives a power cut, not only a process crash (the sync runs on a
//! thread of its own: [`crate::sqlite::wal_sync`]).
//!
//! Records live in a rowid table with a unique index on `(ns, key)`: a group's new records
//! are appended to the same few pages, and only the small index entries land wherever their
//! hashed keys fall, so a commit writes far fewer pages than with the records themselves
//! ordered by key. (Stores created before keep their table, which works the same.)
//!
//! Group commit: one thread owns the writing connection and runs every write queued while
//! the previous commit was on disk in one transaction, then commits once. Each write's
//! compare-and-set is evaluated in turn inside that transaction, so the semantics are those
//! of one transaction per write; a write's answer is released only after the commit that
//! made it durable. Concurrent calls then share fsyncs instead of queueing for one each.
//! Reads go to a second connection on a thread of their own, grouped the same way in a read
//! transaction: WAL lets them run while a write commits, and since a write answers only once
//! committed, a read that follows it sees it. Records are encoded and decoded on the
//! caller's task, so the threads do nothing but SQL.

use super::{Expect, Namespace, StateStore, StoreError, Versioned, now_ms};
use crate::handler::BoxFuture;
use crate::sqlite::checkpoint::Checkpointer;
use crate::sqlite::wal_sync::WalSync;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Releases an operation's answer once its transaction's commit is known.
type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;
/// One operation, run inside the current group's transaction (or told it could not start).
type Job = Box<dyn FnOnce(Result<&Connection, StoreError>) -> Reply + Send>;

/// A state store in one SQLite file. Cheap to clone; the connections close when the last
/// clone is dropped.
#[derive(Clone)]
pub struct SqliteStore {
    writes: mpsc::Sender<Job>,
    /// The reading connection's queue; the writer's own for a store in memory, which a
    /// second connection would not see.
    reads: mpsc::Sender<Job>,
}

/// Most operations one transaction takes, so one group cannot hold the lock for long.
const MAX_GROUP: usize = 512;

/// How long a writer waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl SqliteStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let open = || {
            Connection::open(path)
                .map_err(|e| StoreError(format!("cannot open {}: {e}", path.display())))
        };
        let mut writer = open()?;
        Self::prepare(&writer)?;
        let checkpointer = crate::sqlite::checkpoint::checkpoint_in_background(&mut writer, path)
            .map_err(StoreError)?;
        let after = AfterCommit {
            checkpointer: Some(checkpointer),
            // Without a sync thread the writer syncs in its commits, as it was set up to.
            sync: WalSync::start(&writer)
                .inspect_err(|e| {
                    tracing::warn!(target: "tooljig::sqlite", error = %e, "commits sync on the writer")
                })
                .ok(),
        };
        let writes = serve(writer, after, "tooljig-sqlite-store", WRITE)?;
        let reader = open()?;
        reader.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        reader
            .execute_batch("PRAGMA cache_size = -65536;")
            .map_err(err)?;
        let reads = serve(reader, AfterCommit::default(), "tooljig-sqlite-reads", READ)?;
        Ok(SqliteStore { writes, reads })
    }

    /// A private store in memory (tests, benchmarks of the SQL path without a disk).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(err)?;
        Self::prepare(&conn)?;
        let writes = serve(conn, AfterCommit::default(), "tooljig-sqlite-store", WRITE)?;
        Ok(SqliteStore {
            reads: writes.clone(),
            writes,
        })
    }

    /// Sets the writing connection up: pragmas, WAL, the table.
    fn prepare(conn: &Connection) -> Result<(), StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        crate::sqlite::set_up(
            conn,
            // A page cache four times SQLite's default, so a group's index lookups mostly
            // come from memory; not larger, since SQLite walks the whole cache at every
            // commit (64 MiB cost the writer ~9% of its time; BENCHMARKS.md). FULL until a
            // sync thread takes the syncing over (`WalSync::start`).
            "PRAGMA synchronous = FULL; PRAGMA cache_size = -8192;",
            "CREATE TABLE IF NOT EXISTS tooljig_state (
                 ns TEXT NOT NULL,
                 key TEXT NOT NULL,
                 version INTEGER NOT NULL,
                 value TEXT NOT NULL,
                 expires_at INTEGER,
                 PRIMARY KEY (ns, key)
             );
             CREATE INDEX IF NOT EXISTS tooljig_state_expiry
                 ON tooljig_state (expires_at) WHERE expires_at IS NOT NULL;",
        )
        .map_err(err)
    }

    /// Queues `f` for the next group of writes and waits for its committed answer.
    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<Result<T, StoreError>> {
        queue(&self.writes, f)
    }

    /// Queues `f` for the next group of reads.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<Result<T, StoreError>> {
        queue(&self.reads, f)
    }
}

/// Writes take the write lock when their group begins, so a compare-and-set reads what no
/// other process can change before it commits.
const WRITE: TransactionBehavior = TransactionBehavior::Immediate;
/// Reads see one snapshot a group.
const READ: TransactionBehavior = TransactionBehavior::Deferred;

/// What a writer's thread does after each commit, so no group waits for the disk: hands its
/// checkpoints to a checkpointer, and its answers to a sync thread that releases them once
/// the log is on disk. A reader's thread, or a store in memory, has neither.
#[derive(Default)]
struct AfterCommit {
    checkpointer: Option<Checkpointer>,
    sync: Option<WalSync>,
}

/// Starts the thread that owns `conn` and serves the returned queue.
fn serve(
    conn: Connection,
    after: AfterCommit,
    name: &str,
    behavior: TransactionBehavior,
) -> Result<mpsc::Sender<Job>, StoreError> {
    let (jobs, queue) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || run_groups(conn, queue, behavior, after))
        .map_err(|e| StoreError(format!("cannot start the store's thread: {e}")))?;
    Ok(jobs)
}

/// Queues `f` for the next group transaction of `jobs` and waits for its committed answer.
fn queue<T: Send + 'static>(
    jobs: &mpsc::Sender<Job>,
    f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
) -> BoxFuture<Result<T, StoreError>> {
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |c| {
            let out = c.and_then(f);
            Box::new(move |commit: Option<StoreError>| {
                let _ = tx.send(match commit {
                    Some(e) => Err(e),
                    None => out,
                });
            })
        });
        let queued = jobs.send(job).is_ok();
        Box::pin(async move {
            if !queued {
                return Err(StoreError("the store's thread has stopped".into()));
            }
            rx.await
                .map_err(|_| StoreError("the store's thread stopped mid-operation".into()))?
        })
    }
}

/// The thread that owns a connection: takes every queued operation, runs them in one
/// transaction, commits, then answers them all.
fn run_groups(
    mut conn: Connection,
    queue: mpsc::Receiver<Job>,
    behavior: TransactionBehavior,
    after: AfterCommit,
) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let tx = match conn.transaction_with_behavior(behavior) {
            Ok(tx) => tx,
            Err(e) => {
                let e = err(e);
                for job in group {
                    job(Err(e.clone()))(None);
                }
                continue;
            }
        };
        let replies: Vec<Reply> = group.into_iter().map(|job| job(Ok(&tx))).collect();
        let commit = tx.commit().err().map(err);
        if let Some(c) = &after.checkpointer {
            c.after_commit(&conn);
        }
        match (&after.sync, commit) {
            (Some(sync), None) => sync.after_commit(Box::new(move |synced| {
                let synced = synced.map(StoreError);
                for reply in replies {
                    reply(synced.clone());
                }
            })),
            (_, commit) => {
                for reply in replies {
                    reply(commit.clone());
                }
            }
        }
    }
}

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
}

/// Runs one statement, prepared once per connection; how many rows it changed.
fn execute(c: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
    c.prepare_cached(sql)
        .and_then(|mut st| st.execute(params))
        .map_err(err)
}

/// SQLite integers are signed; times and versions fit comfortably.
fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<(u64, String, Option<u64>)> {
    read_at(row, 0)
}

/// Version, value and expiry, from column `at` on.
fn read_at(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<(u64, String, Option<u64>)> {
    Ok((
        uint(row.get(at)?),
        row.get(at + 1)?,
        row.get::<_, Option<i64>>(at + 2)?.map(uint),
    ))
}

fn decode(
    ns: Namespace,
    key: &str,
    (version, text, exp): (u64, String, Option<u64>),
) -> Result<Versioned, StoreError> {
    let value = serde_json::from_str(&text)
        .map_err(|e| StoreError(format!("record {}/{key} is not JSON: {e}", ns.as_str())))?;
    Ok(Versioned {
        value,
        version,
        expires_at_ms: exp,
    })
}

impl StateStore for SqliteStore {
    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        let key = key.to_string();
        let at = key.clone();
        let row = self.read(move |c| {
            c.prepare_cached(
                "SELECT version, value, expires_at FROM tooljig_state
                 WHERE ns = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
            )
            .and_then(|mut st| {
                st.query_row(params![ns.as_str(), at, int(now_ms())], read)
                    .optional()
            })
            .map_err(err)
        });
        Box::pin(async move { row.await?.map(|r| decode(ns, &key, r)).transpose() })
    }

    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        // `Value`'s own encoding cannot fail (its map keys are strings).
        self.put_json(ns, key, expect, value.to_string(), ttl_ms)
    }

    fn keeps_json_text(&self) -> bool {
        true
    }

    fn put_json(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        text: String,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let key = key.to_string();
        self.write(move |c| {
            let now = now_ms();
            let expires = ttl_ms.map(|t| int(now.saturating_add(t)));
            // Plain statements and the change count, not `RETURNING`: SQLite answers a
            // `RETURNING` clause from a temporary table it opens and closes on every call,
            // which cost the writer thread more than the write itself.
            match expect {
                Expect::Absent => {
                    let inserted = execute(
                        c,
                        "INSERT INTO tooljig_state (ns, key, version, value, expires_at)
                         VALUES (?1, ?2, 1, ?3, ?4) ON CONFLICT (ns, key) DO NOTHING",
                        params![ns.as_str(), key, text, expires],
                    )?;
                    if inserted == 1 {
                        return Ok(Some(1));
                    }
                    // Taken: only an expired record may be replaced, under a new version.
                    let replaced = execute(
                        c,
                        "UPDATE tooljig_state
                         SET version = version + 1, value = ?3, expires_at = ?4
                         WHERE ns = ?1 AND key = ?2
                           AND expires_at IS NOT NULL AND expires_at <= ?5",
                        params![ns.as_str(), key, text, expires, int(now)],
                    )?;
                    if replaced == 0 {
                        return Ok(None);
                    }
                    let version = c
                        .prepare_cached(
                            "SELECT version FROM tooljig_state WHERE ns = ?1 AND key = ?2",
                        )
                        .and_then(|mut st| {
                            st.query_row(params![ns.as_str(), key], |r| r.get::<_, i64>(0))
                        })
                        .map_err(err)?;
                    Ok(Some(uint(version)))
                }
                Expect::Version(want) => {
                    let updated = execute(
                        c,
                        "UPDATE tooljig_state
                         SET version = version + 1, value = ?3, expires_at = ?4
                         WHERE ns = ?1 AND key = ?2 AND version = ?5
                           AND (expires_at IS NULL OR expires_at > ?6)",
                        params![ns.as_str(), key, text, expires, int(want), int(now)],
                    )?;
                    Ok((updated == 1).then(|| want.saturating_add(1)))
                }
            }
        })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        let key = key.to_string();
        self.write(move |c| {
            let deleted = execute(
                c,
                "DELETE FROM tooljig_state WHERE ns = ?1 AND key = ?2 AND version = ?3
                 AND (expires_at IS NULL OR expires_at > ?4)",
                params![ns.as_str(), key, int(version), int(now_ms())],
            )?;
            Ok(deleted == 1)
        })
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        let prefix = prefix.to_string();
        self.write(move |c| {
            let now = now_ms();
            // Expired rows are garbage: sweep them while we are here.
            c.execute(
                "DELETE FROM tooljig_state WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                params![int(now)],
            )
            .map_err(err)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, version, value, expires_at FROM tooljig_state
                     WHERE ns = ?1 AND key >= ?2 AND substr(key, 1, length(?2)) = ?2
                       AND (expires_at IS NULL OR expires_at > ?3)
                     ORDER BY key LIMIT ?4",
                )
                .map_err(err)?;
            let rows = stmt
                .query_map(
                    params![ns.as_str(), prefix, int(now), int(limit as u64)],
                    |r| {
                        let key: String = r.get(0)?;
                        Ok((key, read_at(r, 1)?))
                    },
                )
                .map_err(err)?;
            let mut out = Vec::new();
            for row in rows {
                let (key, raw) = row.map_err(err)?;
                let v = decode(ns, &key, raw)?;
                out.push((key, v));
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn honours_the_store_contract() {
        let dir = std::env::temp_dir().join(format!("tooljig-store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqliteStore::open(dir.join("state.db")).unwrap();
        super::super::contract::check(std::sync::Arc::new(store)).await;
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test]
    async fn two_handles_on_one_file_see_each_other() {
        let dir = std::env::temp_dir().join(format!("tooljig-store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = SqliteStore::open(dir.join("s.db")).unwrap();
        let b = SqliteStore::open(dir.join("s.db")).unwrap();
        a.put(
            Namespace::Run,
            "r",
            Expect::Absent,
            serde_json::json!(1),
            None,
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            b.put(
                Namespace::Run,
                "r",
                Expect::Absent,
                serde_json::json!(2),
                None
            )
            .await
            .unwrap(),
            None
        );
        assert_eq!(
            b.get(Namespace::Run, "r").await.unwrap().unwrap().value,
            serde_json::json!(1)
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_made_by_an_earlier_version_keeps_working() {
        // Until 2026-11-26 the table kept its records ordered by key (`WITHOUT ROWID`).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE tooljig_state (
                     ns TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
                     value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (ns, key)
                 ) WITHOUT ROWID;
                 INSERT INTO tooljig_state VALUES ('run', 'kept', 3, '{\"a\":1}', NULL);",
            )
            .unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let kept = store.get(Namespace::Run, "kept").await.unwrap().unwrap();
        assert_eq!((kept.value, kept.version), (serde_json::json!({"a": 1}), 3));
        let next = store.put(
            Namespace::Run,
            "kept",
            Expect::Version(3),
            serde_json::json!(2),
            None,
        );
        assert_eq!(next.await.unwrap(), Some(4));
        super::super::contract::check(std::sync::Arc::new(store)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_record_is_replaced_under_the_next_version() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let put = |expect, value, ttl| {
            store.put(Namespace::Run, "r", expect, serde_json::json!(value), ttl)
        };
        assert_eq!(put(Expect::Absent, 1, Some(1)).await.unwrap(), Some(1));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(put(Expect::Absent, 2, None).await.unwrap(), Some(2));
        assert_eq!(
            put(Expect::Absent, 3, None).await.unwrap(),
            None,
            "live now"
        );
        assert_eq!(put(Expect::Version(1), 3, None).await.unwrap(), None);
        assert_eq!(put(Expect::Version(2), 3, None).await.unwrap(), Some(3));
    }
}
