//! The PostgreSQL state store: one table every worker on every machine shares.
//!
//! Each operation is one statement, so PostgreSQL's own row locking makes every
//! compare-and-set atomic against writers anywhere: `INSERT ... ON CONFLICT DO UPDATE ...
//! WHERE` (the row was absent or expired), `UPDATE ... WHERE version = $n` and
//! `DELETE ... WHERE version = $n`. Expiry is judged by the database's clock, so workers on
//! machines whose clocks disagree still agree on when a lease ran out.
//!
//! Writes are committed in groups: the writes that arrive while a commit is under way wait in
//! a queue, and the next commit takes them all (up to 256) in one transaction, its statements
//! pipelined on one connection, so concurrent calls share one round trip and one fsync. Each
//! statement still decides its own compare-and-set; if the group's transaction fails as a
//! whole (a deadlock with another group, say), each write is tried again alone. At most four
//! groups are in flight per store.
//!
//! The URL is libpq's (`postgres://user@host:port/db`) with one addition: `?schema=NAME`
//! puts the tables in their own schema (default `tooljig`), which tests use to stay apart.
//! The schema and its tables are created on first use by versioned migrations, run under
//! an advisory lock so that workers starting at once apply each exactly once.

use super::{Expect, Namespace, StateStore, StoreError, Versioned};
use crate::handler::BoxFuture;
use crate::postgres::{Database, Migration};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, oneshot};
use tokio_postgres::types::ToSql;

/// Most writes one group commits.
const GROUP: usize = 256;
/// Most groups in flight at once (each holds a connection while it commits).
const COMMITTERS: usize = 4;

/// The database's clock, in ms since the Unix epoch.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The migrations of the state table, in order; never edit one that shipped, add the next.
const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    sql: "CREATE TABLE {schema}.tooljig_state (
              ns TEXT NOT NULL,
              key TEXT COLLATE \"C\" NOT NULL,
              version BIGINT NOT NULL,
              value TEXT NOT NULL,
              expires_at_ms BIGINT,
              PRIMARY KEY (ns, key)
          );
          CREATE INDEX tooljig_state_expiry ON {schema}.tooljig_state (expires_at_ms)
              WHERE expires_at_ms IS NOT NULL;",
}];

/// A state store in a PostgreSQL database. Cheap to clone: clones share one pool.
#[derive(Clone)]
pub struct PostgresStore {
    db: Arc<Database>,
    sql: Arc<Statements>,
    writes: Arc<Writes>,
}

/// Writes waiting for a group commit, and the permits of the committers.
struct Writes {
    queue: Mutex<VecDeque<Write>>,
    committers: Arc<Semaphore>,
}

/// One write: which statement, its parameters, and who waits for the version it returns.
struct Write {
    statement: Statement,
    params: Params,
    done: oneshot::Sender<Result<Option<i64>, StoreError>>,
}

#[derive(Clone, Copy)]
enum Statement {
    Insert,
    Update,
    Delete,
}

/// Why a group did not commit.
enum Failed {
    /// No connection, or it broke: trying the writes one by one would not help.
    Connection(StoreError),
    /// A statement failed and took the transaction with it.
    Transaction(StoreError),
}

/// A write's parameters: namespace, key, then the statement's own.
enum Params {
    Insert(&'static str, String, String, Option<i64>),
    Update(&'static str, String, String, Option<i64>, i64),
    Delete(&'static str, String, i64),
}

impl Params {
    fn as_sql(&self) -> Vec<&(dyn ToSql + Sync)> {
        match self {
            Params::Insert(ns, key, text, ttl) => vec![ns, key, text, ttl],
            Params::Update(ns, key, text, ttl, version) => vec![ns, key, text, ttl, version],
            Params::Delete(ns, key, version) => vec![ns, key, version],
        }
    }
}

/// The statements, with the schema's table name filled in once.
struct Statements {
    get: String,
    insert: String,
    update: String,
    delete: String,
    list: String,
    sweep: String,
}

impl Statements {
    fn new(table: &str) -> Self {
        let live = format!("(expires_at_ms IS NULL OR expires_at_ms > {NOW_MS})");
        let expiry = format!("CASE WHEN $4::bigint IS NULL THEN NULL ELSE {NOW_MS} + $4 END");
        Statements {
            get: format!(
                "SELECT version, value, expires_at_ms FROM {table}
                 WHERE ns = $1 AND key = $2 AND {live}"
            ),
            // Absent: a new row, or one past its expiry replaced (its version carries on).
            insert: format!(
                "INSERT INTO {table} AS t (ns, key, version, value, expires_at_ms)
                 VALUES ($1, $2, 1, $3, {expiry})
                 ON CONFLICT (ns, key) DO UPDATE
                     SET version = t.version + 1, value = excluded.value,
                         expires_at_ms = excluded.expires_at_ms
                     WHERE t.expires_at_ms IS NOT NULL AND t.expires_at_ms <= {NOW_MS}
                 RETURNING version"
            ),
            update: format!(
                "UPDATE {table} SET version = version + 1, value = $3, expires_at_ms = {expiry}
                 WHERE ns = $1 AND key = $2 AND version = $5 AND {live}
                 RETURNING version"
            ),
            delete: format!(
                "DELETE FROM {table} WHERE ns = $1 AND key = $2 AND version = $3 AND {live}
                 RETURNING version"
            ),
            list: format!(
                "SELECT key, version, value, expires_at_ms FROM {table}
                 WHERE ns = $1 AND starts_with(key, $2) AND {live}
                 ORDER BY key LIMIT $3"
            ),
            sweep: format!(
                "DELETE FROM {table} WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= {NOW_MS}"
            ),
        }
    }
}

impl PostgresStore {
    /// A store in the database at `url` (`postgres://user@host:port/db?schema=NAME`). Connects
    /// on first use: opening never blocks, and a database that is down only fails the
    /// operations that need it.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let db = Database::open(url, "state", MIGRATIONS).map_err(StoreError)?;
        let sql = Statements::new(&db.table("tooljig_state"));
        Ok(PostgresStore {
            db: Arc::new(db),
            sql: Arc::new(sql),
            writes: Arc::new(Writes {
                queue: Mutex::new(VecDeque::new()),
                committers: Arc::new(Semaphore::new(COMMITTERS)),
            }),
        })
    }

    fn text(&self, statement: Statement) -> &str {
        match statement {
            Statement::Insert => &self.sql.insert,
            Statement::Update => &self.sql.update,
            Statement::Delete => &self.sql.delete,
        }
    }

    /// Queues a write for the next group commit and waits for its outcome: the new version
    /// (or the deleted one), `None` when its compare-and-set lost.
    async fn write(&self, statement: Statement, params: Params) -> Result<Option<i64>, StoreError> {
        let (done, outcome) = oneshot::channel();
        self.queue().push_back(Write {
            statement,
            params,
            done,
        });
        self.kick();
        outcome
            .await
            .unwrap_or_else(|_| Err(StoreError("the write was dropped unanswered".into())))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Write>> {
        self.writes.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a committer if one may run; it drains the queue group by group.
    fn kick(&self) {
        if let Ok(permit) = self.writes.committers.clone().try_acquire_owned() {
            let this = self.clone();
            tokio::spawn(async move {
                loop {
                    let group: Vec<Write> = {
                        let mut q = this.queue();
                        let n = q.len().min(GROUP);
                        q.drain(..n).collect()
                    };
                    if group.is_empty() {
                        break;
                    }
                    this.commit(group).await;
                }
                drop(permit);
                // A write queued while this committer was giving up its permit found none
                // free: start one for it.
                if !this.queue().is_empty() {
                    this.kick();
                }
            });
        }
    }

    /// Commits a group in one transaction, statements pipelined; answers each write.
    async fn commit(&self, group: Vec<Write>) {
        let outcomes = match self.try_group(&group).await {
            Ok(outcomes) => outcomes,
            // The transaction failed as a whole (not the connection): each write alone, so
            // one write's trouble, or a deadlock between two groups, is only its own.
            Err(Failed::Transaction(_)) if group.len() > 1 => {
                let mut outcomes = Vec::with_capacity(group.len());
                for w in &group {
                    outcomes.push(match self.try_group(std::slice::from_ref(w)).await {
                        Ok(mut o) => o.remove(0),
                        Err(Failed::Connection(e) | Failed::Transaction(e)) => Err(e),
                    });
                }
                outcomes
            }
            Err(Failed::Connection(e) | Failed::Transaction(e)) => {
                group.iter().map(|_| Err(e.clone())).collect()
            }
        };
        for (w, outcome) in group.into_iter().zip(outcomes) {
            let _ = w.done.send(outcome);
        }
    }

    /// The group's statements in one transaction; `Err` when the transaction failed.
    async fn try_group(
        &self,
        group: &[Write],
    ) -> Result<Vec<Result<Option<i64>, StoreError>>, Failed> {
        let connection = |e| Failed::Connection(db_err(e));
        let mut client = self
            .db
            .client()
            .await
            .map_err(|e| Failed::Connection(StoreError(e)))?;
        let mut prepared = Vec::with_capacity(3);
        for statement in [Statement::Insert, Statement::Update, Statement::Delete] {
            prepared.push(
                client
                    .prepare_cached(self.text(statement))
                    .await
                    .map_err(connection)?,
            );
        }
        let tx = client.transaction().await.map_err(connection)?;
        let params: Vec<_> = group.iter().map(|w| w.params.as_sql()).collect();
        let rows = futures::future::join_all(
            group
                .iter()
                .zip(&params)
                .map(|(w, p)| tx.query_opt(&prepared[w.statement as usize], p)),
        )
        .await;
        let mut outcomes = Vec::with_capacity(rows.len());
        for row in rows {
            let row = row.map_err(|e| Failed::Transaction(db_err(e)))?;
            outcomes.push(Ok(row.map(|r| r.get::<_, i64>(0))));
        }
        // A commit that fails leaves each write's fate unknown to this process: the caller
        // hears of the failure and the state is as one of the two (a claim that went in is
        // taken over when its lease lapses).
        tx.commit()
            .await
            .map_err(|e| Failed::Connection(db_err(e)))?;
        Ok(outcomes)
    }

    /// The schema the store's tables live in.
    pub fn schema(&self) -> &str {
        self.db.schema()
    }

    /// Removes records past their expiry (reads already hide them).
    pub async fn sweep(&self) -> Result<u64, StoreError> {
        let client = self.db.client().await.map_err(StoreError)?;
        client
            .execute(&self.sql.sweep, &[])
            .await
            .map_err(|e| StoreError(e.to_string()))
    }
}

fn db_err(e: tokio_postgres::Error) -> StoreError {
    StoreError(crate::postgres::describe(&e))
}

/// PostgreSQL integers are signed; versions, times and limits fit comfortably.
fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn decode(
    ns: Namespace,
    key: &str,
    version: i64,
    text: &str,
    expires: Option<i64>,
) -> Result<Versioned, StoreError> {
    let value = serde_json::from_str(text)
        .map_err(|e| StoreError(format!("record {}/{key} is not JSON: {e}", ns.as_str())))?;
    Ok(Versioned {
        value,
        version: uint(version),
        expires_at_ms: expires.map(uint),
    })
}

impl StateStore for PostgresStore {
    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        let (this, key) = (self.clone(), key.to_string());
        Box::pin(async move {
            let client = this.db.client().await.map_err(StoreError)?;
            let get = client.prepare_cached(&this.sql.get).await.map_err(db_err)?;
            let row = client
                .query_opt(&get, &[&ns.as_str(), &key])
                .await
                .map_err(db_err)?;
            row.map(|r| decode(ns, &key, r.get(0), r.get(1), r.get(2)))
                .transpose()
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
        let (this, key) = (self.clone(), key.to_string());
        Box::pin(async move {
            let text = serde_json::to_string(&value).map_err(|e| StoreError(e.to_string()))?;
            let ttl = ttl_ms.map(int);
            let version = match expect {
                Expect::Absent => {
                    this.write(
                        Statement::Insert,
                        Params::Insert(ns.as_str(), key, text, ttl),
                    )
                    .await?
                }
                Expect::Version(v) => {
                    let params = Params::Update(ns.as_str(), key, text, ttl, int(v));
                    this.write(Statement::Update, params).await?
                }
            };
            Ok(version.map(uint))
        })
    }

    fn delete(
        &self,
        ns: Namespace,
        key: &str,
        version: u64,
    ) -> BoxFuture<Result<bool, StoreError>> {
        let (this, key) = (self.clone(), key.to_string());
        Box::pin(async move {
            let deleted = this
                .write(
                    Statement::Delete,
                    Params::Delete(ns.as_str(), key, int(version)),
                )
                .await?;
            Ok(deleted.is_some())
        })
    }

    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>> {
        let (this, prefix) = (self.clone(), prefix.to_string());
        Box::pin(async move {
            let client = this.db.client().await.map_err(StoreError)?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let list = client
                .prepare_cached(&this.sql.list)
                .await
                .map_err(db_err)?;
            let rows = client
                .query(&list, &[&ns.as_str(), &prefix, &limit])
                .await
                .map_err(db_err)?;
            rows.iter()
                .map(|r| {
                    let key: String = r.get(0);
                    let v = decode(ns, &key, r.get(1), r.get(2), r.get(3))?;
                    Ok((key, v))
                })
                .collect()
        })
    }
}
