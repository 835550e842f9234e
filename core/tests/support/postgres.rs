//! A scratch schema in the test database for one test: its URL, dropped when it goes out of scope. The
//! database is `$TOOLJIG_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`);
//! when it cannot be reached the test is skipped with a message, except under `CI=true`,
//! where that is a failure.

#![allow(dead_code)] // each test uses what it needs

use tokio_postgres::NoTls;

/// The test database's URL.
pub fn base_url() -> String {
    std::env::var("TOOLJIG_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A schema of one test's own.
pub struct Scratch {
    /// The database URL with `?schema=` naming the scratch schema.
    pub url: String,
    /// The scratch schema.
    pub schema: String,
}

impl Scratch {
    /// A new scratch schema name (nothing is created until a store opens it), or `None`
    /// when the database is unreachable outside CI.
    pub async fn new(tag: &str) -> Option<Scratch> {
        let base = base_url();
        if let Err(e) = tokio_postgres::connect(&base, NoTls).await {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL at {base} is unreachable under CI=true: {e}"
            );
            eprintln!("skipped: PostgreSQL at {base} is unreachable: {e}");
            return None;
        }
        let schema = format!("tj_{tag}_{}", uuid::Uuid::new_v4().simple());
        let sep = if base.contains('?') { '&' } else { '?' };
        Some(Scratch {
            url: format!("{base}{sep}schema={schema}"),
            schema,
        })
    }

    /// Runs `sql` in the test database.
    pub async fn execute(&self, sql: &str) -> Result<u64, tokio_postgres::Error> {
        let (client, conn) = tokio_postgres::connect(&base_url(), NoTls).await?;
        tokio::spawn(conn);
        client.execute(sql, &[]).await
    }
}

impl Drop for Scratch {
    /// Drops the schema and everything in it, also when the test failed. On a thread of its
    /// own: a test's runtime cannot be blocked on from inside.
    fn drop(&mut self) {
        let schema = self.schema.clone();
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&base_url(), NoTls).await?;
                tokio::spawn(conn);
                client
                    .execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"), &[])
                    .await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(_))) {
            eprintln!("the scratch schema {} was not dropped", self.schema);
        }
    }
}
