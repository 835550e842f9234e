//! Redis connections for the coordination backends (shared rate limits, the shared result
//! cache, the state store, wake-ups): one multiplexed connection per backend that reconnects
//! by itself, and the key prefix every key goes under.
//!
//! A Redis Cluster (`redis+cluster://host:port,host:port`) works the same way: the prefix
//! becomes a hash tag (`{tooljig:}`), so every key of one prefix lives in one slot and each
//! Lua script keeps its atomicity (Redis runs a script on one node, over keys of one slot).
//! The cluster gives failover, not sharding of one prefix: apps that need more throughput use
//! a prefix per tenant. Pub/sub goes to one node, since a cluster forwards every `PUBLISH`
//! to all of its nodes.

use ::redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use ::redis::cluster::ClusterClient;
use ::redis::cluster_async::ClusterConnection;
use ::redis::{Cmd, Pipeline, RedisFuture, Value};
use std::time::Duration;
use tokio::sync::OnceCell;

/// How long connecting, or one command, may take before it counts as a failure.
const WAIT: Duration = Duration::from_secs(2);

/// A Redis server and the prefix of this backend's keys. Connects on first use, so opening
/// never blocks and a server that is down only fails the operations that need it.
pub struct Redis {
    /// One server, or a cluster's nodes in the order pub/sub tries them.
    clients: Vec<::redis::Client>,
    /// The cluster's nodes, when it is one.
    cluster: Option<ClusterClient>,
    prefix: String,
    connection: OnceCell<Connection>,
}

/// A connection to one server or to a cluster; a clone shares it.
#[derive(Clone)]
pub enum Connection {
    /// One server.
    Single(ConnectionManager),
    /// A cluster: each command goes to the node serving its key's slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(cmd, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// The server at `url` (`redis://host:port/db`), or the cluster whose nodes
    /// `redis+cluster://host:port,host:port` names (any of them will do to find the others),
    /// keys under `?prefix=NAME` (default `tooljig:`; tests use one each).
    pub fn open(url: &str) -> Result<Self, String> {
        let (url, prefix) = split_prefix(url);
        let Some(nodes) = url.strip_prefix("redis+cluster://") else {
            let client = ::redis::Client::open(url.as_str())
                .map_err(|e| format!("{url} is not a Redis URL: {e}"))?;
            return Ok(Redis {
                clients: vec![client],
                cluster: None,
                prefix,
                connection: OnceCell::new(),
            });
        };
        let (nodes, query) = nodes.split_once('?').unwrap_or((nodes, ""));
        let nodes = nodes.trim_end_matches('/');
        if nodes.contains('/') {
            return Err(format!(
                "{url}: a Redis Cluster has one database; name no /DB after its nodes"
            ));
        }
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("/?{query}")
        };
        let urls: Vec<String> = nodes
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| format!("redis://{n}{query}"))
            .collect();
        if urls.is_empty() {
            return Err(format!("{url} names no cluster node"));
        }
        let clients = urls
            .iter()
            .map(|u| ::redis::Client::open(u.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{url} is not a Redis Cluster URL: {e}"))?;
        let cluster = ClusterClient::builder(urls.iter().map(String::as_str))
            .connection_timeout(WAIT)
            .response_timeout(WAIT)
            .retries(1)
            .build()
            .map_err(|e| format!("{url} is not a Redis Cluster URL: {e}"))?;
        Ok(Redis {
            clients,
            cluster: Some(cluster),
            prefix: hash_tagged(&prefix),
            connection: OnceCell::new(),
        })
    }

    /// A connection of its own for pub/sub (a subscribed connection can do nothing else): to
    /// the server, or to the first cluster node that answers.
    pub async fn pubsub(&self) -> Result<::redis::aio::PubSub, String> {
        let mut why = String::from("Redis is unreachable: no node");
        for client in &self.clients {
            match tokio::time::timeout(WAIT, client.get_async_pubsub()).await {
                Ok(Ok(pubsub)) => return Ok(pubsub),
                Ok(Err(e)) => why = format!("Redis is unreachable: {e}"),
                Err(_) => why = "Redis is unreachable: connecting timed out".into(),
            }
        }
        Err(why)
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
    pub async fn connection(&self) -> Result<Connection, String> {
        self.connection
            .get_or_try_init(|| async {
                let unreachable = |e: ::redis::RedisError| format!("Redis is unreachable: {e}");
                if let Some(cluster) = &self.cluster {
                    let connected = tokio::time::timeout(WAIT, cluster.get_async_connection())
                        .await
                        .map_err(|_| "Redis is unreachable: connecting timed out".to_string())?;
                    return connected.map(Connection::Cluster).map_err(unreachable);
                }
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(WAIT))
                    .set_response_timeout(Some(WAIT))
                    .set_number_of_retries(1);
                let Some(client) = self.clients.first() else {
                    return Err("Redis is unreachable: no server".to_string());
                };
                ConnectionManager::new_with_config(client.clone(), config)
                    .await
                    .map(Connection::Single)
                    .map_err(unreachable)
            })
            .await
            .cloned()
    }
}

/// `prefix` as a hash tag, so a cluster keeps all its keys in one slot; a prefix that holds
/// one (`{app}:`) is the app's choice and stays.
fn hash_tagged(prefix: &str) -> String {
    let tagged = prefix
        .find('{')
        .is_some_and(|open| prefix[open..].find('}').is_some_and(|close| close > 1));
    if tagged {
        prefix.to_string()
    } else {
        format!("{{{prefix}}}")
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

    #[test]
    fn a_cluster_keeps_a_prefix_in_one_slot() {
        assert_eq!(hash_tagged("tooljig:"), "{tooljig:}");
        assert_eq!(hash_tagged("{acme}:tj:"), "{acme}:tj:");
        assert_eq!(hash_tagged("a{}b"), "{a{}b}");
        let cluster = Redis::open("redis+cluster://h1:7000,h2:7001?prefix=t1:").unwrap();
        assert_eq!(cluster.prefix(), "{t1:}");
        assert!(Redis::open("redis+cluster://h1:7000/2").is_err());
        assert!(Redis::open("redis+cluster://").is_err());
    }
}
