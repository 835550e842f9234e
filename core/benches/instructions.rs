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
//! `instructions BATCHES CALLS`: runs BATCHES batches of CALLS no-op calls (the workload of
//! `overhead/N` in `engine.rs`) on a current-thread runtime, so no worker thread's spinning
//! is counted.

use serde_json::{Value, json};
use tooljig::{BatchOptions, Call, Caller, Engine, Tool};

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let batches: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let engine = Engine::new();
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    });
    engine
        .register(Tool::from_fn(
            "noop",
            "Does nothing.",
            schema,
            |_, _| async { Ok(Value::Null) },
        ))
        .expect("noop registers");
    let calls: Vec<Call> = (0..size)
        .map(|i| Call::new(format!("c{i}"), "noop", r#"{"city": "Paris", "days": 3}"#))
        .collect();
    runtime.block_on(async {
        for _ in 0..batches {
            let out = engine
                .run(calls.clone(), Caller::default(), BatchOptions::default())
                .await;
            std::hint::black_box(out);
        }
    });
}
