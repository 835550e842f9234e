//! The embedded SQLite state store: one file in WAL mode, shared by every process that
//! opens it. Operations run inside `BEGIN IMMEDIATE` transactions, so a compare-and-set
//! holds against writers in other processes too; `synchronous = FULL` makes a committed
//! write survive a power cut, not only a process crash.
//!
//! Group commit: one thread owns the connection and runs every operation queued while the
//! previous commit was on disk in one transaction, then commits once. Each operation's
//! compare-and-set is evaluated in turn inside that transaction, so the semantics are those
//! of one transaction per operation; an operation's answer is released only after the
//! commit that made it durable. Concurrent calls then share fsyncs instead of queueing for
//! one each.

use super::{Expect, Namespace, StateStore, StoreError, Versioned, now_ms};
use crate::handler::BoxFuture;
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

/// A state store in one SQLite file. Cheap to clone; the connection closes when the last
/// clone is dropped.
#[derive(Clone)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
}

/// Most operations one transaction takes, so one group cannot hold the lock for long.
const MAX_GROUP: usize = 512;

/// How long a writer waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl SqliteStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let conn = Connection::open(path.as_ref())
            .map_err(|e| StoreError(format!("cannot open {}: {e}", path.as_ref().display())))?;
        Self::setup(conn)
    }

    /// A private store in memory (tests, benchmarks of the SQL path without a disk).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::setup(Connection::open_in_memory().map_err(err)?)
    }

    fn setup(conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        crate::sqlite::set_up(
            &conn,
            "PRAGMA synchronous = FULL;",
            "CREATE TABLE IF NOT EXISTS tooljig_state (
                 ns TEXT NOT NULL,
                 key TEXT NOT NULL,
                 version INTEGER NOT NULL,
                 value TEXT NOT NULL,
                 expires_at INTEGER,
                 PRIMARY KEY (ns, key)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS tooljig_state_expiry
                 ON tooljig_state (expires_at) WHERE expires_at IS NOT NULL;",
        )
        .map_err(err)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("tooljig-sqlite-store".into())
            .spawn(move || writer(conn, queue))
            .map_err(|e| StoreError(format!("cannot start the store's thread: {e}")))?;
        Ok(SqliteStore { jobs })
    }

    /// Queues `f` for the next group transaction and waits for its committed answer.
    fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<Result<T, StoreError>> {
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
        let queued = self.jobs.send(job).is_ok();
        Box::pin(async move {
            if !queued {
                return Err(StoreError("the store's thread has stopped".into()));
            }
            rx.await
                .map_err(|_| StoreError("the store's thread stopped mid-operation".into()))?
        })
    }
}

/// The thread that owns the connection: takes every queued operation, runs them in one
/// transaction, commits, then answers them all.
fn writer(mut conn: Connection, queue: mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
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
        for reply in replies {
            reply(commit.clone());
        }
    }
}

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
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
        self.blocking(move |c| {
            let row = c
                .query_row(
                    "SELECT version, value, expires_at FROM tooljig_state
                     WHERE ns = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
                    params![ns.as_str(), key, int(now_ms())],
                    read,
                )
                .optional()
                .map_err(err)?;
            row.map(|r| decode(ns, &key, r)).transpose()
        })
    }

    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let key = key.to_string();
        self.blocking(move |c| {
            let text = serde_json::to_string(&value).map_err(|e| StoreError(e.to_string()))?;
            let tx = c;
            let now = now_ms();
            let current: Option<(u64, Option<u64>)> = tx
                .query_row(
                    "SELECT version, expires_at FROM tooljig_state WHERE ns = ?1 AND key = ?2",
                    params![ns.as_str(), key],
                    |r| Ok((uint(r.get(0)?), r.get::<_, Option<i64>>(1)?.map(uint))),
                )
                .optional()
                .map_err(err)?;
            let live = current.filter(|(_, exp)| exp.is_none_or(|at| at > now));
            let version = match (expect, live, current) {
                (Expect::Absent, None, old) => old.map_or(1, |(v, _)| v + 1),
                (Expect::Version(want), Some((v, _)), _) if v == want => want + 1,
                _ => return Ok(None),
            };
            tx.execute(
                "INSERT INTO tooljig_state (ns, key, version, value, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (ns, key) DO UPDATE SET
                     version = excluded.version, value = excluded.value,
                     expires_at = excluded.expires_at",
                params![
                    ns.as_str(),
                    key,
                    int(version),
                    text,
                    ttl_ms.map(|t| int(now.saturating_add(t)))
                ],
            )
            .map_err(err)?;
            Ok(Some(version))
        })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        let key = key.to_string();
        self.blocking(move |c| {
            let n = c
                .execute(
                    "DELETE FROM tooljig_state WHERE ns = ?1 AND key = ?2 AND version = ?3
                     AND (expires_at IS NULL OR expires_at > ?4)",
                    params![ns.as_str(), key, int(version), int(now_ms())],
                )
                .map_err(err)?;
            Ok(n == 1)
        })
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        let prefix = prefix.to_string();
        self.blocking(move |c| {
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
}
