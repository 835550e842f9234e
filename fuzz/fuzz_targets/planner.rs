//! The planner with any graph: calls naming known and unknown tools, declared dependencies
//! and `$from` references in any shape (cycles, self-edges, missing ids, duplicate ids).
//! Planning never panics and accounts for every call exactly once, in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tooljig::plan::{Entry, Plan};
use tooljig::{Call, Limits, Registry, Tool, ToolSpec};

fn registry() -> Registry {
    let registry = Registry::default();
    for name in ["a", "b"] {
        let spec = ToolSpec::from_value(json!({"name": name})).expect("a valid spec");
        registry.register(Tool::external(spec)).expect("registers");
    }
    registry
}

fuzz_target!(|input: Vec<(u8, u8, u8, bool)>| {
    let registry = registry();
    let n = input.len().min(64);
    let calls: Vec<Call> = input[..n]
        .iter()
        .enumerate()
        .map(|(i, &(id, dep, reference, declared))| {
            // Ids collide on purpose (`id % n`), dependencies may name missing calls.
            let id = format!("c{}", usize::from(id) % (n + 1));
            let tool = ["a", "b", "missing", ""][i % 4].to_string();
            let dep = format!("c{}", usize::from(dep) % (n + 2));
            let arguments = if reference % 3 == 0 {
                json!({"x": {"$from": format!("c{}", reference % 8), "pointer": "/v"}})
            } else {
                json!({"x": reference})
            };
            let mut call = Call::new(id, tool, arguments);
            if declared {
                call.depends_on = vec![dep];
            }
            call
        })
        .collect();
    let plan = Plan::build(
        &calls,
        &registry.snapshot(),
        &Limits::default(),
        None,
        &|_| true,
    );
    assert_eq!(
        plan.entries.len(),
        calls.len(),
        "every call is planned once"
    );
    for entry in &plan.entries {
        if let Entry::Ready(node) = entry {
            for &d in node.deps.iter().chain(&node.order_only) {
                assert!(d < calls.len(), "a dependency points inside the batch");
            }
        }
    }
});
