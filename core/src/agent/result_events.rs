//! How a call's result shows in the stream, in one place: results streamed while a batch
//! runs, refused before it, or settled on resume all look the same to a consumer.

use super::context::Ctx;
use crate::call::{CallResult, CallStatus};
use crate::envelope::Envelope;
use crate::stream::StreamEvent;

/// The events that show one result.
pub(crate) fn result_events(r: &CallResult) -> Vec<StreamEvent> {
    let (call_id, tool) = (r.call_id.clone(), r.tool.clone());
    match r.status {
        CallStatus::PendingApproval => vec![StreamEvent::ToolApprovalRequest {
            call_id,
            tool,
            approval_id: r
                .approval
                .as_ref()
                .and_then(|a| a.id.clone())
                .unwrap_or_else(|| r.call_id.clone()),
        }],
        CallStatus::PendingExternal => vec![StreamEvent::ToolOutputPending {
            call_id,
            tool,
            input: r.arguments.clone().unwrap_or_default(),
        }],
        // Running in the background: the part stays `input-available` with a note of the job.
        CallStatus::PendingJob => vec![StreamEvent::ToolProgress {
            call_id,
            tool,
            fraction: None,
            message: Some(match background_job(r) {
                Some(job) => format!("accepted as job {job}"),
                None => "accepted as a background job".into(),
            }),
            output: None,
        }],
        // It will start when the calls it waits on are settled; nothing to show yet.
        CallStatus::Waiting => Vec::new(),
        CallStatus::Done => match &r.envelope {
            Envelope::Error(error) => vec![StreamEvent::ToolOutputError {
                call_id,
                tool,
                error: error.clone(),
            }],
            other => vec![StreamEvent::ToolOutputAvailable {
                call_id,
                tool,
                output: other.to_value(),
            }],
        },
    }
}

/// The reference of the background job a `pending_job` call waits on.
fn background_job(r: &CallResult) -> Option<&str> {
    match &r.envelope {
        Envelope::Error(e) => e.details.get("job").and_then(|j| j.as_str()),
        _ => None,
    }
}

pub(super) fn emit_result(ctx: &Ctx<'_>, r: &CallResult) {
    for e in result_events(r) {
        ctx.emit(e);
    }
}
