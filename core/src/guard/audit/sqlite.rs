//! The default audit sink: one SQLite file in WAL mode, written in batches by its own thread.
//!
//! Durability: `Engine::run` waits for the batch's records to be committed. With the default
//! [`Durability::Process`] (`synchronous = NORMAL` in WAL mode) a committed record survives
//! any crash or kill of the process; an operating-system crash or power loss may lose the
//! last commits. [`Durability::Os`] (`synchronous = FULL`) survives those too, at the cost
//! of an fsync per batch.

use crate::guard::audit::chain::{ChainReport, Link};
use crate::guard::audit::options::{AuditOptions, Durability};
use crate::guard::audit::query::{AuditQuery, Bound};
use crate::guard::audit::record::AuditRecord;
use crate::guard::audit::writer::{Backend, Writer};
use crate::guard::audit::{AuditEntry, AuditError, AuditSink};
use crate::handler::BoxFuture;
use rusqlite::{Connection, OpenFlags, params_from_iter};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_log (
    seq       INTEGER PRIMARY KEY,
    time_ms   INTEGER NOT NULL,
    principal TEXT,
    tenant    TEXT,
    tool      TEXT NOT NULL,
    call_id   TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    code      TEXT,
    hash      TEXT NOT NULL,
    record    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_log_principal ON audit_log (principal, time_ms);
CREATE INDEX IF NOT EXISTS audit_log_tool ON audit_log (tool, time_ms);
";

const COLUMNS: &str = "seq, time_ms, principal, tenant, tool, call_id, outcome, code, hash, record";

fn storage(e: rusqlite::Error) -> AuditError {
    AuditError::Storage(e.to_string())
}

fn connect(path: &Path, flags: OpenFlags) -> Result<Connection, AuditError> {
    let conn = Connection::open_with_flags(path, flags).map_err(storage)?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(storage)?;
    Ok(conn)
}

/// Rows one statement inserts, when there are that many: a multi-row insert runs what a
/// statement does besides inserting (opening the table's and the indexes' cursors, among
/// other steps) once for the group instead of once a row.
const GROUP: usize = 32;

/// Parameters of one row: the columns of [`COLUMNS`].
const PER_ROW: usize = 10;

/// The text of an insert of `rows` rows.
fn insert_sql(rows: usize) -> String {
    let row = format!("({})", ["?"; PER_ROW].join(", "));
    let values = vec![row; rows].join(", ");
    format!("INSERT INTO audit_log ({COLUMNS}) VALUES {values}")
}

struct SqliteBackend {
    conn: Connection,
    in_transaction: bool,
    checkpointer: crate::sqlite::checkpoint::Checkpointer,
    /// The insert of one row and of [`GROUP`] rows, written once.
    insert_one: String,
    insert_group: String,
}

impl SqliteBackend {
    /// Inserts `rows` with the statement `sql`, which has a place for each of them.
    fn insert(&self, sql: &str, rows: &[(&AuditEntry, Link)]) -> Result<(), AuditError> {
        let mut insert = self.conn.prepare_cached(sql).map_err(storage)?;
        for (k, (entry, link)) in rows.iter().enumerate() {
            let r = entry.indexed();
            let at = k * PER_ROW;
            insert
                .raw_bind_parameter(at + 1, link.seq as i64)
                .and_then(|()| insert.raw_bind_parameter(at + 2, r.time_ms as i64))
                .and_then(|()| insert.raw_bind_parameter(at + 3, r.principal()))
                .and_then(|()| insert.raw_bind_parameter(at + 4, r.tenant()))
                .and_then(|()| insert.raw_bind_parameter(at + 5, r.tool()))
                .and_then(|()| insert.raw_bind_parameter(at + 6, r.call_id()))
                .and_then(|()| insert.raw_bind_parameter(at + 7, r.outcome.as_str()))
                .and_then(|()| insert.raw_bind_parameter(at + 8, r.code.map(|c| c.as_str())))
                .and_then(|()| insert.raw_bind_parameter(at + 9, &link.hash))
                .and_then(|()| insert.raw_bind_parameter(at + 10, &link.body))
                .map_err(storage)?;
        }
        insert.raw_execute().map_err(storage)?;
        Ok(())
    }
}

impl Backend for SqliteBackend {
    fn write(&mut self, batch: &[(&AuditEntry, Link)]) -> Result<(), AuditError> {
        if !self.in_transaction {
            self.conn.execute_batch("BEGIN").map_err(storage)?;
            self.in_transaction = true;
        }
        let mut groups = batch.chunks_exact(GROUP);
        for group in &mut groups {
            self.insert(&self.insert_group, group)?;
        }
        for row in groups.remainder() {
            self.insert(&self.insert_one, std::slice::from_ref(row))?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), AuditError> {
        if self.in_transaction {
            self.conn.execute_batch("COMMIT").map_err(storage)?;
            self.in_transaction = false;
            self.checkpointer.after_commit(&self.conn);
        }
        Ok(())
    }

    fn rollback(&mut self) {
        if self.in_transaction {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.in_transaction = false;
        }
    }
}

/// Audit records in one SQLite file.
pub struct SqliteAudit {
    path: PathBuf,
    options: AuditOptions,
    writer: Writer,
}

impl std::fmt::Debug for SqliteAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteAudit")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteAudit {
    /// Opens (or creates) the log at `path`, durable against a crash of the process.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        Self::open_with(path, Durability::Process)
    }

    /// Opens (or creates) the log at `path` with the given durability, or
    /// [`AuditOptions`] (a seal key, an anchor). Refused when the log's last record was not
    /// sealed with the given key, or the log is shorter than its anchor says.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: impl Into<AuditOptions>,
    ) -> Result<Self, AuditError> {
        let options = options.into();
        let path = path.as_ref().to_path_buf();
        let mut conn = connect(&path, OpenFlags::default())?;
        let sync = match options.durability {
            Durability::Process => "NORMAL",
            Durability::Os => "FULL",
        };
        // 16 KiB pages (set before the first table; an existing file keeps its own): a record
        // is about 600 bytes, and with 4 KiB pages the writer spent a tenth more time, most of
        // it in the kernel, writing WAL frames and checkpointing them (BENCHMARKS.md).
        crate::sqlite::set_up(
            &conn,
            &format!("PRAGMA page_size = 16384; PRAGMA synchronous = {sync};"),
            SCHEMA,
        )
        .map_err(storage)?;
        let checkpointer = crate::sqlite::checkpoint::checkpoint_in_background(&mut conn, &path)
            .map_err(AuditError::Storage)?;
        let last = crate::sqlite::patiently(|| {
            conn.query_row(
                "SELECT seq, record, hash FROM audit_log ORDER BY seq DESC LIMIT 1",
                [],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)? as u64,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                    ))
                },
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
        })
        .map_err(storage)?;
        let (chain, anchor) = options.continue_log(&path, last)?;
        let writer = Writer::start(
            "tooljig-audit-sqlite",
            SqliteBackend {
                conn,
                in_transaction: false,
                checkpointer,
                insert_one: insert_sql(1),
                insert_group: insert_sql(GROUP),
            },
            chain,
            anchor,
        )?;
        Ok(SqliteAudit {
            path,
            options,
            writer,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records matching `query` in the log at `path`, read without a writer (another
    /// process may be writing).
    pub fn query_file(
        path: impl AsRef<Path>,
        query: &AuditQuery,
    ) -> Result<Vec<AuditRecord>, AuditError> {
        let conn = connect(path.as_ref(), OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut sql = format!("SELECT {COLUMNS} FROM audit_log WHERE 1 = 1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        for (col, op, value) in query.conditions() {
            args.push(match value {
                Bound::Text(t) => t.into(),
                Bound::Int(n) => n.into(),
            });
            sql.push_str(&format!(" AND {col} {op} ?{}", args.len()));
        }
        sql.push_str(&query.order_and_limit());
        let mut stmt = conn.prepare(&sql).map_err(storage)?;
        let mut rows = stmt.query(params_from_iter(args)).map_err(storage)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(storage)? {
            out.push(read_row(row)?.record);
        }
        if query.limit.is_some() {
            out.reverse();
        }
        Ok(out)
    }

    /// Verifies the (unkeyed, unanchored) chain of the log at `path`: see
    /// [`SqliteAudit::verify_file_with`].
    pub fn verify_file(path: impl AsRef<Path>) -> Result<ChainReport, AuditError> {
        Self::verify_file_with(path, &AuditOptions::default())
    }

    /// Verifies the chain of the log at `path` under `options`' seal key and anchor, and
    /// that each row's indexed columns agree with its record (so a query cannot be fooled by
    /// editing a column alone).
    pub fn verify_file_with(
        path: impl AsRef<Path>,
        options: &AuditOptions,
    ) -> Result<ChainReport, AuditError> {
        let mut v = match options.verifier() {
            Ok(v) => v,
            Err(report) => return Ok(report),
        };
        let conn = connect(path.as_ref(), OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut stmt = conn
            .prepare(&format!("SELECT {COLUMNS} FROM audit_log ORDER BY seq ASC"))
            .map_err(storage)?;
        let mut rows = stmt.query([]).map_err(storage)?;
        while let Some(row) = rows.next().map_err(storage)? {
            let Row {
                record,
                body,
                columns_agree,
            } = match read_row(row) {
                Ok(r) => r,
                Err(AuditError::Corrupt { seq, message }) => {
                    return Ok(v.report(Some(crate::guard::audit::BrokenLink {
                        seq,
                        reason: message,
                    })));
                }
                Err(e) => return Err(e),
            };
            if let Err(b) = v.check_stored(&record, &body) {
                return Ok(v.report(Some(b)));
            }
            if !columns_agree {
                return Ok(v.report(Some(crate::guard::audit::BrokenLink {
                    seq: record.seq,
                    reason:
                        "the row's indexed columns do not match its record: a column was edited"
                            .into(),
                })));
            }
        }
        Ok(v.report(None))
    }
}

/// A row read back.
struct Row {
    record: AuditRecord,
    body: String,
    columns_agree: bool,
}

/// A row as a record, its stored body, and whether its indexed columns agree with it.
fn read_row(row: &rusqlite::Row<'_>) -> Result<Row, AuditError> {
    let seq = row.get::<_, i64>(0).map_err(storage)? as u64;
    let text: String = row.get(9).map_err(storage)?;
    let mut record: AuditRecord = serde_json::from_str(&text).map_err(|e| AuditError::Corrupt {
        seq,
        message: format!("the record is not valid JSON: {e}"),
    })?;
    record.hash = row.get(8).map_err(storage)?;
    let agree = record.seq == seq
        && row.get::<_, i64>(1).map_err(storage)? as u64 == record.time_ms
        && row.get::<_, Option<String>>(2).map_err(storage)? == record.principal
        && row.get::<_, Option<String>>(3).map_err(storage)? == record.tenant
        && row.get::<_, String>(4).map_err(storage)? == record.tool
        && row.get::<_, String>(5).map_err(storage)? == record.call_id
        && row.get::<_, String>(6).map_err(storage)? == record.outcome.as_str()
        && row.get::<_, Option<String>>(7).map_err(storage)?.as_deref()
            == record.code.map(|c| c.as_str());
    Ok(Row {
        record,
        body: text,
        columns_agree: agree,
    })
}

fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AuditError> + Send + 'static,
) -> BoxFuture<Result<T, AuditError>> {
    Box::pin(async move {
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::spawn_blocking(f)
                .await
                .unwrap_or_else(|e| Err(AuditError::Storage(format!("audit reader failed: {e}")))),
            Err(_) => f(),
        }
    })
}

impl AuditSink for SqliteAudit {
    fn record(&self, entry: AuditEntry) {
        self.writer.record_all(vec![entry]);
    }

    fn record_all(&self, entries: Vec<AuditEntry>) {
        self.writer.record_all(entries);
    }

    fn flush(&self) -> BoxFuture<Result<(), AuditError>> {
        let wait = self.writer.flush();
        Box::pin(async move { wait.await.unwrap_or(Err(AuditError::Closed)) })
    }

    fn query(&self, query: AuditQuery) -> BoxFuture<Result<Vec<AuditRecord>, AuditError>> {
        let path = self.path.clone();
        blocking(move || SqliteAudit::query_file(path, &query))
    }

    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>> {
        let (path, options) = (self.path.clone(), self.options.clone());
        blocking(move || SqliteAudit::verify_file_with(path, &options))
    }
}
