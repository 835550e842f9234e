//! Heap allocated per call, on the engines `guardrails.rs` times: the bare path in batches of
//! 1 and 1,000 calls, and the guarded path (every check, audit records built and dropped, or
//! written to JSON Lines). Counted by an instrumented allocator (`stats_alloc`), so the figures
//! do not move with the machine's load: allocations, bytes requested, and bytes still held
//! after the batches (what a call leaves behind; a leak would show here).
//!
//! The allocator counted is the system one, under the counter: bytes requested do not depend
//! on which allocator serves them. SQLite's own allocations (C) would not be counted, so the
//! guarded figures use JSON Lines or no storage.
//!
//! Run with `cargo bench -p tooljig --bench memory`; figures go to `BENCHMARKS.md`.

mod support;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use support::engines::{Layers, bare, caller, calls, guarded};
use tooljig::{BatchOptions, Engine};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Runs `batches` batches of `n` calls (after as many to warm caches and pools up) and prints
/// what one call allocated, on average.
fn measure(name: &str, engine: Engine, n: usize, batches: usize) {
    let rt = support::runtime();
    let engine = Arc::new(engine);
    let nonce = AtomicU64::new(0);
    let run = |batches: usize| {
        for _ in 0..batches {
            let (engine, calls) = (engine.clone(), calls(n, &nonce));
            let out = rt.block_on(async move {
                tokio::spawn(
                    async move { engine.run(calls, caller(), BatchOptions::default()).await },
                )
                .await
                .expect("the batch task")
            });
            assert!(out.results.iter().all(|r| r.envelope.is_ok()));
        }
    };
    run(batches);
    // The calls are built outside the region: what is counted is the engine's work on them.
    let region = Region::new(GLOBAL);
    run(batches);
    let change = region.change();
    let per_call = |x: f64| x / (n * batches) as f64;
    let held = change.bytes_allocated as f64 - change.bytes_deallocated as f64;
    println!(
        "| {name} | {n} | {:.1} | {:.0} | {:.0} |",
        per_call((change.allocations + change.reallocations) as f64),
        per_call(change.bytes_allocated as f64 + change.bytes_reallocated.max(0) as f64),
        per_call(held),
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let guarded_with = |audit| {
        guarded(
            Layers {
                limit: true,
                cache: true,
                audit: Some(audit),
            },
            dir.path(),
        )
    };
    println!("| engine | calls a batch | allocations a call | bytes a call | bytes held a call |");
    println!("|---|---|---|---|---|");
    measure("bare", bare(), 1, 2_000);
    measure("bare", bare(), 1_000, 20);
    measure(
        "guarded, records dropped",
        guarded_with("discard"),
        1,
        2_000,
    );
    measure(
        "guarded, records dropped",
        guarded_with("discard"),
        1_000,
        20,
    );
    measure(
        "guarded, JSON Lines audit",
        guarded_with("jsonl"),
        1_000,
        20,
    );
}
