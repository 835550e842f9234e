//! One call ready to run: what its steps read and change, once its dependencies are done.
//!
//! The batch driver (`engine/batch.rs`) builds a job per call and hands it to its task;
//! `execute.rs` walks it through steps 3 to 11, and the guard and durable steps it calls take
//! the job (and only the engine part they need) rather than the whole engine.

use crate::call::CallResult;
use crate::caller::Caller;
use crate::envelope::Envelope;
use crate::events::{Event, EventSender};
use crate::handler::HostData;
use crate::registry::RegisteredTool;
use crate::tool_calls::{Door, ParentCall};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything one call needs to run, handed to its task.
pub struct Job {
    /// The call's id.
    pub id: Arc<str>,
    /// The tool.
    pub tool: Arc<RegisteredTool>,
    /// Arguments with references substituted; steps 3 (hidden) and 8 (an approved edit)
    /// change them, and what runs is what they hold then.
    pub arguments: Value,
    /// Whether parsing repaired them.
    pub repaired: bool,
    /// The caller.
    pub caller: Arc<Caller>,
    /// Cancelled with the batch.
    pub cancel: CancellationToken,
    /// When the batch started.
    pub batch_start: Instant,
    /// Where events go, if anyone listens.
    pub events: Option<EventSender>,
    /// Where progress reports alone go ([`crate::BatchOptions::progress`]).
    pub progress: Option<EventSender>,
    /// Handed to app code (handlers, hooks, resolvers, predicates) as the binding's host.
    pub host: Option<HostData>,
    /// What its handler calls tools through, when its tool may (`may_call`).
    pub(crate) door: Option<Arc<Door>>,
    /// The call whose handler asked for this one's batch, when it is nested.
    pub parent: Option<Box<ParentCall>>,
}

impl Job {
    /// Microseconds since the batch started.
    pub fn since_start(&self) -> u64 {
        self.micros_at(Instant::now())
    }

    /// Microseconds from the batch's start to `at`, a time the caller already read.
    pub fn micros_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.batch_start).as_micros() as u64
    }

    /// Sends an event stamped with the batch clock, when anyone listens.
    pub fn emit(&self, make: impl FnOnce(u64) -> Event) {
        if let Some(tx) = &self.events {
            let _ = tx.send(make(self.since_start()));
        }
    }

    /// Ends the call without running it: `result` gets the envelope, the finish time and the
    /// arguments as they stood.
    pub fn refuse(&mut self, result: &mut CallResult, envelope: Envelope) {
        result.envelope = envelope;
        result.finished_us = self.since_start();
        result.arguments = Some(std::mem::take(&mut self.arguments));
    }
}
