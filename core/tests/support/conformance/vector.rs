//! The vector file format of `tests/conformance/README.md`, as Rust types.
//!
//! Every struct refuses unknown keys: a key this runner does not understand makes the
//! vector fail loudly instead of passing without checking what the key asked for. Whoever
//! adds a key to the format adds it here, with its meaning in the README.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use tooljig::{BatchOptions, Call, Caller, ErrorCode, Limits, ToolSpec};

/// One vector file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vector {
    /// What the vector shows, in a sentence.
    pub name: String,
    /// Engine-wide settings.
    #[serde(default)]
    pub engine: EngineConfig,
    /// Tools to register, in order.
    pub tools: Vec<ToolEntry>,
    /// Who the batch runs for.
    #[serde(default)]
    pub caller: Caller,
    /// Batch options.
    #[serde(default)]
    pub options: BatchOptions,
    /// The batch.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// The batch as a provider's response asks for it (instead of `calls`).
    #[serde(default)]
    pub model_turn: Option<super::model::ModelTurnInput>,
    /// An agent run over the tools (instead of a batch).
    #[serde(default)]
    pub agent: Option<super::model::AgentRun>,
    /// What must come out (an `agent` vector says it in `agent.expect`).
    #[serde(default)]
    pub expect: Expect,
    /// Later batches on the same engine (guardrails: cache hits, rate-limit windows).
    #[serde(default)]
    pub then: Vec<super::guards::Step>,
    /// Durable-run steps after the first batch (and `then`): decisions, client results,
    /// resumes, rollbacks.
    #[serde(default)]
    pub steps: Vec<super::durable::Step>,
}

/// Engine-wide settings of a vector (`"engine": {...}`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Argument limits; unset fields keep their defaults.
    #[serde(default)]
    pub limits: Option<LimitsConfig>,
    /// Enabled flags per level (`Engine::with_settings`).
    #[serde(default)]
    pub settings: Option<tooljig::Settings>,
    /// Scripted resolvers: per resolver, the resolution of each input value; others are not found.
    #[serde(default)]
    pub resolvers: BTreeMap<String, BTreeMap<String, tooljig::Resolution>>,
    /// A scripted policy hook.
    #[serde(default)]
    pub policy_hook: Option<super::guards::HookScript>,
    /// Engine-wide approval rules (`Engine::approval_rules`).
    #[serde(default)]
    pub approval_rules: Option<tooljig::ApprovalRules>,
    /// A scripted approval predicate.
    #[serde(default)]
    pub approval_predicate: Option<super::durable::PredicateScript>,
    /// How long client-side calls wait for a result (`Engine::external_expiry_ms`).
    #[serde(default)]
    pub external_expiry_ms: Option<u64>,
}

/// [`Limits`] with every field optional and no unknown keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// See [`Limits::max_argument_bytes`].
    pub max_argument_bytes: Option<usize>,
    /// See [`Limits::max_depth`].
    pub max_depth: Option<usize>,
}

impl LimitsConfig {
    /// The limits, defaults filled in.
    pub fn to_limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            max_argument_bytes: self.max_argument_bytes.unwrap_or(d.max_argument_bytes),
            max_depth: self.max_depth.unwrap_or(d.max_depth),
        }
    }
}

/// A tool of a vector: its spec and what its handler does.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntry {
    /// As `Engine::specs()` exports it.
    pub spec: ToolSpec,
    /// Required; `null` registers the tool without a handler (client-side).
    #[serde(deserialize_with = "present")]
    pub script: Option<Option<Script>>,
}

/// What a scripted handler does (the README's table).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Async sleep before anything else.
    pub sleep_ms: Option<u64>,
    /// Attempts 1..=n fail with a retryable `external_api_error`.
    pub fail_times: Option<u32>,
    /// Returns this value (`null` included).
    #[serde(default, rename = "return", deserialize_with = "present")]
    pub returns: Option<Value>,
    /// Returns the arguments.
    pub echo: Option<bool>,
    /// Fails with this error.
    pub error: Option<ScriptError>,
    /// Returns the needs outcome for these fields.
    pub needs: Option<Vec<String>>,
    /// Fails unexpectedly with this message.
    pub panic: Option<String>,
    /// Never finishes.
    pub hang: Option<bool>,
}

impl Script {
    /// Checks that at most one outcome is given.
    pub fn check(&self) -> Result<(), String> {
        let outcomes = [
            ("return", self.returns.is_some()),
            ("echo", self.echo.is_some()),
            ("error", self.error.is_some()),
            ("needs", self.needs.is_some()),
            ("panic", self.panic.is_some()),
            ("hang", self.hang.is_some()),
        ];
        let given: Vec<&str> = outcomes.iter().filter(|o| o.1).map(|o| o.0).collect();
        if given.len() > 1 {
            return Err(format!(
                "a script has one outcome, this one has {}",
                given.join(", ")
            ));
        }
        if self.echo == Some(false) || self.hang == Some(false) {
            return Err("`echo` and `hang` are only ever `true`".into());
        }
        Ok(())
    }
}

/// The `error` outcome of a script.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    /// The code the handler chooses.
    pub code: ErrorCode,
    /// The message for the model.
    pub message: String,
    /// Overrides the code's default retryability.
    pub retryable: Option<bool>,
}

/// `expect`: what the batch must produce.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// One entry per call, in call order.
    pub results: Option<Vec<ExpectedResult>>,
    /// `[a, b]`: b's first attempt started after a finished.
    #[serde(default)]
    pub order: Vec<[String; 2]>,
    /// `[a, b]`: the two ran at the same time.
    #[serde(default)]
    pub overlap: Vec<[String; 2]>,
    /// `[a, b]`: both ran, and never at the same time.
    #[serde(default)]
    pub disjoint: Vec<[String; 2]>,
    /// The whole batch took at most this many milliseconds (a loose sanity bound).
    pub within_ms: Option<u64>,
    /// Handler invocations per tool name, over the whole batch.
    pub invocations: Option<BTreeMap<String, u32>>,
    /// Registering the tools fails with a message containing this.
    pub registration_error: Option<String>,
    /// The records the batch wrote to the audit log, by call id, compared on their keys.
    pub audit: Option<Vec<Map<String, Value>>>,
    /// The tool names `Engine::specs_for(caller)` lists, in order.
    pub visible: Option<Vec<String>>,
    /// Input schemas of `Engine::specs_for(caller)`, by tool (hidden parameters removed).
    pub model_schemas: Option<BTreeMap<String, Value>>,
    /// The automatic rollback of an atomic batch, entry by entry (compared on their keys).
    pub rollback: Option<Vec<Map<String, Value>>>,
    /// Per provider, the exact messages or blocks `tool_results` gives for the batch.
    pub tool_results: Option<BTreeMap<String, Value>>,
}

/// The keys an entry of `expect.results` may hold.
pub const RESULT_KEYS: &[&str] = &[
    "call_id",
    "tool",
    "status",
    "envelope",
    "attempts",
    "repaired",
    "replayed",
    "cached",
    "arguments",
    "error_code",
    "has_detail",
    "message_contains",
    "hidden",
    "retry_after_ms_at_most",
    "approval",
    "recovered",
    "defaults",
];

/// An entry of `expect.results`: compared on the keys it has only.
#[derive(Debug)]
pub struct ExpectedResult(pub Map<String, Value>);

impl<'de> Deserialize<'de> for ExpectedResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        if let Some(bad) = map.keys().find(|k| !RESULT_KEYS.contains(&k.as_str())) {
            return Err(serde::de::Error::custom(format!(
                "unknown key {bad:?} in an expected result; expected one of {}",
                RESULT_KEYS.join(", ")
            )));
        }
        Ok(ExpectedResult(map))
    }
}

/// Deserializes a key that must be present and may be `null` (serde would otherwise treat
/// `null` and absence alike).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}
