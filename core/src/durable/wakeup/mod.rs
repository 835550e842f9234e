//! Wake-ups: a call that waits on something another call holds (a duplicate waiting for the
//! call with its idempotency key, a resume waiting for the pass that runs the run, a pass
//! told to stop) is woken the moment it changes, in this process or in any other that
//! shares the state store.
//!
//! In one process a wake-up is a [`Notify`] per topic. Between processes it travels on the
//! store's [`WakeBus`] (PostgreSQL `LISTEN`/`NOTIFY`, Redis pub/sub), when it has one: the
//! topics woken while one message is on its way go together in the next, so a busy process
//! sends few. A bus is only ever a shortcut: a wake-up can be lost (a dropped connection, a
//! process that starts listening late), so every wait still reads the store again after a
//! while, just not often (see [`Wakeups::patience`]).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;

#[cfg(feature = "postgres")]
pub use postgres::PostgresBus;
#[cfg(feature = "redis")]
pub use redis::RedisBus;

use crate::handler::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;

/// What a bus calls with each topic it hears.
pub type Deliver = Arc<dyn Fn(&str) + Send + Sync>;

/// Carries wake-ups between the processes that share a state store.
pub trait WakeBus: Send + Sync + 'static {
    /// Tells every listening process (this one included) that these topics changed; `Err`
    /// says why not (it is only logged: the waiters read the store again soon enough).
    fn publish(&self, topics: Vec<String>) -> BoxFuture<Result<(), String>>;

    /// Calls `deliver` with every topic any process publishes, from now until the process
    /// ends, reconnecting by itself after a failure, and with [`EVERY_TOPIC`] each time it has
    /// (again) subscribed. Called once per engine.
    fn listen(&self, deliver: Deliver);
}

/// What a bus delivers as soon as it listens, and again after each reconnection: the
/// wake-ups published before were lost to this process, so every waiter here reads the
/// store again at once. (A run cancelled the moment it started, before its process had
/// subscribed, otherwise stopped only at its lease's next beat, seconds later.) No topic
/// the engine wakes is spelled like this.
pub const EVERY_TOPIC: &str = "*";

/// The topic of an idempotency key: woken when the call holding it finishes or lets go.
pub(crate) fn key_topic(key: &str) -> String {
    format!("key/{key}")
}

/// The topic of a run: woken when a pass gives the run up (a resume waiting may claim it).
pub(crate) fn run_topic(run_id: &str) -> String {
    format!("run/{run_id}")
}

/// The topic of a run's cancellation: woken when someone asks the run to stop.
pub(crate) fn cancel_topic(run_id: &str) -> String {
    format!("cancel/{run_id}")
}

/// The topic of a run's approvals: woken when one of them is decided.
pub(crate) fn decided_topic(run_id: &str) -> String {
    format!("decided/{run_id}")
}

/// The waiters of this process by topic, and the bus to the others.
#[derive(Default)]
pub struct Wakeups {
    local: Arc<Local>,
    bus: Option<Arc<dyn WakeBus>>,
    listening: OnceLock<()>,
    outbox: Arc<Mutex<Outbox>>,
}

#[derive(Default)]
struct Local(Mutex<HashMap<String, Arc<Notify>>>);

/// Topics waiting to be published, and whether a task is publishing.
#[derive(Default)]
struct Outbox {
    topics: Vec<String>,
    sending: bool,
}

impl Local {
    fn wake(&self, topic: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if topic == EVERY_TOPIC {
            map.drain().for_each(|(_, n)| n.notify_waiters());
        } else if let Some(n) = map.remove(topic) {
            n.notify_waiters();
        }
    }
}

impl Wakeups {
    /// Wake-ups within this process and, with `bus`, between processes.
    pub fn new(bus: Option<Arc<dyn WakeBus>>) -> Self {
        Wakeups {
            bus,
            ..Default::default()
        }
    }

    /// The notifier of `topic`; register interest (`notified().enable()`) before reading
    /// the state it guards, then wait on it. Starts listening to the bus on first use.
    pub fn watch(&self, topic: &str) -> Arc<Notify> {
        if let Some(bus) = &self.bus {
            self.listening.get_or_init(|| {
                let local = self.local.clone();
                bus.listen(Arc::new(move |topic: &str| local.wake(topic)));
            });
        }
        let mut map = self.local.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(topic.to_string()).or_default().clone()
    }

    /// A watch of `topic` whose wake-up is armed now, before the caller reads the state it
    /// guards: a wake-up reaches only armed waiters. Hand the notifier back to
    /// [`Wakeups::forget`] once done.
    pub fn armed(
        &self,
        topic: &str,
    ) -> (
        Arc<Notify>,
        std::pin::Pin<Box<tokio::sync::futures::OwnedNotified>>,
    ) {
        let asked = self.watch(topic);
        let mut woken = Box::pin(asked.clone().notified_owned());
        woken.as_mut().enable();
        (asked, woken)
    }

    /// Drops `mine` from the map when no other waiter shares it.
    pub fn forget(&self, topic: &str, mine: &Arc<Notify>) {
        let mut map = self.local.0.lock().unwrap_or_else(|p| p.into_inner());
        // Only the map and this waiter hold it: nobody else is waiting.
        if map.get(topic).is_some_and(|n| Arc::ptr_eq(n, mine)) && Arc::strong_count(mine) == 2 {
            map.remove(topic);
        }
    }

    /// Wakes the waiters of `topic` here at once, and sends it to the other processes.
    pub fn wake(&self, topic: String) {
        self.local.wake(&topic);
        let Some(bus) = &self.bus else { return };
        let mut outbox = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
        outbox.topics.push(topic);
        if outbox.sending {
            return;
        }
        outbox.sending = true;
        let (bus, outbox) = (bus.clone(), self.outbox.clone());
        tokio::spawn(async move {
            loop {
                let topics = {
                    let mut o = outbox.lock().unwrap_or_else(|p| p.into_inner());
                    if o.topics.is_empty() {
                        o.sending = false;
                        return;
                    }
                    std::mem::take(&mut o.topics)
                };
                if let Err(e) = bus.publish(topics).await {
                    // The waiters elsewhere read the store again soon enough.
                    tracing::warn!(target: "tooljig::wakeup", error = %e, "a wake-up was not sent");
                }
            }
        });
    }

    /// Reads `check` until it answers: armed on `topic` before each read (so a wake-up
    /// between the read and the wait is not lost), then waits for the topic's wake-up, at most
    /// [`Wakeups::patience`], and reads again. `None` when `deadline` passed, or `stop` fired,
    /// before `check` answered.
    pub async fn read_until<T, F, Fut>(
        &self,
        topic: &str,
        deadline: tokio::time::Instant,
        stop: Option<&tokio_util::sync::CancellationToken>,
        mut check: F,
    ) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        loop {
            let (asked, woken) = self.armed(topic);
            let answer = check().await;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if answer.is_some() || left.is_zero() {
                self.forget(topic, &asked);
                return answer;
            }
            let stopped = async {
                match stop {
                    Some(stop) => stop.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let stopped = tokio::select! {
                _ = woken => false,
                _ = tokio::time::sleep(left.min(self.patience())) => false,
                _ = stopped => true,
            };
            self.forget(topic, &asked);
            if stopped {
                return None;
            }
        }
    }

    /// How long a waiter may go without reading the store again: short when wake-ups reach
    /// only this process (a waiter in another process polls), long when a bus carries them
    /// (reading again only covers a lost wake-up).
    pub fn patience(&self) -> Duration {
        match self.bus {
            Some(_) => Duration::from_secs(2),
            None => Duration::from_millis(250),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bus in memory that delivers to every listener, as a server would.
    #[derive(Default)]
    struct Loopback(Mutex<Vec<Deliver>>);

    impl WakeBus for Loopback {
        fn publish(&self, topics: Vec<String>) -> BoxFuture<Result<(), String>> {
            let listeners = self.0.lock().unwrap().clone();
            Box::pin(async move {
                for t in &topics {
                    listeners.iter().for_each(|l| l(t));
                }
                Ok(())
            })
        }
        fn listen(&self, deliver: Deliver) {
            self.0.lock().unwrap().push(deliver);
        }
    }

    /// A bus that subscribes only when told to, dropping what is published before, as a
    /// server does with a subscription still on its way.
    #[derive(Default)]
    struct Late(Mutex<Option<Deliver>>);

    impl WakeBus for Late {
        fn publish(&self, _topics: Vec<String>) -> BoxFuture<Result<(), String>> {
            Box::pin(async { Ok(()) })
        }
        fn listen(&self, deliver: Deliver) {
            *self.0.lock().unwrap() = Some(deliver);
        }
    }

    #[tokio::test]
    async fn waiters_armed_before_the_bus_listens_read_again_once_it_does() {
        let bus = Arc::new(Late::default());
        let wakeups = Wakeups::new(Some(bus.clone()));
        let (_asked, cancel) = wakeups.armed("cancel/r1");
        let (_also, key) = wakeups.armed("key/k");
        // Published elsewhere while the subscription was on its way: lost. Then subscribed.
        let deliver = bus
            .0
            .lock()
            .unwrap()
            .take()
            .expect("listening began with the watch");
        deliver(EVERY_TOPIC);
        for woken in [cancel, key] {
            tokio::time::timeout(Duration::from_millis(100), woken)
                .await
                .expect("woken to read the store again");
        }
    }

    #[tokio::test]
    async fn a_wake_up_reaches_a_waiter_of_another_engine_through_the_bus() {
        let bus: Arc<dyn WakeBus> = Arc::new(Loopback::default());
        let (a, b) = (Wakeups::new(Some(bus.clone())), Wakeups::new(Some(bus)));
        let n = b.watch("key/k");
        let woken = n.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        a.wake("key/k".into());
        tokio::time::timeout(Duration::from_secs(1), woken)
            .await
            .expect("woken through the bus");
        assert_eq!(b.patience(), Duration::from_secs(2));
        assert_eq!(Wakeups::new(None).patience(), Duration::from_millis(250));
    }
}
