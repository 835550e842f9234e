//! The PostgreSQL state store: one table every worker on every machine shares.
//!
//! Each operation is one statement, so PostgreSQL's own row locking makes every
//! compare-and-set atomic against writers anywhere: `INSERT ... ON CONFLICT DO UPDATE ...
//! WHERE` (the row was absent or expired), `UPDATE ... WHERE version = $n` and
//! `DELETE ... WHERE version = $n`. Expiry is judged by the database's clock, so workers on
//! machines whose clocks disagree still agree on when a lease ran out.
//!
//! The URL is libpq's (`postgres://user@host:port/db`) with one addition: `?schema=NAME`
//! puts the tables in their own schema (default `tooljig`), which tests use to stay apart.
//! The schema and its tables are created on first use by versioned migrations, run under
//! an advisory lock so that workers starting at once apply each exactly once.

use super::{Expect, Namespace, StateStore, StoreError, Versioned};
use crate::handler::BoxFuture;
use crate::postgres::{Database, Migration};
use serde_json::Value;
use std::sync::Arc;

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
                "DELETE FROM {table} WHERE ns = $1 AND key = $2 AND version = $3 AND {live}"
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
        })
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
            let row = client
                .query_opt(&this.sql.get, &[&ns.as_str(), &key])
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
            let client = this.db.client().await.map_err(StoreError)?;
            let row = match expect {
                Expect::Absent => client
                    .query_opt(&this.sql.insert, &[&ns.as_str(), &key, &text, &ttl])
                    .await
                    .map_err(db_err)?,
                Expect::Version(v) => client
                    .query_opt(
                        &this.sql.update,
                        &[&ns.as_str(), &key, &text, &ttl, &int(v)],
                    )
                    .await
                    .map_err(db_err)?,
            };
            Ok(row.map(|r| uint(r.get(0))))
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
            let client = this.db.client().await.map_err(StoreError)?;
            let n = client
                .execute(&this.sql.delete, &[&ns.as_str(), &key, &int(version)])
                .await
                .map_err(db_err)?;
            Ok(n == 1)
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
            let rows = client
                .query(&this.sql.list, &[&ns.as_str(), &prefix, &limit])
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
