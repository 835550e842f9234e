//! `NativeStream`: the events of one batch, pulled by the JS layer's async iterator; and
//! [`RunChannels`], what it shares with an agent run's `NativeAgentRun` (`agent.rs`).
//!
//! Each `next()` resolves with every event available at that moment (at least one) as a JSON
//! array, so a burst of events costs one round trip; `null` means the batch is over.

use crate::convert::camel_json::to_camel_json;
use crate::convert::shape::{self, Shape};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tooljig::Event;

/// The two ends a running batch or agent run hands the JS layer: its events, pulled a burst
/// at a time, and the JSON text its task sends when it ends.
pub struct RunChannels<T> {
    events: Arc<tokio::sync::Mutex<UnboundedReceiver<T>>>,
    done: Mutex<Option<oneshot::Receiver<String>>>,
}

impl<T: Serialize + Send + 'static> RunChannels<T> {
    /// Over a run's event receiver and the receiver of its end.
    pub fn new(events: UnboundedReceiver<T>, done: oneshot::Receiver<String>) -> Self {
        RunChannels {
            events: Arc::new(tokio::sync::Mutex::new(events)),
            done: Mutex::new(Some(done)),
        }
    }

    /// Every event available (waiting for the first) as JSON array text, the keys of the
    /// objects at `patterns` in camelCase (see `camel_json.rs`); null once the run is over.
    pub fn next<'env>(
        &self,
        env: &'env Env,
        shape: Shape,
    ) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        let events = self.events.clone();
        env.spawn_future(async move {
            let mut rx = events.lock().await;
            let Some(first) = rx.recv().await else {
                return Ok(None);
            };
            let mut out = vec![first];
            while let Ok(e) = rx.try_recv() {
                out.push(e);
            }
            Ok(Some(to_camel_json(&out, shape)))
        })
    }

    /// The run's end as its task sent it; once only. `what` names the run in the error when
    /// the task ended without sending it.
    pub fn result<'env>(
        &self,
        env: &'env Env,
        what: &'static str,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let done = self
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                napi::Error::new(Status::GenericFailure, "result() was already taken")
            })?;
        env.spawn_future(async move {
            done.await.map_err(|e| {
                napi::Error::new(
                    Status::GenericFailure,
                    format!("the {what} ended without a result: {e}"),
                )
            })
        })
    }
}

/// The events and the final result of a running batch.
#[napi(js_name = "NativeStream")]
pub struct JsStream {
    channels: RunChannels<Event>,
}

impl JsStream {
    /// A stream over a batch's event receiver and the task that runs it.
    pub fn new(events: UnboundedReceiver<Event>, done: oneshot::Receiver<String>) -> Self {
        JsStream {
            channels: RunChannels::new(events, done),
        }
    }
}

#[napi]
impl JsStream {
    /// The next events as JSON array text, or null once the batch has finished.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        self.channels.next(env, shape::BATCH_EVENTS)
    }

    /// The batch's results (as `NativeEngine.run` gives them), once it has finished.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn result<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        self.channels.result(env, "batch")
    }
}
