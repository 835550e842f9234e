//! Planning a batch (`plan.rs`): ids, dependencies resolved to indices, refusals in place.

use serde_json::json;
use tooljig::plan::{Entry, Plan};
use tooljig::{Call, ErrorCode, Limits, Registry, Tool, ToolSpec};

fn registry() -> Registry {
    let registry = Registry::default();
    for name in ["a", "b"] {
        let spec = ToolSpec::from_value(json!({"name": name})).expect("a valid spec");
        registry.register(Tool::external(spec)).expect("registers");
    }
    registry
}

fn plan(calls: &[Call]) -> Plan {
    Plan::build(
        calls,
        &registry().snapshot(),
        &Limits::default(),
        None,
        &|_| true,
    )
}

/// Per call: its id, and its dependencies or the code it was refused with.
fn outline(plan: &Plan) -> Vec<(String, Result<Vec<usize>, ErrorCode>)> {
    plan.entries
        .iter()
        .map(|e| match e {
            Entry::Ready(n) => (n.id.to_string(), Ok(n.deps.clone())),
            Entry::Refused(r) => (r.call_id.clone(), Err(r.envelope.code().expect("a code"))),
        })
        .collect()
}

#[test]
fn calls_without_ids_are_named_by_their_place_and_can_be_depended_on() {
    let mut second = Call::new("", "b", json!({}));
    second.depends_on = vec!["call_0".into()];
    let third = Call::new("", "a", json!({"x": {"$from": "call_1", "pointer": "/v"}}));
    let plan = plan(&[Call::new("", "a", json!({})), second, third]);
    assert_eq!(
        outline(&plan),
        vec![
            ("call_0".into(), Ok(vec![])),
            ("call_1".into(), Ok(vec![0])),
            ("call_2".into(), Ok(vec![1])),
        ]
    );
}

#[test]
fn duplicates_missing_dependencies_and_cycles_are_refused_alone() {
    let mut missing = Call::new("m", "a", json!({}));
    missing.depends_on = vec!["nowhere".into()];
    let mut x = Call::new("x", "a", json!({}));
    x.depends_on = vec!["y".into()];
    let y = Call::new("y", "b", json!({"v": {"$from": "x", "pointer": ""}}));
    let mut own = Call::new("own", "a", json!({}));
    own.depends_on = vec!["own".into()];
    let calls = [
        Call::new("d", "a", json!({})),
        Call::new("d", "b", json!({})),
        missing,
        x,
        y,
        own,
        Call::new("free", "b", json!({})),
        Call::new("u", "no_such_tool", json!({})),
    ];
    assert_eq!(
        outline(&plan(&calls)),
        vec![
            ("d".into(), Ok(vec![])),
            ("d".into(), Err(ErrorCode::InvalidRequest)),
            ("m".into(), Err(ErrorCode::UnknownDependency)),
            ("x".into(), Err(ErrorCode::DependencyCycle)),
            ("y".into(), Err(ErrorCode::DependencyCycle)),
            ("own".into(), Err(ErrorCode::DependencyCycle)),
            ("free".into(), Ok(vec![])),
            ("u".into(), Err(ErrorCode::UnknownTool)),
        ]
    );
}

#[test]
fn a_tool_after_another_waits_for_its_calls_without_failing_with_them() {
    let registry = Registry::default();
    let first = ToolSpec::from_value(json!({"name": "first"})).expect("a spec");
    let then = ToolSpec::from_value(json!({"name": "then", "policy": {"after": ["first"]}}))
        .expect("a spec");
    for spec in [first, then] {
        registry.register(Tool::external(spec)).expect("registers");
    }
    let calls = [
        Call::new("t", "then", json!({})),
        Call::new("f", "first", json!({})),
    ];
    let plan = Plan::build(
        &calls,
        &registry.snapshot(),
        &Limits::default(),
        None,
        &|_| true,
    );
    let Entry::Ready(t) = &plan.entries[0] else {
        panic!("`then` is planned")
    };
    assert_eq!((t.deps.clone(), t.order_only.clone()), (vec![1], vec![1]));
}

#[test]
fn a_large_batch_finds_ids_as_a_small_one_does() {
    // Small batches scan their ids, larger ones hash them: the same calls padded past the
    // scan's reach must plan alike, duplicates and dependencies included.
    let head = || {
        let mut later = Call::new("later", "b", json!({}));
        later.depends_on = vec!["first".into(), "gone".into()];
        let mut on_dup = Call::new("on_dup", "a", json!({}));
        on_dup.depends_on = vec!["dup".into()];
        vec![
            Call::new("first", "a", json!({})),
            Call::new("dup", "a", json!({})),
            Call::new("dup", "b", json!({})),
            later,
            on_dup,
        ]
    };
    let small = outline(&plan(&head()));
    let mut large_calls = head();
    large_calls.extend((0..20).map(|i| Call::new(format!("pad{i}"), "a", json!({}))));
    let large = outline(&plan(&large_calls));
    assert_eq!(large[..small.len()], small[..]);
    assert_eq!(
        small,
        vec![
            ("first".into(), Ok(vec![])),
            ("dup".into(), Ok(vec![])),
            ("dup".into(), Err(ErrorCode::InvalidRequest)),
            ("later".into(), Err(ErrorCode::UnknownDependency)),
            ("on_dup".into(), Ok(vec![1])),
        ]
    );
}
