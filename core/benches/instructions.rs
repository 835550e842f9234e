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

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::{BatchOptions, Call, Caller, Engine, MemoryAudit, Tool, ToolSpec};

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let batches: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let guarded = args.next().as_deref() == Some("guarded");
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
