//! `NativeStream`: the events of one batch, pulled by the JS layer's async iterator.
//!
//! Each `next()` resolves with every event available at that moment (at least one) as a JSON
//! array, so a burst of events costs one round trip; `null` means the batch is over.

use crate::engine::result_value;
use crate::keys;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tooljig::Event;

/// The events and the final result of a running batch.
#[napi(js_name = "NativeStream")]
pub struct JsStream {
    events: Arc<tokio::sync::Mutex<UnboundedReceiver<Event>>>,
    done: Arc<Mutex<Option<oneshot::Receiver<String>>>>,
}

impl JsStream {
    /// A stream over a batch's event receiver and the task that runs it.
    pub fn new(events: UnboundedReceiver<Event>, done: oneshot::Receiver<String>) -> Self {
        JsStream {
            events: Arc::new(tokio::sync::Mutex::new(events)),
            done: Arc::new(Mutex::new(Some(done))),
        }
    }
}

/// An event with camelCase keys; a `call_finished` event's result too. Values untouched.
pub fn event_value(event: Event) -> Value {
    let v = serde_json::to_value(&event).unwrap_or(Value::Null);
    let mut v = keys::rename(v, keys::camel, &[]);
    if let Some(result) = v.get_mut("result") {
        *result = result_value(result.take());
    }
    v
}

#[napi]
impl JsStream {
    /// The next events as JSON array text, or null once the batch has finished.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        let events = self.events.clone();
        env.spawn_future(async move {
            let mut rx = events.lock().await;
            let Some(first) = rx.recv().await else {
                return Ok(None);
            };
            let mut out = vec![event_value(first)];
            while let Ok(e) = rx.try_recv() {
                out.push(event_value(e));
            }
            Ok(Some(Value::Array(out).to_string()))
        })
    }

    /// The batch's results (as `NativeEngine.run` gives them), once it has finished.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn result<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
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
                    format!("the batch ended without a result: {e}"),
                )
            })
        })
    }
}
