//! The audit log in PostgreSQL: one chain, however many workers on however many machines
//! write it.
//!
//! The chain is serialised by the database: a one-row head table holds the last sequence
//! number and hash, and every commit takes that row `FOR UPDATE`, links its records after
//! it, inserts them and moves the head, in one transaction. Writers queue behind the row
//! lock for the length of one insert, so the log is one chain in commit order and `verify`
//! walks it by `seq` and names the first broken link, whoever wrote it.
//!
//! Each process hands its records to a thread of its own, which commits them in groups (a
//! flush, a full group, or 20 ms after the first record), so a batch's records cost one
//! transaction. A commit that fails (the server is down, the connection dropped inside the
//! transaction) leaves nothing behind: the records stay queued and go in, in order, once the
//! server answers again, and a flush reports the failure meanwhile.
//!
//! With a [`SealKey`](crate::SealKey) the chain is keyed (HMAC-SHA256), so someone who can
//! write the tables can cut records off the end, but not alter, insert or reorder them
//! undetected; an anchor file ([`AuditOptions::anchor`]) on each writer's machine catches
//! the cut, as for the file sinks.

use crate::guard::audit::anchor::AnchorFile;
use crate::guard::audit::chain::{self, BrokenLink, Chain, ChainReport};
use crate::guard::audit::options::AuditOptions;
use crate::guard::audit::query::{AuditQuery, Bound};
use crate::guard::audit::record::AuditRecord;
use crate::guard::audit::{AuditEntry, AuditError, AuditSink};
use crate::handler::BoxFuture;
use crate::postgres::{Database, Migration, describe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    sql: "CREATE TABLE {schema}.tooljig_audit (
              seq BIGINT PRIMARY KEY,
              time_ms BIGINT NOT NULL,
              principal TEXT,
              tenant TEXT,
              tool TEXT NOT NULL,
              call_id TEXT NOT NULL,
              outcome TEXT NOT NULL,
              code TEXT,
              hash TEXT NOT NULL,
              record TEXT NOT NULL
          );
          CREATE INDEX tooljig_audit_principal ON {schema}.tooljig_audit (principal, time_ms);
          CREATE INDEX tooljig_audit_tool ON {schema}.tooljig_audit (tool, time_ms);
          CREATE TABLE {schema}.tooljig_audit_head (
              id INTEGER PRIMARY KEY CHECK (id = 1),
              seq BIGINT NOT NULL,
              hash TEXT NOT NULL
          );
          INSERT INTO {schema}.tooljig_audit_head VALUES
              (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');",
}];

const COLUMNS: &str = "seq, time_ms, principal, tenant, tool, call_id, outcome, code, hash, record";

/// Most records committed in one transaction.
const MAX_BATCH: usize = 4096;
/// Longest records wait for a commit when nobody asks for a flush.
const LINGER: Duration = Duration::from_millis(20);
/// Pause before a failed commit is tried again.
const RETRY: Duration = Duration::from_millis(250);

enum Msg {
    Entries(Vec<AuditEntry>),
    Flush(oneshot::Sender<Result<(), AuditError>>),
}

/// Audit records in a PostgreSQL database, one chain for every writer.
pub struct PostgresAudit {
    db: Arc<Database>,
    options: AuditOptions,
    tx: Option<mpsc::UnboundedSender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PostgresAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresAudit")
            .field("schema", &self.db.schema())
            .finish()
    }
}

fn storage(e: tokio_postgres::Error) -> AuditError {
    AuditError::Storage(describe(&e))
}

impl PostgresAudit {
    /// The log in the database at `url` (`postgres://user@host:port/db?schema=NAME`), with
    /// `options`' seal key and anchor. Connects on first use: opening never blocks, and
    /// a database that is down only delays the records (a flush says so).
    pub fn open(url: &str, options: impl Into<AuditOptions>) -> Result<Self, AuditError> {
        let options = options.into();
        let db = Arc::new(Database::open(url, "audit", MIGRATIONS).map_err(AuditError::Storage)?);
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = Committer {
            db: db.clone(),
            options: options.clone(),
            anchor: options.anchor_file(),
            checked: false,
            in_doubt: None,
        };
        let thread = std::thread::Builder::new()
            .name("tooljig-audit-postgres".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(writer.run(rx)),
                    Err(e) => tracing::error!(target: "tooljig::audit", error = %e, "no runtime for the audit writer"),
                }
            })
            .map_err(|e| AuditError::Storage(format!("cannot start the audit writer: {e}")))?;
        Ok(PostgresAudit {
            db,
            options,
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// The schema the log's tables live in.
    pub fn schema(&self) -> &str {
        self.db.schema()
    }
}

impl Drop for PostgresAudit {
    /// Closes the queue and waits for the writer to commit what it still holds (or to give
    /// up on a server that stays away).
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer thread's state.
struct Committer {
    db: Arc<Database>,
    options: AuditOptions,
    anchor: Option<AnchorFile>,
    /// Whether the stored log was found sealed as this writer seals (checked once).
    checked: bool,
    /// The last record (seq, hash) of a commit whose answer was lost: it may have gone in.
    in_doubt: Option<(u64, String)>,
}

impl Committer {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        let mut pending: Vec<AuditEntry> = Vec::new();
        let mut waiters = Vec::new();
        let mut since = Instant::now();
        let mut closed = false;
        loop {
            // Wait for work; while records wait, only until their commit is due.
            if !closed {
                let next = if pending.is_empty() {
                    rx.recv().await
                } else {
                    let left = (since + LINGER).saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, rx.recv()).await {
                        Ok(m) => m,
                        // Due: nothing new arrived.
                        Err(_) => Some(Msg::Entries(Vec::new())),
                    }
                };
                match next {
                    Some(m) => take(m, &mut pending, &mut waiters, &mut since),
                    None => closed = true,
                }
                while pending.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(m) => take(m, &mut pending, &mut waiters, &mut since),
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            closed = true;
                            break;
                        }
                    }
                }
            }
            let due = closed
                || !waiters.is_empty()
                || pending.len() >= MAX_BATCH
                || since.elapsed() >= LINGER;
            if !due {
                continue;
            }
            let outcome = if pending.is_empty() {
                Ok(())
            } else {
                self.commit(&pending).await
            };
            match &outcome {
                Ok(()) => pending.clear(),
                Err(e) => {
                    tracing::error!(target: "tooljig::audit", error = %e, records = pending.len(), "audit commit failed; will retry");
                }
            }
            for w in waiters.drain(..) {
                let _ = w.send(outcome.clone());
            }
            if outcome.is_err() {
                if closed {
                    // The sink is gone and the server does not answer: nothing can wait.
                    tracing::error!(target: "tooljig::audit", records = pending.len(), "audit records lost at close");
                    return;
                }
                tokio::time::sleep(RETRY).await;
                since = Instant::now() - LINGER;
            }
            if closed && pending.is_empty() {
                return;
            }
        }
    }

    /// Links `entries` after the head and stores them, all in one transaction.
    async fn commit(&mut self, entries: &[AuditEntry]) -> Result<(), AuditError> {
        let mut client = self.db.client().await.map_err(AuditError::Storage)?;
        let (log, head) = (
            self.db.table("tooljig_audit"),
            self.db.table("tooljig_audit_head"),
        );
        if !self.checked {
            // The stored log must be sealed as this writer seals, or what it appends would
            // not verify: the same check the file sinks make when they open.
            let last = client
                .query_opt(
                    &format!("SELECT seq, record, hash FROM {log} ORDER BY seq DESC LIMIT 1"),
                    &[],
                )
                .await
                .map_err(storage)?
                .map(|r| (uint(r.get(0)), r.get::<_, String>(1), r.get::<_, String>(2)));
            if let Some(a) = &self.anchor {
                a.admit(last.as_ref().map(|(seq, _, hash)| (*seq, hash.as_str())))?;
            }
            Chain::resume(last, self.options.key.clone()).map_err(|why| {
                AuditError::Storage(format!("cannot continue the audit log: {why}"))
            })?;
            self.checked = true;
        }
        let tx = client.transaction().await.map_err(storage)?;
        let row = tx
            .query_one(
                &format!("SELECT seq, hash FROM {head} WHERE id = 1 FOR UPDATE"),
                &[],
            )
            .await
            .map_err(storage)?;
        // A commit whose answer was lost (the connection cut after COMMIT was sent) may have
        // gone in: its last record, found in place, says so, and the group is not written
        // twice. Records link deterministically, so that record can only be this group's.
        if let Some((seq, hash)) = self.in_doubt.take() {
            let stored = tx
                .query_opt(
                    &format!("SELECT hash FROM {log} WHERE seq = $1"),
                    &[&int(seq)],
                )
                .await
                .map_err(storage)?;
            if stored.is_some_and(|r| r.get::<_, String>(0) == hash) {
                tx.rollback().await.map_err(storage)?;
                self.anchor_at(seq, &hash);
                return Ok(());
            }
        }
        let mut chain = Chain::sealed_after(
            Some((uint(row.get(0)), row.get::<_, String>(1))).filter(|(seq, _)| *seq > 0),
            self.options.key.clone(),
        );
        let n = entries.len();
        let (
            mut seq,
            mut time,
            mut principal,
            mut tenant,
            mut tool,
            mut call,
            mut outcome,
            mut code,
            mut hash,
            mut body,
        ) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for e in entries {
            let link = chain.next(e.content());
            let r = e.indexed();
            seq.push(int(link.seq));
            time.push(int(r.time_ms));
            principal.push(r.principal().map(str::to_string));
            tenant.push(r.tenant().map(str::to_string));
            tool.push(r.tool().to_string());
            call.push(r.call_id().to_string());
            outcome.push(r.outcome.as_str().to_string());
            code.push(r.code.map(|c| c.as_str().to_string()));
            hash.push(link.hash);
            body.push(link.body);
        }
        // One statement for the whole group: arrays in, rows out.
        tx.execute(
            &format!(
                "INSERT INTO {log} ({COLUMNS})
                 SELECT * FROM UNNEST($1::bigint[], $2::bigint[], $3::text[], $4::text[],
                                      $5::text[], $6::text[], $7::text[], $8::text[],
                                      $9::text[], $10::text[])"
            ),
            &[
                &seq, &time, &principal, &tenant, &tool, &call, &outcome, &code, &hash, &body,
            ],
        )
        .await
        .map_err(storage)?;
        let last_seq = chain.next_seq - 1;
        tx.execute(
            &format!("UPDATE {head} SET seq = $1, hash = $2 WHERE id = 1"),
            &[&int(last_seq), &chain.last_hash],
        )
        .await
        .map_err(storage)?;
        self.in_doubt = Some((last_seq, chain.last_hash.clone()));
        tx.commit().await.map_err(storage)?;
        self.in_doubt = None;
        self.anchor_at(last_seq, &chain.last_hash);
        Ok(())
    }

    fn anchor_at(&self, seq: u64, hash: &str) {
        if let Some(anchor) = &self.anchor {
            // Durable either way; a lagging anchor only holds the log to an earlier head.
            if let Err(e) = anchor.write(seq, hash) {
                tracing::error!(target: "tooljig::audit", error = %e, "the audit anchor was not replaced");
            }
        }
    }
}

fn take(
    m: Msg,
    pending: &mut Vec<AuditEntry>,
    waiters: &mut Vec<oneshot::Sender<Result<(), AuditError>>>,
    since: &mut Instant,
) {
    match m {
        Msg::Entries(e) if e.is_empty() => {}
        Msg::Entries(mut e) => {
            if pending.is_empty() {
                *since = Instant::now();
            }
            pending.append(&mut e);
        }
        Msg::Flush(w) => waiters.push(w),
    }
}

/// PostgreSQL integers are signed: clamp so `u64::MAX` means "no bound", not -1.
fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A stored row: the record, its body, and whether its indexed columns agree with it (so
/// a query cannot be fooled by editing a column alone).
fn read_row(row: &tokio_postgres::Row) -> Result<(AuditRecord, String, bool), AuditError> {
    let seq = uint(row.get(0));
    let body: String = row.get(9);
    let mut record: AuditRecord = serde_json::from_str(&body).map_err(|e| AuditError::Corrupt {
        seq,
        message: format!("the record is not valid JSON: {e}"),
    })?;
    record.hash = row.get(8);
    let agree = record.seq == seq
        && uint(row.get(1)) == record.time_ms
        && row.get::<_, Option<String>>(2) == record.principal
        && row.get::<_, Option<String>>(3) == record.tenant
        && row.get::<_, String>(4) == record.tool
        && row.get::<_, String>(5) == record.call_id
        && row.get::<_, String>(6) == record.outcome.as_str()
        && row.get::<_, Option<String>>(7).as_deref() == record.code.map(|c| c.as_str());
    Ok((record, body, agree))
}

impl AuditSink for PostgresAudit {
    fn record(&self, entry: AuditEntry) {
        self.record_all(vec![entry]);
    }

    fn record_all(&self, entries: Vec<AuditEntry>) {
        let count = entries.len();
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Entries(entries)).is_ok());
        if !sent {
            tracing::error!(target: "tooljig::audit", count, "the audit writer has stopped; records were lost");
        }
    }

    fn flush(&self) -> BoxFuture<Result<(), AuditError>> {
        let (done, wait) = oneshot::channel();
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Flush(done)).is_ok());
        Box::pin(async move {
            if !sent {
                return Err(AuditError::Closed);
            }
            wait.await.unwrap_or(Err(AuditError::Closed))
        })
    }

    fn query(&self, query: AuditQuery) -> BoxFuture<Result<Vec<AuditRecord>, AuditError>> {
        let db = self.db.clone();
        Box::pin(async move {
            let client = db.client().await.map_err(AuditError::Storage)?;
            let mut sql = format!(
                "SELECT {COLUMNS} FROM {} WHERE true",
                db.table("tooljig_audit")
            );
            let mut args: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> = Vec::new();
            for (col, op, value) in query.conditions() {
                args.push(match value {
                    Bound::Text(t) => Box::new(t),
                    Bound::Int(n) => Box::new(n),
                });
                sql.push_str(&format!(" AND {col} {op} ${}", args.len()));
            }
            sql.push_str(&query.order_and_limit());
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a.as_ref() as _).collect();
            let rows = client.query(&sql, &params).await.map_err(storage)?;
            let mut out = rows
                .iter()
                .map(|r| read_row(r).map(|(record, _, _)| record))
                .collect::<Result<Vec<_>, _>>()?;
            if query.limit.is_some() {
                out.reverse();
            }
            Ok(out)
        })
    }

    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>> {
        let (db, options) = (self.db.clone(), self.options.clone());
        Box::pin(async move {
            let mut v = match options.verifier() {
                Ok(v) => v,
                Err(report) => return Ok(report),
            };
            let client = db.client().await.map_err(AuditError::Storage)?;
            // Read in pages by seq, so a long log is never held in memory at once.
            let sql = format!(
                "SELECT {COLUMNS} FROM {} WHERE seq > $1 ORDER BY seq ASC LIMIT 2000",
                db.table("tooljig_audit")
            );
            let mut after = 0i64;
            let mut last: Option<(i64, String)> = None;
            loop {
                let rows = client.query(&sql, &[&after]).await.map_err(storage)?;
                if rows.is_empty() {
                    break;
                }
                for row in &rows {
                    after = row.get(0);
                    let (record, body, agree) = match read_row(row) {
                        Ok(r) => r,
                        Err(AuditError::Corrupt { seq, message }) => {
                            return Ok(v.report(Some(BrokenLink {
                                seq,
                                reason: message,
                            })));
                        }
                        Err(e) => return Err(e),
                    };
                    if let Err(b) = v.check_stored(&record, &body) {
                        return Ok(v.report(Some(b)));
                    }
                    last = Some((row.get(0), record.hash.clone()));
                    if !agree {
                        return Ok(v.report(Some(BrokenLink {
                            seq: record.seq,
                            reason: "the row's indexed columns do not match its record: a column was edited".into(),
                        })));
                    }
                }
            }
            // The head moves in the same transaction as the records: a log that ends
            // elsewhere lost records (or gained some) outside tooljig's writers.
            let head = client
                .query_one(
                    &format!(
                        "SELECT seq, hash FROM {} WHERE id = 1",
                        db.table("tooljig_audit_head")
                    ),
                    &[],
                )
                .await
                .map_err(storage)?;
            let (head_seq, head_hash): (i64, String) = (head.get(0), head.get(1));
            let (last_seq, last_hash) = last.unwrap_or((0, chain::GENESIS.to_string()));
            if (head_seq, &head_hash) != (last_seq, &last_hash) {
                return Ok(v.report(Some(BrokenLink {
                    seq: uint(last_seq.min(head_seq) + 1),
                    reason: format!(
                        "the log ends at record {last_seq} but its head says {head_seq}: records were cut off the end or the head was edited"
                    ),
                })));
            }
            Ok(v.report(None))
        })
    }
}
