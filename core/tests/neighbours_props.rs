//! Property test: one bad call never affects a neighbour. A batch mixes good calls with every
//! kind of bad one (arguments that are malformed, cut off, too deep or of the wrong type; an
//! unknown tool; a handler that fails, panics, overruns its timeout or returns what its output
//! schema refuses); each call's result in the batch is the result it gets when it runs alone.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::Duration;
use tooljig::{BatchOptions, Call, CallResult, Caller, Engine, Policy, Tool, ToolError};

/// The kinds of call a batch is made of.
const KINDS: usize = 11;

fn engine() -> Engine {
    let engine = Engine::new();
    let object =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let tools = [
        Tool::from_fn(
            "echo",
            "Returns its arguments.",
            object.clone(),
            |args: Value, _| async move { Ok(args) },
        ),
        Tool::from_fn("fail", "Fails.", object.clone(), |_: Value, _| async move {
            Err(ToolError::new(tooljig::ErrorCode::NotFound, "down for maintenance").into())
        }),
        Tool::from_fn(
            "boom",
            "Panics.",
            object.clone(),
            |args: Value, _| async move {
                if args["n"].as_i64().is_some() {
                    panic!("the handler broke");
                }
                Ok(args)
            },
        ),
        Tool::from_fn(
            "slow",
            "Overruns its timeout.",
            object.clone(),
            |args: Value, _| async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                Ok(args)
            },
        )
        .policy(Policy::default().timeout(Duration::from_millis(30))),
        Tool::from_fn(
            "liar",
            "Returns what its output schema refuses.",
            object.clone(),
            |_: Value, _| async move { Ok(json!({"n": "not a number"})) },
        )
        .output_schema(object),
    ];
    for tool in tools {
        engine.register(tool).expect("registers");
    }
    engine
}

/// Call `i` of kind `kind`.
fn call(i: usize, kind: usize) -> Call {
    let id = format!("c{i}");
    let n = json!({"n": i});
    match kind {
        0 | 1 => Call::new(id, "echo", n),
        2 => Call::new(id, "echo", Value::String(format!("{{\"n\": {i},}}"))),
        3 => Call::new(id, "echo", Value::String("{\"n\": \"cut off".into())),
        4 => Call::new(id, "echo", json!({"n": "seven"})),
        5 => Call::new(id, "missing_tool", n),
        6 => Call::new(id, "fail", n),
        7 => Call::new(id, "boom", n),
        8 => Call::new(id, "liar", n),
        9 => Call::new(id, "slow", n),
        _ => {
            let mut deep = json!(1);
            for _ in 0..100 {
                deep = json!([deep]);
            }
            Call::new(id, "echo", json!({"n": deep}))
        }
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// What must not depend on the neighbours: status, envelope, attempts, repair.
fn outcome(r: &CallResult) -> String {
    format!(
        "{:?} {} attempts={} repaired={}",
        r.status,
        serde_json::to_string(&r.envelope).expect("serializes"),
        r.attempts,
        r.repaired
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn one_bad_call_never_affects_a_neighbour(
        kinds in prop::collection::vec(0..KINDS, 1..12).prop_filter(
            "at most one slow call keeps the test quick",
            |k| k.iter().filter(|&&k| k == 9).count() <= 1,
        ),
        concurrency in 1usize..5,
    ) {
        let engine = engine();
        let calls: Vec<Call> = kinds.iter().enumerate().map(|(i, &k)| call(i, k)).collect();
        let options = BatchOptions { concurrency: Some(concurrency), ..BatchOptions::default() };
        let together = runtime().block_on(engine.run(calls.clone(), Caller::default(), options));
        prop_assert_eq!(together.results.len(), calls.len());
        for (c, r) in calls.iter().zip(&together.results) {
            let alone = runtime().block_on(engine.run(vec![c.clone()], Caller::default(), BatchOptions::default()));
            prop_assert_eq!(outcome(r), outcome(&alone.results[0]), "call {} ({})", c.id, c.tool);
        }
    }

    #[test]
    fn a_slow_call_delays_no_neighbour_beyond_its_timeout(extra in 1usize..6) {
        let engine = engine();
        let mut calls = vec![Call::new("slow", "slow", json!({"n": 0}))];
        calls.extend((0..extra).map(|i| call(i + 1, [0, 2, 5, 6, 7, 8][i])));
        let started = std::time::Instant::now();
        let out = runtime().block_on(engine.run(calls, Caller::default(), BatchOptions::default()));
        prop_assert_eq!(out.results[0].envelope.code(), Some(tooljig::ErrorCode::Timeout));
        // The slow handler sleeps 400 ms; its 30 ms timeout ends it, and nothing waits for it.
        prop_assert!(started.elapsed() < Duration::from_millis(390), "{:?}", started.elapsed());
    }
}
