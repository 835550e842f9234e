//! The guardrail keys of the vector format (README, "Guardrails"): engine settings,
//! scripted resolvers and policy hook, visibility, audit expectations, and `then` steps that
//! run later batches on the same engine (cache hits, rate-limit windows).

use super::compare;
use super::vector::{EngineConfig, ExpectedResult};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tooljig::audit::{AuditRecord, MemoryAudit};
use tooljig::*;

/// A scripted policy hook: refuses calls matching a rule, allows the rest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookScript {
    /// Rules; the first that matches refuses the call with its reason.
    #[serde(default)]
    pub deny: Vec<DenyRule>,
}

/// One refusal rule of a scripted hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyRule {
    /// The tool it applies to.
    pub tool: String,
    /// A JSON pointer into the final arguments; with `equals`, the rule matches only when
    /// the value there equals it. Without, the rule matches every call of the tool.
    pub pointer: Option<String>,
    /// The value to compare with.
    pub equals: Option<Value>,
    /// The reason the model sees.
    pub reason: String,
}

/// A later batch on the same engine.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Waits this long before the batch (lets a cache entry expire, a budget refill).
    pub wait_ms: Option<u64>,
    /// Who this batch runs for; the vector's caller when absent.
    pub caller: Option<Caller>,
    /// The batch.
    pub calls: Vec<Call>,
    /// What must come out (`results`, `audit`).
    pub expect: StepExpect,
}

/// The expectations of a step.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepExpect {
    /// As `expect.results`.
    pub results: Option<Vec<ExpectedResult>>,
    /// As `expect.audit`.
    pub audit: Option<Vec<Map<String, Value>>>,
}

/// The keys an entry of `expect.audit` may hold.
pub const AUDIT_KEYS: &[&str] = &[
    "call_id",
    "tool",
    "principal",
    "tenant",
    "session",
    "arguments",
    "hidden",
    "outcome",
    "code",
    "risk",
    "effect",
    "attempts",
    "cached",
    "replayed",
    "repaired",
];

/// Applies the guardrail keys of `"engine"`; returns the engine and its audit log.
pub fn configure(mut engine: Engine, config: &EngineConfig) -> (Engine, Arc<MemoryAudit>) {
    let audit = Arc::new(MemoryAudit::new());
    engine = engine.with_audit(audit.clone());
    if let Some(settings) = &config.settings {
        engine = engine.with_settings(settings.clone());
    }
    for (name, table) in &config.resolvers {
        let table = table.clone();
        engine = engine.with_resolver(
            name.clone(),
            resolver_fn(move |req: ResolveRequest| {
                let found = req
                    .value
                    .as_str()
                    .and_then(|v| table.get(v))
                    .cloned()
                    .unwrap_or(Resolution::NotFound);
                async move { Ok(found) }
            }),
        );
    }
    if let Some(hook) = config.policy_hook.clone() {
        engine = engine.with_policy_hook(policy_hook_fn(move |req: AccessRequest| {
            let rule = hook.deny.iter().find(|r| {
                *r.tool == *req.tool
                    && match &r.pointer {
                        Some(p) => req.arguments.pointer(p) == r.equals.as_ref(),
                        None => true,
                    }
            });
            let decision = match rule {
                Some(r) => AccessDecision::deny(r.reason.clone()),
                None => AccessDecision::allow(),
            };
            async move { Ok(decision) }
        }));
    }
    (engine, audit)
}

/// Checks `expect.visible` and `expect.model_schemas` against `specs_for(caller)`.
pub fn check_visibility(
    engine: &Engine,
    caller: &Caller,
    visible: Option<&Vec<String>>,
    schemas: Option<&BTreeMap<String, Value>>,
    problems: &mut Vec<String>,
) {
    let specs = engine.specs_for(caller);
    if let Some(want) = visible {
        let got: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        if &got != want {
            problems.push(format!(
                "specs_for(caller) lists {got:?}, expected {want:?}"
            ));
        }
    }
    for (tool, want) in schemas.into_iter().flatten() {
        match specs.iter().find(|s| &s.name == tool) {
            Some(s) if &s.input_schema == want => {}
            Some(s) => problems.push(format!(
                "the model-facing schema of {tool:?} is {}, expected {want}",
                s.input_schema
            )),
            None => problems.push(format!("{tool:?} is not in specs_for(caller)")),
        }
    }
}

/// Checks the records one batch added: one per call, each `expected` entry matching the
/// record of its call on the keys it has, and the chain intact.
pub async fn check_audit(
    audit: &MemoryAudit,
    before: usize,
    results: &[CallResult],
    expected: Option<&Vec<Map<String, Value>>>,
    problems: &mut Vec<String>,
) {
    let all = audit.records();
    let added: &[AuditRecord] = all.get(before..).unwrap_or_default();
    // A rollback's records (`rolled_back`, ...) come after the calls' own.
    let added: Vec<&AuditRecord> = added.iter().filter(|r| !r.outcome.is_rollback()).collect();
    if added.len() != results.len() {
        problems.push(format!(
            "the batch wrote {} audit records for {} calls; every call must have one",
            added.len(),
            results.len()
        ));
    }
    match audit.verify().await {
        Ok(r) if r.is_intact() => {}
        other => problems.push(format!("the audit chain does not verify: {other:?}")),
    }
    for (i, want) in expected.into_iter().flatten().enumerate() {
        if let Some(bad) = want.keys().find(|k| !AUDIT_KEYS.contains(&k.as_str())) {
            problems.push(format!(
                "unknown key {bad:?} in expect.audit[{i}]; expected one of {}",
                AUDIT_KEYS.join(", ")
            ));
            continue;
        }
        let Some(id) = want.get("call_id").and_then(Value::as_str) else {
            problems.push(format!("expect.audit[{i}] needs a call_id"));
            continue;
        };
        let Some(record) = added.iter().find(|r| r.call_id == id) else {
            problems.push(format!("no audit record for call {id:?}"));
            continue;
        };
        let got = serde_json::to_value(record).unwrap_or_default();
        for (key, w) in want {
            let g = got.get(key).cloned().unwrap_or(Value::Null);
            if &g != w {
                let mut paths = Vec::new();
                compare::diff(w, &g, String::new(), &mut paths);
                problems.push(format!(
                    "audit record of {id:?}: {key} differs:\n{}\n      expected: {w}\n      actual:   {g}",
                    paths.join("\n")
                ));
            }
        }
    }
}

/// Runs the `then` steps in order on the same engine.
pub async fn run_steps(
    engine: &Engine,
    audit: &MemoryAudit,
    caller: &Caller,
    steps: Vec<Step>,
    problems: &mut Vec<String>,
) {
    for (n, step) in steps.into_iter().enumerate() {
        if let Some(ms) = step.wait_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let before = audit.records().len();
        let who = step.caller.unwrap_or_else(|| caller.clone());
        let out = engine.run(step.calls, who, BatchOptions::default()).await;
        let mut found = Vec::new();
        if let Some(expected) = &step.expect.results {
            compare::results(expected, &out.results, &mut found);
        }
        check_audit(
            audit,
            before,
            &out.results,
            step.expect.audit.as_ref(),
            &mut found,
        )
        .await;
        problems.extend(found.into_iter().map(|p| format!("then[{n}]: {p}")));
    }
}
