//! The state store seam: where durable runs keep what must outlive a process.
//!
//! Idempotency records, pending approvals, suspended runs, external results and
//! compensations all live in one small key-value shape: a record is a JSON value with a
//! version and an optional expiry, in a [`Namespace`]. Every write is a compare-and-set on
//! the version, so each operation maps onto one atomic step of any backend: a SQLite or
//! PostgreSQL transaction (`UPDATE ... WHERE version = $1`, `INSERT ... ON CONFLICT`), a
//! Redis `WATCH`/`MULTI` or Lua script with `PEXPIRE`. Leases are records whose expiry is
//! checked by the store, never by a clock the caller trusts.
//!
//! Four stores ship: [`MemoryStore`] (one process, tests), [`SqliteStore`] (one file, WAL,
//! shared by every process that opens it), `PostgresStore` (feature `postgres`: one
//! database, shared by every worker on every machine) and `RedisStore` (feature `redis`: for
//! apps that keep pending work in Redis; as durable as the server's persistence).

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
mod sqlite;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use sqlite::SqliteStore;

use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::handler::BoxFuture;
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// A family of records; keys are unique within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// In-flight and finished idempotent calls, by key.
    Idempotency,
    /// Approval requests and their decisions, by approval id.
    Approval,
    /// Learned "always allow" preferences, by preference id.
    Preference,
    /// Runs (batches that suspended, or may be rolled back), by run id.
    Run,
    /// Calls of a durable run, claimed when they start and finished with their result, by
    /// `run_id/call_id`.
    RunCall,
    /// Who runs a run right now (a lease renewed by a heartbeat), by run id.
    RunLease,
    /// Requests to stop a run, by run id.
    RunCancel,
    /// Client-side calls awaiting a submitted result, by `run_id/call_id`.
    External,
    /// Compensations that ran (or were claimed), by `run_id/call_id`.
    Compensation,
    /// Background jobs' calls (`run_id/call_id` of an `External` record), by job reference.
    Job,
    /// Operators' requests to resume or roll back a run, by request id.
    OperatorRequest,
}

impl Namespace {
    /// The stable name backends store it under.
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Idempotency => "idempotency",
            Namespace::Approval => "approval",
            Namespace::Preference => "preference",
            Namespace::Run => "run",
            Namespace::RunCall => "run_call",
            Namespace::RunLease => "run_lease",
            Namespace::RunCancel => "run_cancel",
            Namespace::External => "external",
            Namespace::Compensation => "compensation",
            Namespace::Job => "job",
            Namespace::OperatorRequest => "operator_request",
        }
    }
}

/// A stored record with the version that a later compare-and-set must name.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    /// The record.
    pub value: Value,
    /// At least 1; grows with every successful write, and is never given to a later record
    /// of the same key again (so a stale writer cannot overwrite a record written anew).
    pub version: u64,
    /// When the record stops existing, in ms since the Unix epoch.
    pub expires_at_ms: Option<u64>,
}

/// What a write expects to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No live record (an expired one counts as none).
    Absent,
    /// The live record at exactly this version.
    Version(u64),
}

/// Why a store operation failed (the backend, not a lost race: that is `Ok(false)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state store: {0}")]
pub struct StoreError(pub String);

impl StoreError {
    /// The refusal an app's operation (decide, resume, submit a result, ...) gets when the
    /// store failed: `unavailable`, retryable, reason `store_unavailable`, with what the
    /// backend said.
    pub fn refusal(self) -> ToolError {
        ToolError::new(ErrorCode::Unavailable, self.0).with("reason", "store_unavailable")
    }

    /// The envelope a model gets for a call the store failed: the same code with a message
    /// that says what did not happen and nothing of the backend (that stays on the result's
    /// `detail` and in the audit log).
    pub fn envelope(what_did_not_happen: &str) -> ToolError {
        ToolError::new(
            ErrorCode::Unavailable,
            format!("the state store is unavailable; {what_did_not_happen}"),
        )
        .with("reason", "store_unavailable")
    }
}

/// Durable, shared state for idempotency, approvals, runs and compensations.
///
/// Implementations must make [`StateStore::put`] and [`StateStore::delete`] atomic
/// compare-and-sets against concurrent writers, including writers in other processes, and
/// must hide records past their expiry from every read.
pub trait StateStore: Send + Sync + 'static {
    /// The live record under `key`, if any.
    fn get(&self, ns: Namespace, key: &str) -> BoxFuture<Result<Option<Versioned>, StoreError>>;

    /// Writes `value` if the record is as `expect`ed; `Ok(false)` when another writer got
    /// there first. `ttl_ms` sets the expiry (none: kept until deleted). Returns the new
    /// version on success.
    fn put(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        value: Value,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>>;

    /// As [`StateStore::put`], with the record already encoded as JSON text. A store that
    /// keeps text (SQLite, PostgreSQL, Redis) overrides it, with
    /// [`StateStore::keeps_json_text`], to write the text as it is: a large record (a run of
    /// a thousand calls is ~400 KB) then skips the tree of a `Value` between the app's types
    /// and the text, which cost more than the write. The default decodes it for `put`.
    /// `json` must be JSON (what `serde_json` writes): a store that keeps text keeps it as
    /// given, and a later read of anything else fails as a damaged record would.
    fn put_json(
        &self,
        ns: Namespace,
        key: &str,
        expect: Expect,
        json: String,
        ttl_ms: Option<u64>,
    ) -> BoxFuture<Result<Option<u64>, StoreError>> {
        match serde_json::from_str(&json) {
            Ok(value) => self.put(ns, key, expect, value, ttl_ms),
            Err(e) => {
                let e = StoreError(format!("record {}/{key} is not JSON: {e}", ns.as_str()));
                Box::pin(async move { Err(e) })
            }
        }
    }

    /// Whether records are best handed to [`StateStore::put_json`] as text (false: to
    /// [`StateStore::put`] as a `Value`).
    fn keeps_json_text(&self) -> bool {
        false
    }

    /// Deletes the record if it is at `version`; `Ok(false)` when it changed or is gone.
    fn delete(&self, ns: Namespace, key: &str, version: u64)
    -> BoxFuture<Result<bool, StoreError>>;

    /// Live records whose key starts with `prefix`, in key order, at most `limit`.
    fn list(
        &self,
        ns: Namespace,
        prefix: &str,
        limit: usize,
    ) -> BoxFuture<Result<Vec<(String, Versioned)>, StoreError>>;

    /// How the processes sharing this store wake each other's waiters (see
    /// [`WakeBus`](crate::durable::wakeup::WakeBus)); `None` (the default) when the store
    /// has no way: waiters in other processes then read the store again every 250 ms.
    fn wake_bus(&self) -> Option<std::sync::Arc<dyn crate::durable::wakeup::WakeBus>> {
        None
    }
}

/// Milliseconds since the Unix epoch: the one clock records are compared against, shared
/// by every process on the machine.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Reads a record and decodes it.
pub(crate) async fn get_as<T: serde::de::DeserializeOwned>(
    store: &dyn StateStore,
    ns: Namespace,
    key: &str,
) -> Result<Option<(T, u64)>, StoreError> {
    match store.get(ns, key).await? {
        None => Ok(None),
        Some(v) => serde_json::from_value(v.value)
            .map(|t| Some((t, v.version)))
            .map_err(|e| StoreError(format!("record {}/{key} is unreadable: {e}", ns.as_str()))),
    }
}

/// Encodes and writes a record with compare-and-set.
pub(crate) async fn put_as<T: serde::Serialize>(
    store: &dyn StateStore,
    ns: Namespace,
    key: &str,
    expect: Expect,
    value: &T,
    ttl_ms: Option<u64>,
) -> Result<Option<u64>, StoreError> {
    let unencodable = |e: serde_json::Error| {
        StoreError(format!("record {}/{key} does not encode: {e}", ns.as_str()))
    };
    if store.keeps_json_text() {
        let json = serde_json::to_string(value).map_err(unencodable)?;
        return store.put_json(ns, key, expect, json, ttl_ms).await;
    }
    let value = serde_json::to_value(value).map_err(unencodable)?;
    store.put(ns, key, expect, value, ttl_ms).await
}

pub mod contract {
    //! The behaviour every store must show, as one check run against each implementation
    //! (memory, SQLite, PostgreSQL), and against an app's own [`StateStore`]: it panics at
    //! the first rule the store breaks, so call it from a test. It writes keys `k`, `j`, `t`,
    //! `race`, `p/1`, `p/2` and `q/1`, and takes about a second (it waits for a record to
    //! expire).

    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    /// Runs the contract against an empty `store`; panics on the first violation.
    pub async fn check(store: Arc<dyn StateStore>) {
        let ns = Namespace::Idempotency;
        assert_eq!(store.get(ns, "k").await.unwrap(), None);
        let v1 = store
            .put(ns, "k", Expect::Absent, json!({"a": 1}), None)
            .await
            .unwrap()
            .expect("first insert wins");
        assert_eq!(
            store
                .put(ns, "k", Expect::Absent, json!({"a": 2}), None)
                .await
                .unwrap(),
            None,
            "a second insert loses"
        );
        let got = store.get(ns, "k").await.unwrap().unwrap();
        assert_eq!((got.value, got.version), (json!({"a": 1}), v1));
        assert_eq!(
            store
                .put(ns, "k", Expect::Version(v1 + 7), json!(3), None)
                .await
                .unwrap(),
            None,
            "a stale version loses"
        );
        let v2 = store
            .put(ns, "k", Expect::Version(v1), json!(3), None)
            .await
            .unwrap()
            .unwrap();
        assert!(v2 > v1);
        assert_eq!(
            store.get(Namespace::Run, "k").await.unwrap(),
            None,
            "namespaces are apart"
        );
        // A record handed over as text reads back as the same value.
        let text = r#"{"b":[1,"two",{"c":null}]}"#.to_string();
        assert!(
            store
                .put_json(ns, "j", Expect::Absent, text, None)
                .await
                .unwrap()
                .is_some()
        );
        let got = store.get(ns, "j").await.unwrap().unwrap();
        assert_eq!(got.value, json!({"b": [1, "two", {"c": null}]}));
        assert!(!store.delete(ns, "k", v1).await.unwrap());
        assert!(store.delete(ns, "k", v2).await.unwrap());
        assert_eq!(store.get(ns, "k").await.unwrap(), None);

        // Expiry: invisible once past, and an absent-insert may take its place.
        store
            .put(ns, "t", Expect::Absent, json!(1), Some(400))
            .await
            .unwrap()
            .unwrap();
        // A TTL well above a loaded machine's fsync time, so the record is still there here.
        assert!(store.get(ns, "t").await.unwrap().is_some());
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(store.get(ns, "t").await.unwrap(), None);
        assert!(
            store
                .put(ns, "t", Expect::Absent, json!(2), None)
                .await
                .unwrap()
                .is_some()
        );

        for k in ["p/2", "p/1", "q/1"] {
            store
                .put(Namespace::Approval, k, Expect::Absent, json!(k), None)
                .await
                .unwrap()
                .unwrap();
        }
        let listed = store.list(Namespace::Approval, "p/", 10).await.unwrap();
        let keys: Vec<&str> = listed.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["p/1", "p/2"]);
        // A prefix with LIKE wildcards matches literally.
        assert!(
            store
                .list(Namespace::Approval, "%", 10)
                .await
                .unwrap()
                .is_empty()
        );

        // Many racing inserts: exactly one wins.
        let mut tasks = Vec::new();
        for i in 0..64 {
            let s = store.clone();
            tasks.push(tokio::spawn(async move {
                s.put(ns, "race", Expect::Absent, json!(i), None)
                    .await
                    .unwrap()
                    .is_some()
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap() as usize;
        }
        assert_eq!(wins, 1);
    }
}
