//! The test servers the benches of shared backends use, and cleaning up after them.

/// `$TOOLJIG_POSTGRES_URL`, or this machine's PostgreSQL.
pub fn postgres_base() -> String {
    std::env::var("TOOLJIG_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// `$TOOLJIG_REDIS_URL`, or this machine's Redis.
pub fn redis_base() -> String {
    std::env::var("TOOLJIG_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Drops a bench's schema, if the server answers (a build without PostgreSQL made none).
#[cfg(feature = "postgres")]
pub fn drop_schema(rt: &tokio::runtime::Runtime, schema: &str) {
    let base = postgres_base();
    rt.block_on(async {
        if let Ok((client, conn)) = tokio_postgres::connect(&base, tokio_postgres::NoTls).await {
            tokio::spawn(conn);
            let _ = client
                .execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"), &[])
                .await;
        }
    });
}

/// Deletes a bench's keys, if the server answers (a build without Redis made none).
#[cfg(feature = "redis")]
pub fn drop_prefix(prefix: &str) {
    if let Ok(mut c) = redis::Client::open(redis_base().as_str()).and_then(|c| c.get_connection()) {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query(&mut c)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<u64, _> = redis::cmd("DEL").arg(keys).query(&mut c);
        }
    }
}
