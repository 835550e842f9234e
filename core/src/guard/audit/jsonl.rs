//! An audit sink that appends one JSON object per line to a file, written in batches by its
//! own thread: easy to ship to a log pipeline, grep, or load elsewhere.
//!
//! Each line is the record's body with its `hash` first. Durability:
//! `Engine::run` waits until the batch's lines are written to the file with one `write`
//! (they then survive a crash or kill of the process); with [`Durability::Os`] the file is
//! also `fsync`ed. A line cut short by a crash mid-write was never acknowledged; opening the
//! file again removes it.

use crate::guard::audit::chain::{ChainReport, Link};
use crate::guard::audit::options::AuditOptions;
use crate::guard::audit::options::Durability;
use crate::guard::audit::query::AuditQuery;
use crate::guard::audit::record::AuditRecord;
use crate::guard::audit::writer::{Backend, Writer};
use crate::guard::audit::{AuditEntry, AuditError, AuditSink, BrokenLink};
use crate::handler::BoxFuture;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

fn io(e: std::io::Error) -> AuditError {
    AuditError::Storage(e.to_string())
}

/// The line of a linked record: its body with `"hash"` spliced in first.
pub(crate) fn line(hash: &str, body: &str, out: &mut String) {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let sep = if rest == "}" { "" } else { "," };
    out.push_str("{\"hash\":\"");
    out.push_str(hash);
    out.push('"');
    out.push_str(sep);
    out.push_str(rest);
    out.push('\n');
}

struct JsonlBackend {
    file: File,
    durability: Durability,
    /// The file's length when the open unit began, to cut a failed unit off.
    committed_len: u64,
}

impl Backend for JsonlBackend {
    fn write(&mut self, batch: &[(&AuditEntry, Link)]) -> Result<(), AuditError> {
        let size = batch.iter().map(|(_, l)| l.body.len() + 80).sum();
        let mut text = String::with_capacity(size);
        for (_, link) in batch {
            line(&link.hash, &link.body, &mut text);
        }
        // One `write` per chunk: once it returns, the lines are in the operating system's
        // hands and survive a crash of this process.
        self.file.write_all(text.as_bytes()).map_err(io)
    }

    fn commit(&mut self) -> Result<(), AuditError> {
        if self.durability == Durability::Os {
            self.file.sync_data().map_err(io)?;
        }
        self.committed_len = self.file.metadata().map_err(io)?.len();
        Ok(())
    }

    fn rollback(&mut self) {
        // Lines of a failed unit are written again; drop the ones that made it.
        let _ = self.file.set_len(self.committed_len);
    }
}

/// Audit records in a JSON Lines file.
pub struct JsonlAudit {
    path: PathBuf,
    options: AuditOptions,
    writer: Writer,
}

impl std::fmt::Debug for JsonlAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlAudit")
            .field("path", &self.path)
            .finish()
    }
}

/// The body a line was made from (see [`line`]): the line without its leading hash.
fn body_of(line: &str) -> Option<String> {
    let rest = line.strip_prefix("{\"hash\":\"")?;
    let rest = rest.get(64..)?.strip_prefix('"')?;
    let rest = rest.strip_prefix(',').unwrap_or(rest);
    Some(format!("{{{rest}"))
}

/// One complete line: the record, and the body its hash covers.
type Line = Result<(AuditRecord, String), String>;

/// Reads each complete line of the file: `(line number from 1, parsed line or error)`.
fn read_lines(path: &Path) -> Result<Vec<(u64, Line)>, AuditError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let mut out = Vec::new();
    let mut reader = BufReader::new(file);
    let mut buf = String::new();
    let mut n = 0;
    loop {
        buf.clear();
        if reader.read_line(&mut buf).map_err(io)? == 0 || !buf.ends_with('\n') {
            // End of file, or a trailing line without its newline: an unacknowledged write.
            return Ok(out);
        }
        n += 1;
        let text = buf.trim_end();
        let parsed = serde_json::from_str::<AuditRecord>(text)
            .map_err(|e| e.to_string())
            .and_then(|r| {
                body_of(text)
                    .map(|b| (r, b))
                    .ok_or_else(|| "the line does not start with its hash".to_string())
            });
        out.push((n, parsed));
    }
}

impl JsonlAudit {
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
        let durability = options.durability;
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        // Drop a partial last line left by a crash mid-write.
        let len = file.metadata().map_err(io)?.len();
        let whole = std::fs::read(&path).map_err(io)?;
        let keep = whole.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) as u64;
        if keep < len {
            file.set_len(keep).map_err(io)?;
        }
        let last = read_lines(&path)?
            .into_iter()
            .next_back()
            .map(|(n, r)| {
                r.map(|(r, body)| (r.seq, body, r.hash))
                    .map_err(|message| AuditError::Corrupt { seq: n, message })
            })
            .transpose()?;
        let (chain, anchor) = options.continue_log(&path, last)?;
        let writer = Writer::start(
            "tooljig-audit-jsonl",
            JsonlBackend {
                file,
                durability,
                committed_len: keep,
            },
            chain,
            anchor,
        )?;
        Ok(JsonlAudit {
            path,
            options,
            writer,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records matching `query` in the log at `path`.
    pub fn query_file(
        path: impl AsRef<Path>,
        query: &AuditQuery,
    ) -> Result<Vec<AuditRecord>, AuditError> {
        let mut records = Vec::new();
        for (n, r) in read_lines(path.as_ref())? {
            records.push(
                r.map_err(|message| AuditError::Corrupt { seq: n, message })?
                    .0,
            );
        }
        Ok(query.apply(&records))
    }

    /// Verifies the (unkeyed, unanchored) chain of the log at `path`.
    pub fn verify_file(path: impl AsRef<Path>) -> Result<ChainReport, AuditError> {
        Self::verify_file_with(path, &AuditOptions::default())
    }

    /// Verifies the chain of the log at `path` under `options`' seal key and anchor.
    pub fn verify_file_with(
        path: impl AsRef<Path>,
        options: &AuditOptions,
    ) -> Result<ChainReport, AuditError> {
        let mut v = match options.verifier() {
            Ok(v) => v,
            Err(report) => return Ok(report),
        };
        for (n, r) in read_lines(path.as_ref())? {
            let (record, body) = match r {
                Ok(r) => r,
                Err(message) => {
                    return Ok(v.report(Some(BrokenLink {
                        seq: n,
                        reason: format!("line {n} is not a record: {message}"),
                    })));
                }
            };
            if let Err(b) = v.check_stored(&record, &body) {
                return Ok(v.report(Some(b)));
            }
        }
        Ok(v.report(None))
    }
}

impl AuditSink for JsonlAudit {
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
        Box::pin(async move { JsonlAudit::query_file(path, &query) })
    }

    fn verify(&self) -> BoxFuture<Result<ChainReport, AuditError>> {
        let (path, options) = (self.path.clone(), self.options.clone());
        Box::pin(async move { JsonlAudit::verify_file_with(path, &options) })
    }
}
