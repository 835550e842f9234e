//! Step 10: what a tool returned, checked against its size limit and output schema.

use crate::depth;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::policy::OversizeOutput;
use crate::registry::RegisteredTool;
use crate::schema::Verdict;
use serde_json::Value;

/// The marker appended to a truncated output.
pub const TRUNCATION_MARKER: &str = "…[truncated by tooljig:";

/// Checks data against the tool's output schema and size limit, and that it nests no
/// deeper than [`depth::MAX_DEPTH`] (deeper data could be stored but never read back).
pub fn check_output(tool: &RegisteredTool, data: Value) -> Envelope {
    if depth::deeper_than(&data, depth::MAX_DEPTH) {
        return Envelope::Error(ToolError::new(
            ErrorCode::InvalidOutput,
            format!(
                "the tool returned data nested deeper than {} levels; flatten it",
                depth::MAX_DEPTH
            ),
        ));
    }
    if let Some(schema) = &tool.output {
        let problems = problems(schema.check(&data));
        if !problems.is_empty() {
            let message = problems.join("; ");
            return Envelope::Error(ToolError::new(
                ErrorCode::InvalidOutput,
                format!("the tool returned data that does not match its output schema: {message}"),
            ));
        }
    }
    let Some(limit) = tool.spec.policy.max_output_bytes else {
        return Envelope::Ok(data);
    };
    let text = match &data {
        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        other => std::borrow::Cow::Owned(serde_json::to_string(other).unwrap_or_default()),
    };
    if text.len() <= limit {
        return Envelope::Ok(data);
    }
    match tool.spec.policy.on_output_too_large {
        OversizeOutput::Error => Envelope::Error(
            ToolError::new(
                ErrorCode::OutputTooLarge,
                format!(
                    "the tool's output is {} bytes; the limit is {limit} bytes",
                    text.len()
                ),
            )
            .with("limit_bytes", limit)
            .with("output_bytes", text.len()),
        ),
        OversizeOutput::Truncate => {
            let mut cut = limit;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Envelope::Ok(Value::String(format!(
                "{}{TRUNCATION_MARKER} {} of {} bytes shown]",
                &text[..cut],
                cut,
                text.len()
            )))
        }
    }
}

fn problems(v: Verdict) -> Vec<String> {
    match v {
        Verdict::Valid => Vec::new(),
        Verdict::Needs(f) => f
            .into_iter()
            .map(|f| format!("{f:?} is a required property"))
            .collect(),
        Verdict::Invalid(v) => v
            .into_iter()
            // Same phrasing as invalid_arguments: the root has no pointer to show.
            .map(|v| {
                if v.pointer.is_empty() {
                    v.message
                } else {
                    format!("at {}: {}", v.pointer, v.message)
                }
            })
            .collect(),
    }
}

/// An error from app code (a handler, a client) as it may be stored: details nested deeper
/// than [`depth::MAX_DEPTH`] are dropped (the code and message stay), with a note for the
/// app saying so.
pub fn bounded_error(mut error: ToolError) -> (ToolError, Option<String>) {
    if error
        .details
        .values()
        .any(|v| depth::deeper_than(v, depth::MAX_DEPTH - 1))
    {
        error.details.clear();
        let note = format!(
            "the error's details nested deeper than {} levels and were dropped",
            depth::MAX_DEPTH
        );
        return (error, Some(note));
    }
    (error, None)
}
