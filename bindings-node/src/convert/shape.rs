//! The one table of the JavaScript edge's casing: for each kind of object that crosses it,
//! where the binding's own keys are. Everything not listed here is data (arguments,
//! envelopes, schemas, caller attributes, the app's values) and passes byte for byte.
//!
//! A [`Shape`] lists the paths, from the object's root, of the objects whose keys are the
//! binding's own: `""` is the root, a key names the object under it, `*` any array element.
//! Paths are spelled as the core spells keys (snake_case). Provider-neutral values (messages,
//! turns, requests, stream events) nest too deeply for paths: they are renamed at every
//! level except under the keys of [`NEUTRAL_DATA`].

/// The paths of the objects whose keys are renamed.
pub type Shape = &'static [&'static str];

/// A caller (`principal`, `tenant`, `roles`, ...; `attributes` are data).
pub const CALLER: Shape = &[""];
/// The options of `importTools` (`format`, `category`, `closeObjects`).
pub const IMPORT_OPTIONS: Shape = &[""];
/// The options of `registerOpenApi` (`headers` are data; `policy` as a spec's).
pub const OPENAPI_OPTIONS: Shape = &[
    "",
    "credentials",
    "policy",
    "policy/retry",
    "policy/approval",
    "policy/idempotency",
    "policy/cache",
    "policy/rate_limits/*",
];
/// Batch options.
pub const BATCH_OPTIONS: Shape = &[""];
/// An audit query, an audit record, the chain's verification report.
pub const AUDIT: Shape = &["", "parent"];
/// The engine's options (data ones: `limits`, `approval_rules`; `schema_resources` are data).
pub const ENGINE_OPTIONS: Shape = &["", "limits", "approval_rules"];
/// A tool spec as registered; its schemas are data.
pub const SPEC_IN: Shape = &[
    "",
    "policy",
    "policy/retry",
    "policy/approval",
    "policy/idempotency",
    "policy/cache",
    "policy/rate_limits/*",
];
/// A tool spec as `specs()` exports it: only `retry` of the policy's objects is renamed, which
/// is how [`NEUTRAL_DATA`]'s rule reads a `policy` back.
pub const SPEC_OUT: Shape = &["", "policy", "policy/retry"];
/// A policy inside a provider-neutral value (a tool of a model request).
pub const POLICY: Shape = &["", "retry"];
/// The options of an HTTP model (`headers` are data).
pub const HTTP_MODEL_OPTIONS: Shape = &[""];
/// An approval decision (`arguments` are data).
pub const DECISION: Shape = &[""];
/// A batch's results, and the rollback of an atomic batch.
pub const BATCH: Shape = &[
    "",
    "results/*",
    "results/*/approval",
    "results/*/parent",
    "rollback",
    "rollback/entries/*",
];
/// One result of a batch, as its `results/*` (`rows.rs`).
pub const RESULT: Shape = &["", "approval", "parent"];
/// A batch's events.
pub const BATCH_EVENTS: Shape = &["*", "*/result", "*/result/approval", "*/result/parent"];
/// An agent run's events.
pub const AGENT_EVENTS: Shape = &["*", "*/usage"];
/// A stored approval request.
pub const APPROVAL_RECORD: Shape = &["", "requested_by", "decision"];
/// An operator's request (its `result` is shaped by the action it answers).
pub const OPERATOR_REQUEST: Shape = &[""];
/// A rollback report.
pub const ROLLBACK_REPORT: Shape = &["", "entries/*"];
/// A run record with its calls, results, step log and rollbacks.
pub const RUN_RECORD: Shape = &[
    "",
    "caller",
    "options",
    "resuming",
    "calls/*",
    "results/*",
    "results/*/approval",
    "results/*/parent",
    "steps/*",
    "rollback/*",
];
/// A learned "always allow" preference (`values` are data).
pub const PREFERENCE: Shape = &[""];
/// A client-side call awaiting its result.
pub const EXTERNAL_CALL: Shape = &[""];
/// A background job's status (`arguments` and `envelope` are data).
pub const JOB_STATUS: Shape = &[""];
/// The options of an MCP server (`tokens` map tokens to callers, whose keys are one word).
pub const MCP_SERVER_OPTIONS: Shape = &[""];
/// The options of an MCP client; each of `tools`' policies is renamed as [`MCP_POLICY`].
pub const MCP_CLIENT_OPTIONS: Shape = &[
    "",
    "policy",
    "policy/retry",
    "policy/approval",
    "policy/idempotency",
];
/// One tool's policy in an MCP client's `tools`.
pub const MCP_POLICY: Shape = &["", "retry", "approval", "idempotency"];
/// What the policy hook and the resolvers are asked.
pub const SEAM_REQUEST: Shape = &["", "caller"];

/// Keys (snake_case) whose values are data inside provider-neutral values.
pub const NEUTRAL_DATA: &[&str] = &[
    "arguments",
    "envelope",
    "input",
    "partial",
    "output",
    "provider_data",
    "input_schema",
    "output_schema",
    "response_schema",
    "failures_by_code",
    "details",
    "error",
    "data",
    "result",
];

/// Whether the object at `path` has its keys renamed under `shape`. `path` holds the keys
/// leading to it, in the core's spelling, and `*` for an array element.
pub fn renames<S: AsRef<str>>(shape: Shape, path: &[S]) -> bool {
    shape
        .iter()
        .any(|pattern| parts(pattern).count() == path.len() && leads_to(pattern, path))
}

/// Whether a path of `shape` lies strictly below `path`, so a walk must go on into it.
pub fn reaches_below<S: AsRef<str>>(shape: Shape, path: &[S]) -> bool {
    shape
        .iter()
        .any(|pattern| parts(pattern).count() > path.len() && leads_to(pattern, path))
}

fn parts(pattern: &str) -> impl Iterator<Item = &str> {
    pattern.split('/').filter(|p| !p.is_empty())
}

/// Whether `pattern` starts with `path`.
fn leads_to<S: AsRef<str>>(pattern: &str, path: &[S]) -> bool {
    parts(pattern).zip(path).all(|(p, seg)| p == seg.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_exactly() {
        let root: [&str; 0] = [];
        assert!(renames(BATCH, &root));
        assert!(renames(BATCH, &["results", "*"]));
        assert!(renames(BATCH, &["results", "*", "approval"]));
        assert!(!renames(BATCH, &["results", "*", "envelope"]));
        assert!(!renames(RUN_RECORD, &["calls", "*", "arguments"]));
        assert!(reaches_below(BATCH, &["results"]));
        assert!(!reaches_below(BATCH, &["results", "*", "approval"]));
    }
}
