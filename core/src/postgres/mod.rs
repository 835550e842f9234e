//! PostgreSQL connections for the backends that live there: one pool per database URL, the
//! `schema` the tables go in, TLS as the URL's `sslmode` asks (`tls.rs`), and versioned
//! migrations applied once, however many workers start at the same moment.

mod tls;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tls::{MakeRustlsConnect, TlsParams};
use tokio::sync::OnceCell;
use tokio_postgres::tls::MakeTlsConnect;

/// A connection outside the pool, as [`Database::dedicated`] opens it (TLS or not, as the
/// URL says).
pub type Connection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// One step of a component's schema. `sql` may hold several statements; `{schema}` stands
/// for the quoted schema name.
pub struct Migration {
    /// Applied in increasing order, each once per schema.
    pub version: i32,
    /// What the step runs.
    pub sql: &'static str,
}

/// Most connections one component (the state store, the audit sink) keeps to its database:
/// room for the state store's four write groups and two read groups in flight, and a list
/// or sweep beside them. Small, because every worker process holds its own pools and
/// PostgreSQL's default `max_connections` is 100.
const POOL_SIZE: usize = 8;
/// How long connecting, or waiting for a free connection, may take before an operation
/// fails (a database that is down must not hang the calls that need it).
const WAIT: Duration = Duration::from_secs(5);
/// The advisory lock migrations run under, the same in every process and language.
const MIGRATION_LOCK: i64 = 0x0074_6f6f_6c6a_6967; // "tooljig"

/// A database, its schema and a component's migrations (state, audit).
pub struct Database {
    pool: Pool,
    /// How to connect, for a connection of its own outside the pool (`LISTEN`).
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    schema: String,
    component: &'static str,
    migrations: &'static [Migration],
    ready: OnceCell<()>,
}

impl Database {
    /// The database at `url` (libpq's URL, plus `?schema=NAME`, default `tooljig`; `sslmode`
    /// and `sslrootcert` as libpq reads them, see `tls.rs`). Nothing connects until the first
    /// [`Database::client`].
    pub fn open(
        url: &str,
        component: &'static str,
        migrations: &'static [Migration],
    ) -> Result<Self, String> {
        let (conninfo, schema, tls) = split_url(url)?;
        let mut config: tokio_postgres::Config = conninfo
            .parse()
            .map_err(|e| format!("{} is not a PostgreSQL URL: {e}", redact(url)))?;
        let (mode, tls) = tls.connector()?;
        config.ssl_mode(mode);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        if config.get_application_name().is_none() {
            config.application_name("tooljig");
        }
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .build()
            .map_err(|e| format!("cannot make a connection pool: {e}"))?;
        Ok(Database {
            pool,
            config,
            tls,
            schema,
            component,
            migrations,
            ready: OnceCell::new(),
        })
    }

    /// A connection of its own, outside the pool, driven by `on_message` until it closes:
    /// for one that listens, and must not go back to the pool with its `LISTEN`s.
    pub async fn dedicated(&self) -> Result<(tokio_postgres::Client, Connection), String> {
        self.config
            .connect(self.tls.clone())
            .await
            .map_err(|e| format!("PostgreSQL is unreachable: {}", describe(&e)))
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// `name` qualified by the schema, ready for SQL.
    pub fn table(&self, name: &str) -> String {
        format!("\"{}\".{name}", self.schema)
    }

    /// A pooled connection, after the component's migrations are applied.
    pub async fn client(&self) -> Result<deadpool_postgres::Object, String> {
        let mut client = self.pool.get().await.map_err(|e| match e {
            // The pool's own wording is only "db error": say what the database said.
            deadpool_postgres::PoolError::Backend(e) => {
                format!("PostgreSQL is unreachable: {}", describe(&e))
            }
            e => format!("PostgreSQL is unreachable: {e}"),
        })?;
        self.ready
            .get_or_try_init(|| migrate(&mut client, &self.schema, self.component, self.migrations))
            .await?;
        Ok(client)
    }
}

/// Applies the migrations `component` lacks, in one transaction under an advisory lock: a
/// worker that waited for the lock finds them applied by the one that held it.
async fn migrate(
    client: &mut deadpool_postgres::Object,
    schema: &str,
    component: &str,
    migrations: &[Migration],
) -> Result<(), String> {
    let quoted = format!("\"{schema}\"");
    let tx = client.transaction().await.map_err(|e| describe(&e))?;
    let step =
        |e: tokio_postgres::Error| format!("migrating {schema}.{component}: {}", describe(&e));
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(step)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {quoted};
         CREATE TABLE IF NOT EXISTS {quoted}.tooljig_migrations (
             component TEXT NOT NULL,
             version INTEGER NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
             PRIMARY KEY (component, version)
         );"
    ))
    .await
    .map_err(step)?;
    let applied: Vec<i32> = tx
        .query(
            &format!("SELECT version FROM {quoted}.tooljig_migrations WHERE component = $1"),
            &[&component],
        )
        .await
        .map_err(step)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for m in migrations.iter().filter(|m| !applied.contains(&m.version)) {
        tx.batch_execute(&m.sql.replace("{schema}", &quoted))
            .await
            .map_err(step)?;
        tx.execute(
            &format!(
                "INSERT INTO {quoted}.tooljig_migrations (component, version) VALUES ($1, $2)"
            ),
            &[&component, &m.version],
        )
        .await
        .map_err(step)?;
    }
    tx.commit().await.map_err(step)
}

/// What went wrong, with the server's own message and SQLSTATE when it sent one.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// The URL without the parameters tooljig reads itself, the schema (checked: letters,
/// digits and `_`, as PostgreSQL names unquoted) and what the URL asks of TLS.
fn split_url(url: &str) -> Result<(String, String, TlsParams), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut schema = "tooljig".to_string();
    let mut tls = TlsParams::default();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", name)) => schema = name.to_string(),
            Some((key, value)) if tls.take(key, value)? => {}
            _ => rest.push(pair),
        }
    }
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "schema {schema:?} is not a plain name (letters, digits, _; at most 63)"
        ));
    }
    let conninfo = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((conninfo, schema, tls))
}

/// `url` with its password hidden, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_comes_out_of_the_url() {
        let (conninfo, schema, _) =
            split_url("postgres://u@h/db?schema=t_1&sslmode=require&connect_timeout=3").unwrap();
        assert_eq!(
            (conninfo.as_str(), schema.as_str()),
            ("postgres://u@h/db?connect_timeout=3", "t_1")
        );
        let (conninfo, schema, _) = split_url("postgres://h/db").unwrap();
        assert_eq!(
            (conninfo.as_str(), schema.as_str()),
            ("postgres://h/db", "tooljig")
        );
        assert!(split_url("postgres://h/db?schema=a;drop").is_err());
        assert!(split_url("postgres://h/db?schema=").is_err());
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redact("postgres://ana:secret@h/db"),
            "postgres://ana:***@h/db"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }
}
