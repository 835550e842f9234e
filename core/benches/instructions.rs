//! Instructions a batch costs on the bare path, counted by callgrind rather than timed.
//!
//! Timings on this 2-core VM drift by ±5% from run to run and hour to hour, more than the
//! changes worth checking on the bare path; an instruction count of the same binary and
//! workload repeats exactly. `scripts/instructions.sh` runs this bench twice under
//! `valgrind --tool=callgrind` with different batch counts and reports the difference per
//! batch, so start-up and schema compilation drop out. System calls are not counted (the
//! kernel's side of one is invisible here), nor are cache misses: a timing bench still
//! decides, this tells where instructions went.
//!
//! `instructions BATCHES CALLS [guarded]`: runs BATCHES batches of CALLS no-op calls (the
//! workload of `overhead/N` in `engine.rs`) on a current-thread runtime, so no worker thread's
//! spinning is counted. `guarded` gives the tool the guardrails of the MCP bench's guarded
//! server (the caller's scopes, a rate limit, audit to memory, drained as an app forwarding its
//! records would): `GUARDED=1 bash scripts/instructions.sh`.
//!
//! `cold` (after `guarded`, or in its place) runs each batch cold, as an app's sporadic agent
//! turns and an MCP server's calls run: before each batch the bench writes a byte in every
//! cache line of a 16 MiB buffer, which evicts the engine's code and data from the caches
//! this machine's core has to itself. It prints the batches' own times (p10, p50, p90; the
//! eviction left out); `COLD=1 bash scripts/instructions.sh` counts, under cachegrind, the
//! cache lines of code a cold batch fetches from memory, which is what it pays for there.

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::{BatchOptions, Call, Caller, Engine, MemoryAudit, Tool, ToolSpec};

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let batches: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let flags: Vec<String> = args.collect();
    let guarded = flags.iter().any(|f| f == "guarded");
    let cold = flags.iter().any(|f| f == "cold");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // Only the guarded engine has a log to drain: the bare path's count stays as it was.
    let audit = guarded.then(|| Arc::new(MemoryAudit::new()));
    let engine = match &audit {
        Some(audit) => Engine::new().with_audit(audit.clone()),
        None => Engine::new(),
    };
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    });
    let policy = if guarded {
        let limit = json!({"max": 1_000_000_000u64, "per_ms": 1000, "scope": "principal"});
        json!({"scopes": ["bench"], "rate_limits": [limit]})
    } else {
        json!({})
    };
    let spec = ToolSpec::from_value(json!({
        "name": "noop", "description": "Does nothing.", "input_schema": schema, "policy": policy
    }))
    .expect("a spec");
    engine
        .register(Tool::new(
            spec,
            tooljig::handler_fn(|_, _| async { Ok(Value::Null) }),
        ))
        .expect("noop registers");
    let caller = if guarded {
        Caller {
            principal: Some("bench-user".into()),
            scopes: vec!["bench".into()],
            session: Some("bench-session".into()),
            ..Caller::default()
        }
    } else {
        Caller::default()
    };
    let calls: Vec<Call> = (0..size)
        .map(|i| Call::new(format!("c{i}"), "noop", r#"{"city": "Paris", "days": 3}"#))
        .collect();
    if cold {
        return runtime.block_on(run_cold(
            &engine,
            audit.as_deref(),
            &calls,
            &caller,
            batches,
        ));
    }
    runtime.block_on(async {
        for i in 0..batches {
            let out = engine
                .run(calls.clone(), caller.clone(), BatchOptions::default())
                .await;
            std::hint::black_box(out);
            if let Some(audit) = audit.as_ref().filter(|_| i % 64 == 63) {
                std::hint::black_box(audit.take_lines());
            }
        }
    });
}

/// Runs `batches` batches of `calls`, each after evicting the caches, and prints their times.
/// The guarded engine's log is drained as in the loop above, outside the batches' times.
async fn run_cold(
    engine: &Engine,
    audit: Option<&MemoryAudit>,
    calls: &[Call],
    caller: &Caller,
    batches: usize,
) {
    let mut evictor = Evictor::new(16 << 20);
    let mut times = Vec::with_capacity(batches);
    for i in 0..batches {
        let calls = calls.to_vec();
        evictor.evict();
        let started = std::time::Instant::now();
        let out = engine
            .run(calls, caller.clone(), BatchOptions::default())
            .await;
        times.push(started.elapsed());
        std::hint::black_box(out);
        if let Some(audit) = audit.filter(|_| i % 64 == 63) {
            std::hint::black_box(audit.take_lines());
        }
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "{batches} cold batches of {}{}: p10 {:.2} µs, p50 {:.2} µs, p90 {:.2} µs",
        calls.len(),
        if audit.is_some() { ", guarded" } else { "" },
        at(0.1),
        at(0.5),
        at(0.9)
    );
}

/// A buffer whose every cache line is written before a cold batch.
struct Evictor(Vec<u8>);

impl Evictor {
    fn new(bytes: usize) -> Self {
        Evictor(vec![0; bytes])
    }

    fn evict(&mut self) {
        for line in self.0.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        std::hint::black_box(&self.0);
    }
}
