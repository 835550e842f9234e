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
//! groups are in flight per store. Reads are grouped the same way: the reads that arrive
//! while one is under way go together in one `SELECT` over their keys (`unnest`), so a
//! store needs few connections however many calls run at once.
//!
//! The URL is libpq's (`postgres://user@host:port/db`) with one addition: `?schema=NAME`
//! puts the tables in their own schema (default `tooljig`), which tests use to stay apart.
//! The schema and its tables are created on first use by versioned migrations, run under
//! an advisory lock so that workers starting at once apply each exactly once.

use super::{Expect, Namespace, StateStore, StoreError, Versioned};
use crate::handler::BoxFuture;
use crate::postgres::{Database, Migration};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, oneshot};
use tokio_postgres::types::ToSql;

/// Most writes one group commits, and most reads one group asks for.
const GROUP: usize = 256;
/// Most write groups in flight at once (each holds a connection while it commits).
const COMMITTERS: usize = 4;
/// Most read groups in flight at once.
const READERS: usize = 2;

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
    writes: Arc<Groups<Write>>,
    reads: Arc<Groups<Read>>,
    bus: Arc<crate::durable::wakeup::PostgresBus>,
}

/// Operations waiting to go to the database in a group, and the permits of the tasks that
/// take them there.
struct Groups<T> {
    queue: Mutex<VecDeque<T>>,
    permits: Arc<Semaphore>,
}

impl<T: Send + 'static> Groups<T> {
    fn new(permits: usize) -> Arc<Self> {
        Arc::new(Groups {
            queue: Mutex::new(VecDeque::new()),
            permits: Arc::new(Semaphore::new(permits)),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<T>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item`, and starts a task if one may run: it drains the queue group by
    /// group, handing each to `send`.
    fn push<F>(self: &Arc<Self>, item: T, send: F)
    where
        F: Fn(Vec<T>) -> BoxFuture<()> + Send + Sync + 'static,
    {
        self.queue().push_back(item);
        self.kick(Arc::new(send));
    }

    fn kick(self: &Arc<Self>, send: Arc<dyn Fn(Vec<T>) -> BoxFuture<()> + Send + Sync>) {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return;
        };
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let group: Vec<T> = {
                    let mut q = this.queue();
                    let n = q.len().min(GROUP);
                    q.drain(..n).collect()
                };
                if group.is_empty() {
                    break;
                }
                send(group).await;
            }
            drop(permit);
            // An item queued while this task was giving up its permit found none free:
            // start one for it.
            if !this.queue().is_empty() {
                this.kick(send);
            }
        });
    }
}

/// One read: the record's namespace and key, and who waits for it.
struct Read {
    ns: Namespace,
    key: String,
    done: oneshot::Sender<Result<Option<Versioned>, StoreError>>,
}

/// One write: the record, the change, and who waits for the version it comes to.
struct Write {
    ns: &'static str,
    key: String,
    change: Change,
    done: oneshot::Sender<Result<Option<i64>, StoreError>>,
}

/// What a write does to its record, with the compare-and-set it makes.
enum Change {
    /// Absent (or expired): written anew.
    Insert { value: String, ttl: Option<i64> },
    /// At `version`: replaced.
    Update {
        value: String,
        ttl: Option<i64>,
        version: i64,
    },
    /// At `version`: removed.
    Delete { version: i64 },
}

impl Change {
    /// Its statement's place in [`Statements::writes`].
    fn kind(&self) -> usize {
        match self {
            Change::Insert { .. } => 0,
            Change::Update { .. } => 1,
            Change::Delete { .. } => 2,
        }
    }
}

/// Why a group did not commit.
enum Failed {
    /// No connection, or it broke: trying the writes one by one would not help.
    Connection(StoreError),
    /// A statement failed and took the transaction with it.
    Transaction(StoreError),
}

/// The writes of one kind that one statement makes, as the arrays it takes.
#[derive(Default)]
struct Columns<'a> {
    at: Vec<usize>,
    ns: Vec<&'a str>,
    key: Vec<&'a str>,
    value: Vec<&'a str>,
    ttl: Vec<Option<i64>>,
    version: Vec<i64>,
}

impl<'a> Columns<'a> {
    fn push(&mut self, at: usize, w: &'a Write) {
        self.at.push(at);
        self.ns.push(w.ns);
        self.key.push(&w.key);
        match &w.change {
            Change::Insert { value, ttl } => {
                self.value.push(value);
                self.ttl.push(*ttl);
            }
            Change::Update {
                value,
                ttl,
                version,
            } => {
                self.value.push(value);
                self.ttl.push(*ttl);
                self.version.push(*version);
            }
            Change::Delete { version } => self.version.push(*version),
        }
    }

    fn params(&self, kind: usize) -> Vec<&(dyn ToSql + Sync)> {
        match kind {
            0 => vec![&self.ns, &self.key, &self.value, &self.ttl],
            1 => vec![&self.ns, &self.key, &self.value, &self.ttl, &self.version],
            _ => vec![&self.ns, &self.key, &self.version],
        }
    }
}

/// The statements, with the schema's table name filled in once.
struct Statements {
    get: String,
    /// Insert, update, delete: each takes its writes as arrays (one row each, keys distinct)
    /// and returns the rows whose compare-and-set held.
    writes: [String; 3],
    list: String,
    sweep: String,
}

impl Statements {
    fn new(table: &str) -> Self {
        let live = format!("(t.expires_at_ms IS NULL OR t.expires_at_ms > {NOW_MS})");
        let expiry = format!("CASE WHEN w.ttl IS NULL THEN NULL ELSE {NOW_MS} + w.ttl END");
        Statements {
            // The keys of a group of reads, each answered by its position in the group.
            get: format!(
                "SELECT k.at, t.version, t.value, t.expires_at_ms
                 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(ns, key, at)
                 JOIN {table} t ON t.ns = k.ns AND t.key = k.key COLLATE \"C\"
                 WHERE {live}"
            ),
            writes: [
                // Absent: a new row, or one past its expiry replaced (its version carries on).
                format!(
                    "INSERT INTO {table} AS t (ns, key, version, value, expires_at_ms)
                     SELECT w.ns, w.key, 1, w.value, {expiry}
                     FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
                         AS w(ns, key, value, ttl)
                     ON CONFLICT (ns, key) DO UPDATE
                         SET version = t.version + 1, value = excluded.value,
                             expires_at_ms = excluded.expires_at_ms
                         WHERE t.expires_at_ms IS NOT NULL AND t.expires_at_ms <= {NOW_MS}
                     RETURNING t.ns, t.key, t.version"
                ),
                format!(
                    "UPDATE {table} AS t
                     SET version = t.version + 1, value = w.value, expires_at_ms = {expiry}
                     FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
                         AS w(ns, key, value, ttl, version)
                     WHERE t.ns = w.ns AND t.key = w.key COLLATE \"C\"
                       AND t.version = w.version AND {live}
                     RETURNING t.ns, t.key, t.version"
                ),
                format!(
                    "DELETE FROM {table} AS t
                     USING unnest($1::text[], $2::text[], $3::bigint[]) AS w(ns, key, version)
                     WHERE t.ns = w.ns AND t.key = w.key COLLATE \"C\"
                       AND t.version = w.version AND {live}
                     RETURNING t.ns, t.key, t.version"
                ),
            ],
            list: format!(
                "SELECT key, version, value, expires_at_ms FROM {table} AS t
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
        let db = Arc::new(Database::open(url, "state", MIGRATIONS).map_err(StoreError)?);
        let sql = Statements::new(&db.table("tooljig_state"));
        Ok(PostgresStore {
            bus: Arc::new(crate::durable::wakeup::PostgresBus::new(db.clone())),
            db,
            sql: Arc::new(sql),
            writes: Groups::new(COMMITTERS),
            reads: Groups::new(READERS),
        })
    }

    /// Queues a write for the next group commit and waits for its outcome: the new version
    /// (or the deleted one), `None` when its compare-and-set lost.
    async fn write(
        &self,
        ns: Namespace,
        key: String,
        change: Change,
    ) -> Result<Option<i64>, StoreError> {
        let (done, outcome) = oneshot::channel();
        let write = Write {
            ns: ns.as_str(),
            key,
            change,
            done,
        };
        let this = self.clone();
        self.writes.push(write, move |group| {
            let this = this.clone();
            Box::pin(async move { this.commit(group).await })
        });
        outcome
            .await
            .unwrap_or_else(|_| Err(StoreError("the write was dropped unanswered".into())))
    }

    /// Queues a read for the next group and waits for its record.
    async fn read(&self, ns: Namespace, key: String) -> Result<Option<Versioned>, StoreError> {
        let (done, outcome) = oneshot::channel();
        let this = self.clone();
        self.reads.push(Read { ns, key, done }, move |group| {
            let this = this.clone();
            Box::pin(async move { this.read_group(group).await })
        });
        outcome
            .await
            .unwrap_or_else(|_| Err(StoreError("the read was dropped unanswered".into())))
    }

    /// Reads a group's records in one statement and answers each read.
    async fn read_group(&self, group: Vec<Read>) {
        let mut answers = self.try_read_group(&group).await;
        for (i, read) in group.into_iter().enumerate() {
            let answer = match &mut answers {
                Ok(found) => found[i]
                    .take()
                    .map(|(version, text, expires)| {
                        decode(read.ns, &read.key, version, &text, expires)
                    })
                    .transpose(),
                Err(e) => Err(e.clone()),
            };
            let _ = read.done.send(answer);
        }
    }

    async fn try_read_group(
        &self,
        group: &[Read],
    ) -> Result<Vec<Option<(i64, String, Option<i64>)>>, StoreError> {
        let client = self.db.client().await.map_err(StoreError)?;
        let get = client.prepare_cached(&self.sql.get).await.map_err(db_err)?;
        let namespaces: Vec<&str> = group.iter().map(|r| r.ns.as_str()).collect();
        let keys: Vec<&str> = group.iter().map(|r| r.key.as_str()).collect();
        let rows = client
            .query(&get, &[&namespaces, &keys])
            .await
            .map_err(db_err)?;
        let mut found = vec![None; group.len()];
        for row in rows {
            let at = usize::try_from(row.get::<_, i64>(0) - 1).unwrap_or(usize::MAX);
            if let Some(slot) = found.get_mut(at) {
                *slot = Some((row.get(1), row.get(2), row.get(3)));
            }
        }
        Ok(found)
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

    /// The group's writes in one transaction; `Err` when the transaction failed. Writes go
    /// in rounds: a write joins the first round that has no other write of its record, and
    /// a round is one statement of each kind over arrays, so every row's compare-and-set is
    /// decided alone, and a group costs a few statements however many writes it holds.
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
        for text in &self.sql.writes {
            prepared.push(client.prepare_cached(text).await.map_err(connection)?);
        }
        let mut rounds: Vec<[Columns; 3]> = Vec::new();
        let mut seen: HashMap<(&str, &str), usize> = HashMap::with_capacity(group.len());
        for (at, w) in group.iter().enumerate() {
            let round = seen.entry((w.ns, &w.key)).or_insert(0);
            if rounds.len() <= *round {
                rounds.push(Default::default());
            }
            rounds[*round][w.change.kind()].push(at, w);
            *round += 1;
        }
        let tx = client.transaction().await.map_err(connection)?;
        let mut outcomes = vec![None; group.len()];
        for round in &rounds {
            let params: Vec<_> = (0..3).map(|kind| round[kind].params(kind)).collect();
            let (tx, prepared, params) = (&tx, &prepared, &params);
            let statements = (0..3)
                .filter(|&kind| !round[kind].at.is_empty())
                .map(|kind| async move { (kind, tx.query(&prepared[kind], &params[kind]).await) });
            // Pipelined on the one connection: a round is one round trip.
            for (kind, rows) in futures::future::join_all(statements).await {
                let rows = rows.map_err(|e| Failed::Transaction(db_err(e)))?;
                let held: HashMap<(String, String), i64> = rows
                    .iter()
                    .map(|r| ((r.get(0), r.get(1)), r.get(2)))
                    .collect();
                let columns = &round[kind];
                for (i, &at) in columns.at.iter().enumerate() {
                    let key = (columns.ns[i].to_string(), columns.key[i].to_string());
                    outcomes[at] = Some(held.get(&key).copied());
                }
            }
        }
        // A commit that fails leaves each write's fate unknown to this process: the caller
        // hears of the failure and the state is as one of the two (a claim that went in is
        // taken over when its lease lapses).
        tx.commit()
            .await
            .map_err(|e| Failed::Connection(db_err(e)))?;
        Ok(outcomes.into_iter().map(|o| Ok(o.flatten())).collect())
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
    fn wake_bus(&self) -> Option<Arc<dyn crate::durable::wakeup::WakeBus>> {
        Some(self.bus.clone())
    }

    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>> {
        let (this, key) = (self.clone(), key.to_string());
        Box::pin(async move { this.read(ns, key).await })
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
        value: String,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        let (this, key) = (self.clone(), key.to_string());
        Box::pin(async move {
            let ttl = ttl_ms.map(int);
            let change = match expect {
                Expect::Absent => Change::Insert { value, ttl },
                Expect::Version(v) => Change::Update {
                    value,
                    ttl,
                    version: int(v),
                },
            };
            Ok(this.write(ns, key, change).await?.map(uint))
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
            let change = Change::Delete {
                version: int(version),
            };
            let deleted = this.write(ns, key, change).await?;
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
