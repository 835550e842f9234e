//! Wake-ups between processes through PostgreSQL `LISTEN`/`NOTIFY`: one channel per schema
//! (`tooljig_wake_SCHEMA`), a notification holding the topics woken together, one per line.
//! The listener holds a connection of its own (a pooled one would carry its `LISTEN` to
//! whoever takes it next).

use super::{Deliver, EVERY_TOPIC, WakeBus};
use crate::handler::BoxFuture;
use crate::postgres::Database;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::AsyncMessage;

/// How long a listener whose connection failed waits before connecting again.
const RECONNECT: Duration = Duration::from_millis(500);

/// A notification's payload must stay under 8,000 bytes.
const PAYLOAD: usize = 7_000;

/// The wake-up bus of the processes that share one schema.
pub struct PostgresBus {
    db: Arc<Database>,
    channel: String,
}

impl PostgresBus {
    /// The bus of `db`'s schema. A channel name has at most 63 bytes: a longer schema is cut,
    /// and two schemas alike in their first 50 only wake each other's waiters needlessly.
    pub fn new(db: Arc<Database>) -> Self {
        let schema: String = db.schema().chars().take(50).collect();
        let channel = format!("tooljig_wake_{schema}");
        PostgresBus { db, channel }
    }
}

/// The topics in payloads small enough for `NOTIFY`.
fn payloads(topics: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for topic in topics {
        match out.last_mut() {
            Some(last) if last.len() + 1 + topic.len() <= PAYLOAD => {
                last.push('\n');
                last.push_str(topic);
            }
            _ => out.push(topic.clone()),
        }
    }
    out
}

impl WakeBus for PostgresBus {
    fn publish(&self, topics: Vec<String>) -> BoxFuture<Result<(), String>> {
        let (db, channel) = (self.db.clone(), self.channel.clone());
        Box::pin(async move {
            let client = db.client().await?;
            for payload in payloads(&topics) {
                client
                    .execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
                    .await
                    .map_err(|e| crate::postgres::describe(&e))?;
            }
            Ok(())
        })
    }

    fn listen(&self, deliver: Deliver) {
        let (db, channel) = (self.db.clone(), self.channel.clone());
        tokio::spawn(async move {
            loop {
                match db.dedicated().await {
                    Ok((client, mut connection)) => {
                        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                        // The connection delivers notifications only while it is polled.
                        let driver = tokio::spawn(async move {
                            let mut messages =
                                futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                            while let Some(Ok(m)) = messages.next().await {
                                if let AsyncMessage::Notification(n) = m {
                                    let _ = tx.send(n.payload().to_string());
                                }
                            }
                        });
                        let listen = format!("LISTEN \"{channel}\"");
                        match client.batch_execute(&listen).await {
                            Ok(()) => {
                                deliver(EVERY_TOPIC);
                                while let Some(payload) = rx.recv().await {
                                    payload.split('\n').for_each(|topic| deliver(topic));
                                }
                                tracing::warn!(target: "tooljig::wakeup", "the PostgreSQL wake-up connection closed; listening again");
                            }
                            Err(e) => {
                                tracing::warn!(target: "tooljig::wakeup", error = %crate::postgres::describe(&e), "cannot listen for wake-ups")
                            }
                        }
                        driver.abort();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_packed_into_payloads_notify_accepts() {
        let topics: Vec<String> = (0..1000).map(|i| format!("key/{i:064}")).collect();
        let packed = payloads(&topics);
        assert!(packed.len() > 1);
        assert!(packed.iter().all(|p| p.len() <= PAYLOAD));
        let back: Vec<&str> = packed.iter().flat_map(|p| p.split('\n')).collect();
        assert_eq!(back, topics.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
