//! An engine's setup as data: the one parser of what Python's keyword arguments, Node's
//! options object and a config file spell, with every default stated once (in the types it
//! fills). Seams (handlers, hooks, resolvers, predicates) are code, not data: bindings wire
//! those with the `with_*` builders after [`EngineOptions::build`].
//!
//! Stores and audit logs are named by URL, so a backend added later is one more scheme:
//!
//! | spec | state store | audit log |
//! |---|---|---|
//! | `memory` or `memory://` | in this process | in this process |
//! | `sqlite://PATH` (`sqlite:///abs/path.db`, `sqlite://rel.db`, `sqlite:rel.db`) | SQLite file | SQLite file |
//! | `jsonl://PATH` | — | JSON Lines file |
//! | `postgres://user@host:port/db?schema=NAME` (or `postgresql://`) | PostgreSQL (feature `postgres`) | — |
//!
//! The object forms `{"sqlite": PATH}`, `{"jsonl": PATH}` and `{"postgres": URL}` are accepted
//! as aliases.

use super::Engine;
use crate::arguments::Limits;
use crate::durable::store::{MemoryStore, SqliteStore, StateStore};
use crate::guard::access::Settings;
use crate::guard::audit::{AuditOptions, AuditSink, JsonlAudit, MemoryAudit, SqliteAudit};
use crate::guard::cache::{InProcessCache, ResultCache};
use crate::guard::rate_limit::{InProcessLimiter, RateLimiter};
use crate::policy::ApprovalRules;
use crate::schema::SchemaResources;
use crate::seal::SealKey;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything about an engine that is data. Unknown keys are refused, so a misspelt option
/// never goes unnoticed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineOptions {
    /// Argument size and depth limits.
    pub limits: Option<Limits>,
    /// Documents schemas may `$ref`, by URI (nothing is fetched over the network).
    pub schema_resources: Option<HashMap<String, Value>>,
    /// Enabled flags (system, tenant, department, user).
    pub settings: Option<Settings>,
    /// Engine-wide approval rules.
    pub approval_rules: Option<ApprovalRules>,
    /// How long client-side calls wait for their result, in ms.
    pub external_expiry_ms: Option<u64>,
    /// How long a run's lease lasts without a heartbeat, in ms (15 000 by default).
    pub run_lease_ms: Option<u64>,
    /// Where audit records go.
    pub audit: Option<AuditSpec>,
    /// Where durable state lives; given, every batch is a run.
    pub state_store: Option<StoreSpec>,
    /// Where rate-limit budgets live: this process (the default) or a Redis every worker
    /// shares.
    pub rate_limiter: Option<CoordinationSpec>,
    /// Where read tools' cached results live: this process (the default) or a Redis every
    /// worker shares.
    pub result_cache: Option<CoordinationSpec>,
    /// The app's secret that seals the audit chain and stored approval decisions
    /// (HMAC-SHA256; `env:NAME`, `file:PATH`, `hex:HEX` or the key itself). Never written
    /// out again.
    #[serde(skip)]
    pub seal_key: Option<SealKey>,
    /// Where the audit log's head is anchored, out of band (a file-backed log only).
    pub audit_anchor: Option<PathBuf>,
}

/// Why options were refused: which option, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
pub struct OptionsError {
    /// The option, e.g. `state_store` (`options` when the whole bag is at fault).
    pub option: String,
    /// What is wrong, in words the user can act on.
    pub message: String,
}

impl OptionsError {
    fn new(option: &str, message: impl Into<String>) -> Self {
        OptionsError {
            option: option.into(),
            message: message.into(),
        }
    }
}

impl EngineOptions {
    /// Reads options from JSON (snake_case keys), refusing unknown keys and malformed values
    /// with the option named.
    pub fn from_value(value: Value) -> Result<Self, OptionsError> {
        let Value::Object(map) = value else {
            return Err(OptionsError::new("options", "must be an object"));
        };
        let mut options = EngineOptions::default();
        for (key, value) in map {
            if value.is_null() {
                continue;
            }
            let bad = |e: serde_json::Error| OptionsError::new(&key, e.to_string());
            match key.as_str() {
                "limits" => options.limits = Some(serde_json::from_value(value).map_err(bad)?),
                "schema_resources" => {
                    options.schema_resources = Some(serde_json::from_value(value).map_err(bad)?)
                }
                "settings" => options.settings = Some(serde_json::from_value(value).map_err(bad)?),
                "approval_rules" => {
                    options.approval_rules = Some(serde_json::from_value(value).map_err(bad)?)
                }
                "external_expiry_ms" => {
                    options.external_expiry_ms = Some(value.as_u64().ok_or_else(|| {
                        OptionsError::new(
                            &key,
                            format!("expected a whole number of milliseconds, got {value}"),
                        )
                    })?)
                }
                "run_lease_ms" => {
                    options.run_lease_ms = Some(value.as_u64().ok_or_else(|| {
                        OptionsError::new(
                            &key,
                            format!("expected a whole number of milliseconds, got {value}"),
                        )
                    })?)
                }
                "audit" => {
                    options.audit =
                        Some(AuditSpec::parse(&value).map_err(|m| OptionsError::new(&key, m))?)
                }
                "state_store" => {
                    options.state_store =
                        Some(StoreSpec::parse(&value).map_err(|m| OptionsError::new(&key, m))?)
                }
                "rate_limiter" => {
                    options.rate_limiter = Some(
                        CoordinationSpec::parse(&value).map_err(|m| OptionsError::new(&key, m))?,
                    )
                }
                "result_cache" => {
                    options.result_cache = Some(
                        CoordinationSpec::parse(&value).map_err(|m| OptionsError::new(&key, m))?,
                    )
                }
                "seal_key" => {
                    let spec = value.as_str().ok_or_else(|| {
                        OptionsError::new(
                            &key,
                            "expected a string: env:NAME, file:PATH, hex:HEX or the key",
                        )
                    })?;
                    options.seal_key =
                        Some(SealKey::parse(spec).map_err(|m| OptionsError::new(&key, m))?)
                }
                "audit_anchor" => {
                    options.audit_anchor = Some(match value.as_str() {
                        Some(p) if !p.is_empty() => PathBuf::from(p),
                        _ => return Err(OptionsError::new(&key, "expected a file path")),
                    })
                }
                other => {
                    return Err(OptionsError::new(
                        other,
                        format!("unknown option; expected one of {}", Self::NAMES.join(", ")),
                    ));
                }
            }
        }
        Ok(options)
    }

    /// The option names, as snake_case keys.
    pub const NAMES: &'static [&'static str] = &[
        "limits",
        "schema_resources",
        "settings",
        "approval_rules",
        "external_expiry_ms",
        "run_lease_ms",
        "audit",
        "state_store",
        "rate_limiter",
        "result_cache",
        "seal_key",
        "audit_anchor",
    ];

    /// An engine set up as these options say, stores and logs opened.
    pub fn build(self) -> Result<Engine, OptionsError> {
        let mut engine = Engine::new();
        if let Some(resources) = self.schema_resources {
            engine = engine.with_schema_resources(SchemaResources::new(resources));
        }
        if let Some(limits) = self.limits {
            engine = engine.with_limits(limits);
        }
        if let Some(settings) = self.settings {
            engine = engine.with_settings(settings);
        }
        if let Some(rules) = self.approval_rules {
            engine = engine.with_approval_rules(rules);
        }
        if let Some(ms) = self.external_expiry_ms {
            engine = engine.with_external_expiry_ms(ms);
        }
        if let Some(ms) = self.run_lease_ms {
            engine = engine.with_run_lease_ms(ms);
        }
        let mut audit_options = AuditOptions {
            key: self.seal_key.clone(),
            anchor: self.audit_anchor,
            ..Default::default()
        };
        match self.audit {
            Some(audit) => {
                let sink = audit
                    .open_with(std::mem::take(&mut audit_options))
                    .map_err(|m| OptionsError::new("audit", m))?;
                engine = engine.with_audit(sink);
            }
            None if audit_options.anchor.is_some() => {
                return Err(OptionsError::new(
                    "audit_anchor",
                    "anchors an audit log; give one with `audit` (sqlite://PATH or jsonl://PATH)",
                ));
            }
            None => {}
        }
        if let Some(key) = self.seal_key {
            engine = engine.with_seal_key(key);
        }
        if let Some(limits) = self.rate_limiter {
            let limiter = limits
                .limiter()
                .map_err(|m| OptionsError::new("rate_limiter", m))?;
            engine = engine.with_rate_limiter(limiter);
        }
        if let Some(cache) = self.result_cache {
            let cache = cache
                .cache()
                .map_err(|m| OptionsError::new("result_cache", m))?;
            engine = engine.with_cache(cache);
        }
        if let Some(store) = self.state_store {
            let store = store
                .open()
                .map_err(|m| OptionsError::new("state_store", m))?;
            engine = engine.with_state_store(store);
        }
        Ok(engine)
    }
}

/// Where durable state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// In this process only.
    Memory,
    /// A SQLite file, shared by the processes that open it.
    Sqlite(PathBuf),
    /// A PostgreSQL database (its libpq URL, with `?schema=NAME`), shared by every worker.
    Postgres(String),
    /// A Redis server (`redis://host:port/db?prefix=NAME`), shared by every worker.
    Redis(String),
}

/// Where what workers coordinate through lives: rate-limit budgets (`rate_limiter`) and
/// cached results (`result_cache`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinationSpec {
    /// In this process: a limit or a cached result holds per process.
    Memory,
    /// A Redis server (`redis://host:port/db?prefix=NAME`) or cluster
    /// (`redis+cluster://host:port,host:port?prefix=NAME`): shared by every worker that
    /// names it.
    Redis(String),
}

impl CoordinationSpec {
    /// Reads a spec from its URL form: `memory` or `redis://...` (`rediss://` for TLS is not
    /// built in).
    pub fn parse(value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("memory" | "memory://") => Ok(CoordinationSpec::Memory),
            Some(url) if url.starts_with("redis://") || url.starts_with("redis+cluster://") => {
                Ok(CoordinationSpec::Redis(url.to_string()))
            }
            _ => Err(format!(
                "expected \"memory\", a redis://HOST:PORT or a redis+cluster://HOST:PORT,HOST:PORT URL, got {value}"
            )),
        }
    }

    /// The URL form.
    pub fn to_url(&self) -> String {
        match self {
            CoordinationSpec::Memory => "memory://".into(),
            CoordinationSpec::Redis(url) => url.clone(),
        }
    }

    /// Opens a rate limiter there (connecting on first use).
    pub fn limiter(&self) -> Result<Arc<dyn RateLimiter>, String> {
        match self {
            CoordinationSpec::Memory => Ok(Arc::new(InProcessLimiter::new())),
            #[cfg(feature = "redis")]
            CoordinationSpec::Redis(url) => Ok(Arc::new(
                crate::guard::rate_limit_redis::RedisLimiter::open(url)?,
            )),
            #[cfg(not(feature = "redis"))]
            CoordinationSpec::Redis(_) => Err(NO_REDIS.into()),
        }
    }

    /// Opens a result cache there (connecting on first use).
    pub fn cache(&self) -> Result<Arc<dyn ResultCache>, String> {
        match self {
            CoordinationSpec::Memory => Ok(Arc::new(InProcessCache::default())),
            #[cfg(feature = "redis")]
            CoordinationSpec::Redis(url) => {
                Ok(Arc::new(crate::guard::cache_redis::RedisCache::open(url)?))
            }
            #[cfg(not(feature = "redis"))]
            CoordinationSpec::Redis(_) => Err(NO_REDIS.into()),
        }
    }
}

#[cfg(not(feature = "redis"))]
const NO_REDIS: &str = "this build of tooljig has no Redis support (feature `redis`)";

/// Where audit records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSpec {
    /// In this process only.
    Memory,
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A JSON Lines file, one record a line.
    Jsonl(PathBuf),
    /// A PostgreSQL database (its libpq URL, with `?schema=NAME`): one chain for every worker.
    Postgres(String),
}

/// A spec's scheme and path: `memory`, `memory://`, `sqlite://PATH`, `sqlite:PATH`, or the
/// object `{"sqlite": PATH}`.
fn scheme_and_path(value: &Value) -> Result<(String, Option<PathBuf>), String> {
    match value {
        Value::String(s) if s == "memory" => Ok(("memory".into(), None)),
        Value::String(s) => {
            let Some((scheme, rest)) = s.split_once(':') else {
                return Err(format!(
                    "{s:?} is not a URL; expected e.g. \"memory\" or \"sqlite://path/to/file.db\""
                ));
            };
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let path = (!path.is_empty()).then(|| PathBuf::from(path));
            Ok((scheme.to_ascii_lowercase(), path))
        }
        Value::Object(o) if o.len() == 1 => match o.iter().next() {
            Some((scheme, Value::String(path))) if !path.is_empty() => {
                Ok((scheme.clone(), Some(PathBuf::from(path))))
            }
            _ => Err("the object form is {\"<kind>\": \"<path>\"}".into()),
        },
        other => Err(format!("expected a URL string, got {other}")),
    }
}

#[cfg(not(feature = "postgres"))]
const NO_POSTGRES: &str = "this build of tooljig has no PostgreSQL support (feature `postgres`)";

/// The URL of a server's spec (`postgres://`, `redis://`): the string itself, or what the
/// object form (`{"postgres": URL}`) holds where other kinds hold a path.
fn server_url(value: &Value, scheme: &str, path: Option<PathBuf>) -> Result<String, String> {
    match value {
        Value::String(url) => Ok(url.clone()),
        _ => Ok(needs_path(scheme, path)?.to_string_lossy().into_owned()),
    }
}

fn needs_path(scheme: &str, path: Option<PathBuf>) -> Result<PathBuf, String> {
    path.ok_or_else(|| format!("{scheme}: needs a file path, e.g. \"{scheme}://data/tooljig.db\""))
}

impl StoreSpec {
    /// Reads a spec from its URL (or object) form.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let (scheme, path) = scheme_and_path(value)?;
        match scheme.as_str() {
            "memory" => Ok(StoreSpec::Memory),
            "sqlite" => Ok(StoreSpec::Sqlite(needs_path(&scheme, path)?)),
            "postgres" | "postgresql" => Ok(StoreSpec::Postgres(server_url(value, &scheme, path)?)),
            "redis" | "redis+cluster" => Ok(StoreSpec::Redis(server_url(value, &scheme, path)?)),
            other => Err(format!(
                "no state store speaks {other:?}; expected memory, sqlite://PATH, postgres://HOST/DB or redis://HOST"
            )),
        }
    }

    /// The URL form.
    pub fn to_url(&self) -> String {
        match self {
            StoreSpec::Memory => "memory://".into(),
            StoreSpec::Sqlite(p) => format!("sqlite://{}", p.display()),
            StoreSpec::Postgres(url) | StoreSpec::Redis(url) => url.clone(),
        }
    }

    /// Opens the store.
    pub fn open(&self) -> Result<Arc<dyn StateStore>, String> {
        Ok(match self {
            StoreSpec::Memory => Arc::new(MemoryStore::new()),
            StoreSpec::Sqlite(path) => Arc::new(
                SqliteStore::open(path)
                    .map_err(|e| format!("cannot open {}: {}", path.display(), e.0))?,
            ),
            #[cfg(feature = "postgres")]
            StoreSpec::Postgres(url) => {
                Arc::new(crate::durable::store::PostgresStore::open(url).map_err(|e| e.0)?)
            }
            #[cfg(not(feature = "postgres"))]
            StoreSpec::Postgres(_) => return Err(NO_POSTGRES.into()),
            #[cfg(feature = "redis")]
            StoreSpec::Redis(url) => {
                Arc::new(crate::durable::store::RedisStore::open(url).map_err(|e| e.0)?)
            }
            #[cfg(not(feature = "redis"))]
            StoreSpec::Redis(_) => return Err(NO_REDIS.into()),
        })
    }
}

impl AuditSpec {
    /// Reads a spec from its URL (or object) form.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let (scheme, path) = scheme_and_path(value)?;
        match scheme.as_str() {
            "memory" => Ok(AuditSpec::Memory),
            "sqlite" => Ok(AuditSpec::Sqlite(needs_path(&scheme, path)?)),
            "jsonl" => Ok(AuditSpec::Jsonl(needs_path(&scheme, path)?)),
            "postgres" | "postgresql" => Ok(AuditSpec::Postgres(server_url(value, &scheme, path)?)),
            other => Err(format!(
                "no audit log speaks {other:?}; expected memory, sqlite://PATH, jsonl://PATH or postgres://HOST/DB"
            )),
        }
    }

    /// The URL form.
    pub fn to_url(&self) -> String {
        match self {
            AuditSpec::Memory => "memory://".into(),
            AuditSpec::Sqlite(p) => format!("sqlite://{}", p.display()),
            AuditSpec::Jsonl(p) => format!("jsonl://{}", p.display()),
            AuditSpec::Postgres(url) => url.clone(),
        }
    }

    /// Opens the log.
    pub fn open(&self) -> Result<Arc<dyn AuditSink>, String> {
        self.open_with(AuditOptions::default())
    }

    /// Opens the log with a seal key and an anchor (a file-backed log only).
    pub fn open_with(&self, options: AuditOptions) -> Result<Arc<dyn AuditSink>, String> {
        let failed = |path: &PathBuf, e: String| format!("cannot open {}: {e}", path.display());
        Ok(match self {
            AuditSpec::Memory if options.anchor.is_some() => {
                return Err(
                    "an in-memory log cannot be anchored; anchor a sqlite:// or jsonl:// log"
                        .into(),
                );
            }
            AuditSpec::Memory => Arc::new(match options.key {
                Some(key) => MemoryAudit::sealed(key),
                None => MemoryAudit::new(),
            }),
            AuditSpec::Sqlite(path) => Arc::new(
                SqliteAudit::open_with(path, options).map_err(|e| failed(path, e.to_string()))?,
            ),
            AuditSpec::Jsonl(path) => Arc::new(
                JsonlAudit::open_with(path, options).map_err(|e| failed(path, e.to_string()))?,
            ),
            #[cfg(feature = "postgres")]
            AuditSpec::Postgres(url) => Arc::new(
                crate::guard::audit::PostgresAudit::open(url, options)
                    .map_err(|e| e.to_string())?,
            ),
            #[cfg(not(feature = "postgres"))]
            AuditSpec::Postgres(_) => return Err(NO_POSTGRES.into()),
        })
    }
}

macro_rules! url_serde {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_url())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(d)?;
                <$t>::parse(&value).map_err(serde::de::Error::custom)
            }
        }
    };
}

url_serde!(StoreSpec);
url_serde!(CoordinationSpec);
url_serde!(AuditSpec);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stores_and_logs_are_named_by_url_or_object() {
        assert_eq!(StoreSpec::parse(&json!("memory")), Ok(StoreSpec::Memory));
        assert_eq!(StoreSpec::parse(&json!("memory://")), Ok(StoreSpec::Memory));
        assert_eq!(
            StoreSpec::parse(&json!("sqlite:///tmp/a.db")),
            Ok(StoreSpec::Sqlite("/tmp/a.db".into()))
        );
        assert_eq!(
            StoreSpec::parse(&json!("sqlite://rel/a.db")),
            Ok(StoreSpec::Sqlite("rel/a.db".into()))
        );
        assert_eq!(
            StoreSpec::parse(&json!("sqlite:a.db")),
            Ok(StoreSpec::Sqlite("a.db".into()))
        );
        assert_eq!(
            StoreSpec::parse(&json!({"sqlite": "a.db"})),
            Ok(StoreSpec::Sqlite("a.db".into()))
        );
        assert_eq!(
            AuditSpec::parse(&json!("jsonl:///var/log/a.jsonl")),
            Ok(AuditSpec::Jsonl("/var/log/a.jsonl".into()))
        );
        assert_eq!(
            StoreSpec::parse(&json!("postgres://127.0.0.1/test?schema=t1")),
            Ok(StoreSpec::Postgres(
                "postgres://127.0.0.1/test?schema=t1".into()
            ))
        );
        assert_eq!(
            StoreSpec::parse(&json!({"postgres": "postgresql://h/db"})),
            Ok(StoreSpec::Postgres("postgresql://h/db".into()))
        );
        assert!(StoreSpec::parse(&json!("jsonl://a")).is_err());
        assert!(StoreSpec::parse(&json!("sqlite://")).is_err());
        assert!(StoreSpec::parse(&json!("nope")).is_err());
        assert!(StoreSpec::parse(&json!(3)).is_err());
        let spec = StoreSpec::Sqlite("/tmp/x.db".into());
        assert_eq!(StoreSpec::parse(&json!(spec.to_url())), Ok(spec));
    }

    #[test]
    fn options_name_the_option_at_fault() {
        let e = EngineOptions::from_value(json!({"limits": {"max_depth": "deep"}})).unwrap_err();
        assert_eq!(e.option, "limits");
        let e = EngineOptions::from_value(json!({"limit": {}})).unwrap_err();
        assert_eq!(e.option, "limit");
        assert!(e.message.contains("unknown option"));
        let e = EngineOptions::from_value(json!({"external_expiry_ms": -1})).unwrap_err();
        assert_eq!(e.option, "external_expiry_ms");
        let o = EngineOptions::from_value(json!({
            "limits": {"max_depth": 3},
            "state_store": "memory",
            "audit": null,
        }))
        .unwrap();
        assert_eq!(o.limits.unwrap().max_depth, 3);
        assert_eq!(o.state_store, Some(StoreSpec::Memory));
        assert_eq!(o.audit, None);
        assert!(o.build().is_ok());
    }
}
