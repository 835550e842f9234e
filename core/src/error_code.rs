//! The closed set of error codes a model can see in an envelope.
//!
//! Codes are stable snake_case strings, identical in Rust, Python and Node. The table in
//! `docs/error-codes.md` gives each one's meaning, its mapping to the codes apps commonly use
//! and to MCP's `isError`; keep the two in step.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, retryable = $retry:literal; )*) => {
        /// Why a call did not produce data. One closed set, shared by every binding.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The wire spelling, e.g. `"unknown_tool"`.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $text,)* }
            }

            /// Whether an error with this code is worth retrying by default.
            pub fn default_retryable(self) -> bool {
                match self { $(ErrorCode::$variant => $retry,)* }
            }
        }

        impl FromStr for ErrorCode {
            type Err = UnknownErrorCode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(ErrorCode::$variant),)*
                    other => Err(UnknownErrorCode(other.to_string())),
                }
            }
        }
    };
}

error_codes! {
    /// No tool with that name is registered (or visible to the caller).
    UnknownTool = "unknown_tool", retryable = false;
    /// The call itself is malformed: a duplicate call id, an empty tool name.
    InvalidRequest = "invalid_request", retryable = false;
    /// The arguments are not JSON and could not be repaired.
    MalformedArguments = "malformed_arguments", retryable = false;
    /// The arguments were cut off mid-value (a truncated stream); never executed.
    IncompleteArguments = "incomplete_arguments", retryable = false;
    /// The arguments exceed the size or nesting limit.
    ArgumentsTooLarge = "arguments_too_large", retryable = false;
    /// The arguments violate the tool's input schema.
    InvalidArguments = "invalid_arguments", retryable = false;
    /// The caller may not use this tool.
    PermissionDenied = "permission_denied", retryable = false;
    /// The caller lacks scopes the tool requires.
    ScopesMissing = "scopes_missing", retryable = false;
    /// Too many calls of this tool for this principal; see `retry_after_ms`.
    RateLimited = "rate_limited", retryable = true;
    /// An idempotency key was reused with other arguments, or a resource changed underneath.
    Conflict = "conflict", retryable = false;
    /// A human rejected the call.
    ApprovalRejected = "approval_rejected", retryable = false;
    /// Nobody decided on the call before its approval expired.
    ApprovalExpired = "approval_expired", retryable = false;
    /// Something the call refers to does not exist.
    NotFound = "not_found", retryable = false;
    /// A human reference matched several things; see `candidates`.
    Ambiguous = "ambiguous", retryable = false;
    /// A call this one depends on did not succeed, so this one did not run.
    DependencyFailed = "dependency_failed", retryable = false;
    /// The call is part of a dependency cycle and did not run.
    DependencyCycle = "dependency_cycle", retryable = false;
    /// The call depends on a call id that is not in the batch.
    UnknownDependency = "unknown_dependency", retryable = false;
    /// The batch holds more calls than allowed; this one did not run.
    TooManyCalls = "too_many_calls", retryable = false;
    /// The tool did not finish within its timeout.
    Timeout = "timeout", retryable = true;
    /// The batch deadline passed before the call finished.
    DeadlineExceeded = "deadline_exceeded", retryable = false;
    /// The batch was cancelled.
    Cancelled = "cancelled", retryable = false;
    /// A service the tool relies on failed.
    ExternalApiError = "external_api_error", retryable = true;
    /// The tool failed unexpectedly; details are on the result for the app, not for the model.
    InternalError = "internal_error", retryable = false;
    /// A crash ended the call after it started and before its result was recorded, and its
    /// tool may not run twice (`effect_class: at_most_once`): whether it took effect is
    /// unknown. It runs again only when the app or a person says so.
    OutcomeUnknown = "outcome_unknown", retryable = false;
    /// A backend the call needs (the state store, a shared rate limiter) could not be
    /// reached, so the call was not run and nothing of it was written; the same call may
    /// succeed once the backend is back.
    Unavailable = "unavailable", retryable = true;
    /// The tool's output exceeds its size limit.
    OutputTooLarge = "output_too_large", retryable = false;
    /// The tool's output violates its output schema.
    InvalidOutput = "invalid_output", retryable = false;
    /// Not final: the call waits for a human decision (status `pending_approval`).
    PendingApproval = "pending_approval", retryable = false;
    /// Not final: the call waits for a client to run it (status `pending_external`).
    PendingExternal = "pending_external", retryable = false;
    /// Not final: the tool accepted the work as a background job that has not completed yet
    /// (status `pending_job`; `details.job` names it).
    PendingJob = "pending_job", retryable = false;
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the [`ErrorCode`]s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error code {0:?}; expected one of the documented tooljig codes")]
pub struct UnknownErrorCode(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_text_and_serde() {
        for &code in ErrorCode::ALL {
            assert_eq!(code.as_str().parse::<ErrorCode>().unwrap(), code);
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        assert!("nope".parse::<ErrorCode>().is_err());
    }
}
