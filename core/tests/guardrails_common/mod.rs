//! Shared pieces of the guardrails tests: tools that count their runs, callers.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tooljig::*;

/// Counts how often a handler ran.
#[derive(Clone, Default)]
pub struct Runs(pub Arc<AtomicUsize>);

impl Runs {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A tool that echoes its arguments and counts its runs.
pub fn echo(name: &str, schema: Value, policy: Policy, runs: &Runs) -> Tool {
    let runs = runs.clone();
    Tool::from_fn(name, "Echoes its arguments.", schema, move |args, _| {
        let runs = runs.clone();
        async move {
            runs.0.fetch_add(1, Ordering::SeqCst);
            Ok(args)
        }
    })
    .policy(policy)
}

pub fn object() -> Value {
    json!({"type": "object"})
}

pub fn caller(principal: &str) -> Caller {
    let mut c = Caller::principal(principal);
    c.tenant = Some("acme".into());
    c.session = Some("s-1".into());
    c
}

pub fn code(out: &BatchResult, id: &str) -> Option<String> {
    out.get(id)
        .and_then(|r| r.envelope.code())
        .map(|c| c.as_str().to_string())
}

pub async fn run(engine: &Engine, calls: Vec<Call>, caller: Caller) -> BatchResult {
    engine.run(calls, caller, BatchOptions::default()).await
}
