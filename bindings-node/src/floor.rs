//! The core's own per-call cost, measured inside the addon: the benchmark's floor.
//!
//! `bench/bench.mjs` runs the same 1,000-call workload through a Rust no-op handler on the
//! same runtime, so the figure for JS handlers minus this one is what the binding adds.

// napi registers free functions only outside test builds, where they look unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::json;
use std::time::Instant;
use tooljig::{BatchOptions, Call, Caller, Engine, HandlerError, Tool};

/// Median µs per call of `reps` batches of `calls` calls of a Rust handler that returns its
/// arguments (the benchmark's lookup workload: JSON-string arguments, the same schema).
#[napi(ts_return_type = "Promise<number>")]
pub fn core_floor_us<'env>(
    env: &'env Env,
    calls: u32,
    reps: u32,
) -> napi::Result<PromiseRaw<'env, f64>> {
    env.spawn_future(async move {
        let engine = Engine::new();
        let schema = json!({"type": "object", "properties": {"id": {"type": "integer"}, "q": {"type": "string"}}, "required": ["id", "q"], "additionalProperties": false});
        engine
            .register(Tool::from_fn("lookup", "Looks an item up.", schema, |args, _ctx| async move {
                Ok::<_, HandlerError>(args)
            }))
            .map_err(|e| napi::Error::new(Status::GenericFailure, e.to_string()))?;
        let batch: Vec<Call> = (0..calls)
            .map(|i| Call::new(format!("c{i}"), "lookup", json!({"id": i, "q": format!("item {i}")}).to_string()))
            .collect();
        let mut samples = Vec::with_capacity(reps as usize);
        for rep in 0..reps.max(1) + 3 {
            let t = Instant::now();
            let out = engine.run(batch.clone(), Caller::default(), BatchOptions::default()).await;
            let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(calls.max(1));
            if !out.results.iter().all(|r| r.envelope.is_ok()) {
                return Err(napi::Error::new(Status::GenericFailure, "a floor call failed"));
            }
            if rep >= 3 {
                samples.push(us);
            }
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples[samples.len() / 2])
    })
}
