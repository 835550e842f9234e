//! The spans of a batch and of its calls, as `tracing` spans: `tooljig.batch` (its run and
//! how many calls) and, under it, `tooljig.call` per call that ran (tool, outcome, code,
//! attempts, cached, replayed). An app that installs a subscriber sees them; with the `otel`
//! feature, `otel::export` sends them over OTLP, and a batch's `traceparent` (W3C Trace
//! Context, from the app's own request) makes its span a child of the caller's trace, in the
//! first pass and in every resume (the run keeps it). With no subscriber, a span costs one
//! check of whether anyone listens.

use crate::call::CallResult;
use crate::guard::audit::Outcome;
use tracing::Span;
use tracing::field::Empty;

/// The span of one batch (or one pass of a run).
pub(crate) fn batch(run_id: &str, calls: usize, traceparent: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: "tooljig",
        "tooljig.batch",
        tooljig.run_id = run_id,
        tooljig.calls = calls,
    );
    #[cfg(feature = "otel")]
    if let Some(traceparent) = traceparent {
        crate::otel::adopt(&span, traceparent);
    }
    #[cfg(not(feature = "otel"))]
    let _ = traceparent;
    span
}

/// The span of one call, under its batch's; its outcome is recorded by [`finish`]. The
/// driver asks for it only when someone listens to the batch, so an unheard batch pays no
/// check per call.
pub(crate) fn call(batch: &Span, call_id: &str, tool: &str) -> Span {
    tracing::info_span!(
        target: "tooljig",
        parent: batch,
        "tooljig.call",
        tooljig.call_id = call_id,
        tooljig.tool = tool,
        tooljig.outcome = Empty,
        tooljig.code = Empty,
        tooljig.attempts = Empty,
        tooljig.cached = Empty,
        tooljig.replayed = Empty,
        otel.status_code = Empty,
    )
}

/// Records how the call ended on its span.
pub(crate) fn finish(span: &Span, r: &CallResult) {
    span.record("tooljig.outcome", Outcome::of(r).as_str());
    if let Some(code) = r.envelope.code() {
        span.record("tooljig.code", code.as_str());
    }
    span.record("tooljig.attempts", i64::from(r.attempts));
    span.record("tooljig.cached", r.cached);
    span.record("tooljig.replayed", r.replayed);
    // A refusal is the app working as meant; a failure of the tool itself is an error.
    let failed = r.envelope.code().is_some_and(|c| {
        use crate::error_code::ErrorCode as C;
        matches!(
            c,
            C::InternalError
                | C::Timeout
                | C::ExternalApiError
                | C::Unavailable
                | C::OutcomeUnknown
        )
    });
    span.record("otel.status_code", if failed { "ERROR" } else { "OK" });
}
