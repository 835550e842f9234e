//! Wake-ups between processes through Redis pub/sub: one channel per key prefix
//! (`PREFIX wake`), a message holding the topics woken together, one per line.

use super::{Deliver, EVERY_TOPIC, WakeBus};
use crate::handler::BoxFuture;
use crate::redis::Redis;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// How long a listener whose connection failed waits before connecting again.
const RECONNECT: Duration = Duration::from_millis(500);

/// The wake-up bus of the processes that share one Redis prefix.
pub struct RedisBus {
    redis: Arc<Redis>,
    channel: String,
}

impl RedisBus {
    /// The bus on `redis`'s server, apart from other prefixes.
    pub fn new(redis: Arc<Redis>) -> Self {
        let channel = redis.key("wake", "");
        RedisBus { redis, channel }
    }
}

impl WakeBus for RedisBus {
    fn publish(&self, topics: Vec<String>) -> BoxFuture<Result<(), String>> {
        let (redis, channel) = (self.redis.clone(), self.channel.clone());
        Box::pin(async move {
            let mut conn = redis.connection().await?;
            ::redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(topics.join("\n"))
                .query_async::<i64>(&mut conn)
                .await
                .map(|_| ())
                .map_err(|e| format!("Redis: {e}"))
        })
    }

    fn listen(&self, deliver: Deliver) {
        let (redis, channel) = (self.redis.clone(), self.channel.clone());
        tokio::spawn(async move {
            loop {
                let subscribed = async {
                    let mut pubsub = redis.pubsub().await?;
                    pubsub
                        .subscribe(&channel)
                        .await
                        .map_err(|e| format!("Redis: {e}"))?;
                    Ok::<_, String>(pubsub.into_on_message())
                };
                match subscribed.await {
                    Ok(mut messages) => {
                        deliver(EVERY_TOPIC);
                        while let Some(msg) = messages.next().await {
                            let payload = String::from_utf8_lossy(msg.get_payload_bytes());
                            payload.split('\n').for_each(|topic| deliver(topic));
                        }
                        tracing::warn!(target: "tooljig::wakeup", "the Redis wake-up subscription closed; subscribing again");
                    }
                    Err(e) => {
                        tracing::warn!(target: "tooljig::wakeup", error = %e, "cannot listen for wake-ups")
                    }
                }
                tokio::time::sleep(RECONNECT).await;
            }
        });
    }
}
