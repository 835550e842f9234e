//! A key prefix in the test Redis for one test: its URL, and its keys deleted when it goes
//! out of scope. The server is `$TOOLJIG_REDIS_URL` (default `redis://127.0.0.1:6379`); when
//! it cannot be reached the test is skipped with a message, except under `CI=true`, where
//! that is a failure.

/// The test server's URL.
pub fn base_url() -> String {
    std::env::var("TOOLJIG_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A prefix of one test's own.
pub struct Prefix {
    /// The server URL with `?prefix=` naming the prefix.
    pub url: String,
    /// The prefix.
    pub prefix: String,
}

impl Prefix {
    /// A new prefix, or `None` when the server is unreachable outside CI.
    pub fn new(tag: &str) -> Option<Prefix> {
        let base = base_url();
        let reachable = redis::Client::open(base.as_str())
            .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(2)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        if let Err(e) = reachable {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "Redis at {base} is unreachable under CI=true: {e}"
            );
            eprintln!("skipped: Redis at {base} is unreachable: {e}");
            return None;
        }
        let prefix = format!("tj_{tag}_{}:", uuid::Uuid::new_v4().simple());
        Some(Prefix {
            url: format!("{base}?prefix={prefix}"),
            prefix,
        })
    }

    /// The keys under the prefix.
    pub fn keys(&self) -> Vec<String> {
        let mut c = redis::Client::open(base_url().as_str())
            .and_then(|c| c.get_connection())
            .expect("the test Redis answers");
        redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query(&mut c)
            .expect("KEYS answers")
    }
}

impl Drop for Prefix {
    fn drop(&mut self) {
        let keys = self.keys();
        if keys.is_empty() {
            return;
        }
        if let Ok(mut c) = redis::Client::open(base_url().as_str()).and_then(|c| c.get_connection())
        {
            let _: Result<u64, _> = redis::cmd("DEL").arg(keys).query(&mut c);
        }
    }
}
