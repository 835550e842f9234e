//! Events: what happens in a batch, as it happens, for telemetry and streaming.

use crate::call::CallResult;
use crate::envelope::ToolError;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

/// One thing that happened in a batch. `at_us` counts µs since the batch started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The batch was planned.
    BatchStarted {
        /// µs since the batch started.
        at_us: u64,
        /// Calls in the batch.
        calls: usize,
        /// The batch's run id, as its handlers see it (`ToolContext::run_id`) and as
        /// `BatchResult::run_id` gives it when the run is kept: with a state store the app
        /// gave, the run is written before its first call, so `Engine::cancel_run` stops it
        /// from anywhere while it runs (without one, the batch's cancel token does).
        run_id: String,
    },
    /// A call passed planning; it waits for `depends_on`.
    CallPlanned {
        /// µs since the batch started.
        at_us: u64,
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// Every call it waits for: declared, referenced and by tool ordering.
        depends_on: Vec<String>,
    },
    /// An attempt of a call started.
    CallStarted {
        /// µs since the batch started.
        at_us: u64,
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// 1 for the first attempt.
        attempt: u32,
    },
    /// A running call reported progress (`ctx.progress`): how far it is, or a partial
    /// output before its result. Never validated, stored or audited.
    CallProgress {
        /// µs since the batch started.
        at_us: u64,
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// Share of the work done, 0 to 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        /// What it is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// A preliminary output.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<serde_json::Value>,
    },
    /// An attempt failed and another will follow after `delay_ms`.
    CallRetried {
        /// µs since the batch started.
        at_us: u64,
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// The attempt that failed.
        attempt: u32,
        /// Backoff before the next attempt.
        delay_ms: u64,
        /// Why the attempt failed.
        error: ToolError,
    },
    /// A call finished (or was refused); carries its result.
    CallFinished {
        /// µs since the batch started.
        at_us: u64,
        /// The result.
        result: CallResult,
    },
    /// Every call of the batch has a result.
    BatchFinished {
        /// µs since the batch started.
        at_us: u64,
        /// Wall time of the batch.
        duration_us: u64,
    },
}

/// Where a batch sends its events. Cheap to clone; sending never blocks.
pub type EventSender = UnboundedSender<Event>;
