//! Redis connections for the coordination backends (shared rate limits, the shared result
//! cache): one multiplexed connection per backend that reconnects by itself, and the key
//! prefix every key goes under.

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio::sync::OnceCell;

/// How long connecting, or one command, may take before it counts as a failure.
const WAIT: Duration = Duration::from_secs(2);

/// A Redis server and the prefix of this backend's keys. Connects on first use, so opening
/// never blocks and a server that is down only fails the operations that need it.
pub struct Redis {
    client: ::redis::Client,
    prefix: String,
    connection: OnceCell<ConnectionManager>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// The server at `url` (`redis://host:port/db`), keys under `?prefix=NAME` (default
    /// `tooljig:`; tests use one each).
    pub fn open(url: &str) -> Result<Self, String> {
        let (url, prefix) = split_prefix(url);
        let client = ::redis::Client::open(url.as_str())
            .map_err(|e| format!("{url} is not a Redis URL: {e}"))?;
        Ok(Redis {
            client,
            prefix,
            connection: OnceCell::new(),
        })
    }

    /// A connection of its own for pub/sub (a subscribed connection can do nothing else).
    pub async fn pubsub(&self) -> Result<::redis::aio::PubSub, String> {
        tokio::time::timeout(WAIT, self.client.get_async_pubsub())
            .await
            .map_err(|_| "Redis is unreachable: connecting timed out".to_string())?
            .map_err(|e| format!("Redis is unreachable: {e}"))
    }

    /// The prefix of every key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `parts` joined after the prefix: the key of one record.
    pub fn key(&self, kind: &str, rest: &str) -> String {
        format!("{}{kind}:{rest}", self.prefix)
    }

    /// The connection, made on first use; a clone shares it.
    pub async fn connection(&self) -> Result<ConnectionManager, String> {
        self.connection
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(WAIT))
                    .set_response_timeout(Some(WAIT))
                    .set_number_of_retries(1);
                ConnectionManager::new_with_config(self.client.clone(), config)
                    .await
                    .map_err(|e| format!("Redis is unreachable: {e}"))
            })
            .await
            .cloned()
    }
}

/// The URL without tooljig's `prefix` parameter, and the prefix.
fn split_prefix(url: &str) -> (String, String) {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut prefix = "tooljig:".to_string();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("prefix=") {
            Some(v) => prefix = v.to_string(),
            None => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    (url, prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_comes_out_of_the_url() {
        assert_eq!(
            split_prefix("redis://h:6379/2?prefix=t1:&protocol=resp3"),
            ("redis://h:6379/2?protocol=resp3".into(), "t1:".into())
        );
        assert_eq!(
            split_prefix("redis://h"),
            ("redis://h".into(), "tooljig:".into())
        );
    }
}
