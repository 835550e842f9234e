//! How a tool runs: timeout, retries, ordering, output limits, and what each guardrail and
//! durable step asks of its calls (access, hidden arguments, rate limits, cache, audit,
//! idempotency, approval, compensation).
//!
//! A policy is plain data (serde), so bindings pass it as a dict or an object and conformance
//! vectors spell it in JSON. Each part lives in a file of its own here; the steps that apply
//! them (`guard/`, `durable/`) read them and nothing in here reads the steps.

pub mod approval;
pub mod cache;
pub mod hidden;
pub mod idempotency;
pub mod rate_limit;
pub mod redaction;

pub use approval::{ApprovalPolicy, ApprovalRequirement, ApprovalRules};
pub use cache::{CachePolicy, CacheScope};
pub use hidden::HiddenParam;
pub use idempotency::{IdempotencyMode, IdempotencyPolicy};
pub use rate_limit::{RateLimit, RateScope};
pub use redaction::Redaction;

use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Per-tool execution policy. Every field has a sensible default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Time allowed for one attempt, in milliseconds. `None` means no per-tool timeout.
    pub timeout_ms: Option<u64>,
    /// Retries of retryable failures.
    pub retry: RetryPolicy,
    /// Tools this tool runs after, when both are in one batch. Ordering only: a failure of
    /// the earlier tool does not refuse this one. A tool naming itself runs its own calls one
    /// at a time, in call order.
    pub after: Vec<String>,
    /// Largest serialized output allowed, in bytes. `None` means unlimited.
    pub max_output_bytes: Option<usize>,
    /// What to do with an output over `max_output_bytes`.
    pub on_output_too_large: OversizeOutput,
    /// How much harm a wrong call can do; approval rules key on it.
    pub risk: Risk,
    /// Whether duplicate calls are recognised and run once (see `docs/durable-runs.md`).
    pub idempotency: IdempotencyPolicy,
    /// Whether a human must approve a call before it runs.
    pub approval: ApprovalPolicy,
    /// A tool that undoes this one on rollback; it receives `{"arguments", "result"}`.
    pub compensation: Option<String>,
    // Guardrails (docs/guardrails.md): access, hidden arguments, limits, cache, audit.
    /// What the tool does to the world; only `read` tools may be cached.
    pub effect: Effect,
    /// Whether a call may run again when a crash left its outcome unknown (see
    /// [`EffectClass`]); unset, `read` tools are `pure` and the others `at_most_once`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect_class: Option<EffectClass>,
    /// The tool's own enabled flag: the default when no settings level speaks.
    pub enabled: bool,
    /// Scopes the caller must hold, all of them; `a|b` accepts either.
    pub scopes: Vec<String>,
    /// Roles allowed to use the tool, any of them; empty allows every role.
    pub roles: Vec<String>,
    /// Parameters the model never fills: from the caller's context or a resolver.
    pub hidden: BTreeMap<String, HiddenParam>,
    /// Rate limits; a call must fit in every one of them.
    pub rate_limits: Vec<RateLimit>,
    /// Caches successful results (read tools only).
    pub cache: Option<CachePolicy>,
    /// How arguments appear in the audit record, per top-level field or JSON pointer.
    pub redact: BTreeMap<String, Redaction>,
    /// Whether the audit record keeps the data the tool returned (redacted like the arguments).
    pub audit_output: bool,
    /// Tools this tool's handler may call through `ctx.tools` (`"*"`: any); empty, it calls
    /// none. See `docs/tools.md`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub may_call: Vec<String>,
    /// Only other tools call it (through `ctx.tools`), never a model: it is left out of the
    /// specs a model is handed and of tool search, and a call in a batch of its own (one no
    /// handler made) is refused `permission_denied` (`reason: internal`). The steps of a
    /// two-phase action (hold, book, release) are such tools.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub internal: bool,
    /// Most characters of the tool's data the model sees (after `to_model_output`); longer,
    /// it sees a marked prefix. The app still gets the whole result. Unset, no budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_output_max_chars: Option<usize>,
    /// Most tokens of the tool's data the model sees (after `to_model_output` and the
    /// character budget), counted with OpenAI's `o200k_base` encoding (close for other
    /// providers' tokenizers); longer, a marked prefix. Unset, no budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_output_max_tokens: Option<usize>,
    /// How long a background job the handler accepts may take before its call ends as a
    /// `timeout`, in ms; unset, the engine's `external_expiry_ms` (a day by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_expiry_ms: Option<u64>,
}

/// What a tool does to the world (its category). Only `read` tools may be cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads only; safe to cache and to repeat.
    Read,
    /// Changes the app's own data. The default, because assuming a write is the safe mistake.
    #[default]
    Write,
    /// Acts outside the app: sends an email, calls a third party.
    External,
}

/// Whether a call may run again when a crash left its outcome unknown: it started (its start
/// was recorded) and no result was recorded. See `docs/durable-runs.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// No effect outside its result: runs again freely.
    Pure,
    /// Its effect happens once per idempotency key: it runs again with the same
    /// [`ToolContext::idempotency_key`](crate::ToolContext), which the handler hands to the
    /// downstream API (as payment and email APIs expect).
    Idempotent,
    /// Never run twice: a crash between start and result ends the call as
    /// `outcome_unknown`, and it runs again only when the app or a person says so.
    AtMostOnce,
}

/// How much harm a wrong call of a tool can do.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads, or effects that are easy to undo.
    #[default]
    Low,
    /// Effects a person would want to know about.
    Medium,
    /// Effects that are costly or impossible to undo (payments, emails, deletions).
    High,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            timeout_ms: Some(30_000),
            retry: RetryPolicy::default(),
            after: Vec::new(),
            max_output_bytes: None,
            on_output_too_large: OversizeOutput::Truncate,
            risk: Risk::Low,
            idempotency: IdempotencyPolicy::default(),
            approval: ApprovalPolicy::default(),
            compensation: None,
            effect: Effect::default(),
            effect_class: None,
            enabled: true,
            scopes: Vec::new(),
            roles: Vec::new(),
            hidden: BTreeMap::new(),
            rate_limits: Vec::new(),
            cache: None,
            redact: BTreeMap::new(),
            audit_output: false,
            may_call: Vec::new(),
            internal: false,
            job_expiry_ms: None,
            model_output_max_chars: None,
            model_output_max_tokens: None,
        }
    }
}

impl Policy {
    /// Sets the per-attempt timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(timeout.as_millis() as u64);
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Makes this tool run after `tool` when both are in one batch.
    pub fn after(mut self, tool: impl Into<String>) -> Self {
        self.after.push(tool.into());
        self
    }

    /// Limits the serialized output size.
    pub fn max_output_bytes(mut self, bytes: usize, on_oversize: OversizeOutput) -> Self {
        self.max_output_bytes = Some(bytes);
        self.on_output_too_large = on_oversize;
        self
    }

    /// The per-attempt timeout as a duration.
    pub fn timeout_duration(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}

/// Builders of the guardrail fields (docs/guardrails.md).
impl Policy {
    /// Requires these scopes (all of them; `a|b` accepts either).
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Allows only callers holding one of these roles.
    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.roles.extend(roles.into_iter().map(Into::into));
        self
    }

    /// Sets the effect (read, write, external).
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// Sets whether a call may run again after a crash left its outcome unknown.
    pub fn effect_class(mut self, class: EffectClass) -> Self {
        self.effect_class = Some(class);
        self
    }

    /// The effect class that applies: the one set, else `pure` for `read` tools and
    /// `at_most_once` for the others (assuming an effect is the safe mistake).
    pub fn resolved_effect_class(&self) -> EffectClass {
        self.effect_class.unwrap_or(match self.effect {
            Effect::Read => EffectClass::Pure,
            Effect::Write | Effect::External => EffectClass::AtMostOnce,
        })
    }

    /// Sets the tool's own enabled flag.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Declares a hidden parameter.
    pub fn hidden(mut self, parameter: impl Into<String>, source: HiddenParam) -> Self {
        self.hidden.insert(parameter.into(), source);
        self
    }

    /// Adds a rate limit.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limits.push(limit);
        self
    }

    /// Caches successful results (the tool must be a `read` tool).
    pub fn cache(mut self, cache: CachePolicy) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Sets how a field (a top-level name or a JSON pointer) appears in the audit record.
    pub fn redact(mut self, field: impl Into<String>, how: Redaction) -> Self {
        self.redact.insert(field.into(), how);
        self
    }

    /// Checks the guardrail fields at registration.
    pub fn check_guards(&self) -> Result<(), String> {
        hidden::check_policy(&self.hidden)?;
        for limit in &self.rate_limits {
            limit.check()?;
        }
        if let Some(cache) = &self.cache {
            if self.effect != Effect::Read {
                return Err(format!(
                    "cache is only allowed for tools whose effect is \"read\", this one is {:?}",
                    self.effect
                ));
            }
            if cache.ttl_ms == 0 {
                return Err("cache.ttl_ms must be at least 1".into());
            }
        }
        Ok(())
    }
}

/// Builders of the durable-run fields (docs/durable-runs.md).
impl Policy {
    /// Makes every call of this tool wait for a human decision.
    pub fn require_approval(mut self) -> Self {
        self.approval.required = ApprovalRequirement::Always;
        self
    }

    /// Sets the tool's risk level.
    pub fn risk(mut self, risk: Risk) -> Self {
        self.risk = risk;
        self
    }

    /// Makes calls of this tool idempotent in `mode`, with the default TTL and lease.
    pub fn idempotent(mut self, mode: IdempotencyMode) -> Self {
        self.idempotency.mode = mode;
        self
    }

    /// Names the tool that undoes this one on rollback.
    pub fn compensation(mut self, tool: impl Into<String>) -> Self {
        self.compensation = Some(tool.into());
        self
    }
}

/// Retries of failures that may succeed when tried again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Total attempts, the first included; 1 means no retry.
    pub attempts: u32,
    /// Delay before the first retry, in milliseconds.
    pub backoff_ms: u64,
    /// Each further delay is the previous one times this factor.
    pub multiplier: f64,
    /// Upper bound of a delay, in milliseconds.
    pub max_backoff_ms: u64,
    /// Codes worth retrying. Empty means: every error whose `retryable` flag is set.
    pub on: Vec<ErrorCode>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 1,
            backoff_ms: 100,
            multiplier: 2.0,
            max_backoff_ms: 5_000,
            on: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// `attempts` tries in all, with exponential backoff from `backoff`.
    pub fn attempts(attempts: u32, backoff: Duration) -> Self {
        RetryPolicy {
            attempts: attempts.max(1),
            backoff_ms: backoff.as_millis() as u64,
            ..Default::default()
        }
    }

    /// Whether a failure with this code and flag should be tried again.
    pub fn should_retry(&self, code: ErrorCode, retryable: bool) -> bool {
        if self.on.is_empty() {
            retryable
        } else {
            self.on.contains(&code)
        }
    }

    /// The delay before attempt `next_attempt` (2 for the first retry).
    pub fn delay_before(&self, next_attempt: u32) -> Duration {
        let exp = next_attempt.saturating_sub(2) as i32;
        let ms = (self.backoff_ms as f64) * self.multiplier.max(1.0).powi(exp);
        Duration::from_millis(ms.min(self.max_backoff_ms as f64) as u64)
    }
}

/// What happens to an output larger than the policy allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OversizeOutput {
    /// Keep a prefix and mark it truncated (see `docs/envelope.md`).
    Truncate,
    /// Replace the output with an `output_too_large` error.
    Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let r = RetryPolicy {
            attempts: 5,
            backoff_ms: 100,
            multiplier: 2.0,
            max_backoff_ms: 300,
            on: vec![],
        };
        assert_eq!(r.delay_before(2), Duration::from_millis(100));
        assert_eq!(r.delay_before(3), Duration::from_millis(200));
        assert_eq!(r.delay_before(4), Duration::from_millis(300));
    }

    #[test]
    fn unknown_policy_fields_are_refused() {
        assert!(serde_json::from_str::<Policy>(r#"{"timeout":5}"#).is_err());
        let p: Policy = serde_json::from_str(r#"{"timeout_ms":5,"retry":{"attempts":3}}"#).unwrap();
        assert_eq!(p.retry.attempts, 3);
    }
}
