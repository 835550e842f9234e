//! Argument repair on cases it was not tuned to: `arguments_repair_cases.jsonl`, written for
//! this test (not taken from a library's tests), of the kinds models break arguments in.
//!
//! Each line is `{batch?, kind, input, expected | refused, why?, follows?, jsonrepair,
//! json_repair}`. The cases marked `"batch": "held-out"` were written after repair was
//! improved on the others and were not tuned to: their figure is reported apart.
//! `jsonrepair` and `json_repair` record what the two reference repairers gave (`{"ok": value}`
//! or `{"err": message}`; the JS `jsonrepair` 3.15.0 and the Python `json-repair` 0.64.9).
//! `expected` is their common value; where they differ, `follows` names the one that is right
//! for a tool call's arguments, and `why` says why a case is refused although a reference
//! returns a value (a text cut off inside a value; a key written with no value; a value that
//! cannot be read without dropping text).
//!
//! The engine's path (`parse_text`) must: refuse every cut-off text as `incomplete_arguments`
//! and no other; never return a value other than the expected one (a wrong value would run the
//! tool with data nobody sent); and agree on at least [`FLOOR`] of the cases, the cut-off ones
//! left out (refused by design, checked above).

use serde_json::Value;
use std::collections::BTreeMap;
use tooljig::arguments::parse_text;
use tooljig::{ErrorCode, Limits};

/// Agreement the engine must keep on the cases that are not cut off (`docs/arguments.md`).
const FLOOR: f64 = 0.80;

/// One case of the table.
struct Case {
    held_out: bool,
    kind: String,
    input: String,
    want: Result<Value, ErrorCode>,
    references: [(&'static str, Value); 2],
}

fn cases() -> Vec<Case> {
    let text = include_str!("arguments_repair_cases.jsonl");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let c: Value = serde_json::from_str(line).expect("a case is JSON");
            let want = match c.get("refused") {
                Some(code) => Err(serde_json::from_value(code.clone()).expect("a closed code")),
                None => Ok(c["expected"].clone()),
            };
            Case {
                held_out: c["batch"] == "held-out",
                kind: c["kind"].as_str().expect("a kind").to_string(),
                input: c["input"].as_str().expect("an input").to_string(),
                want,
                references: [
                    ("jsonrepair", c["jsonrepair"].clone()),
                    ("json_repair", c["json_repair"].clone()),
                ],
            }
        })
        .collect()
}

/// Equal as JSON values, numbers compared by value (`5.0` is `5`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether the engine's answer matches a reference's record (`{"ok": v}` or `{"err": _}`).
fn agrees_with(got: &Result<Value, ErrorCode>, reference: &Value) -> bool {
    match (got, reference.get("ok")) {
        (Ok(v), Some(r)) => same(v, r),
        (Err(_), None) => true,
        _ => false,
    }
}

#[test]
fn repair_agrees_on_unseen_cases() {
    let cases = cases();
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let (mut counted, mut agreed) = (0usize, 0usize);
    let mut with_reference = [0usize; 2];
    let mut wrong = Vec::new();
    let mut misjudged = Vec::new();
    let mut held_out = (0usize, 0usize);
    for case in &cases {
        let got = parse_text(&case.input, &Limits::default())
            .map(|p| p.value)
            .map_err(|e| e.code);
        let cut_off = case.want == Err(ErrorCode::IncompleteArguments);
        // Cut-off text refused, complete text never refused as cut off: no exceptions.
        if cut_off != (got == Err(ErrorCode::IncompleteArguments)) {
            misjudged.push(format!("[{}] {:?}: got {got:?}", case.kind, case.input));
        }
        if cut_off {
            continue;
        }
        counted += 1;
        for (n, (_, reference)) in case.references.iter().enumerate() {
            with_reference[n] += usize::from(agrees_with(&got, reference));
        }
        let good = match (&got, &case.want) {
            (Ok(v), Ok(w)) => same(v, w),
            (Err(g), Err(w)) => g == w,
            _ => false,
        };
        if case.held_out {
            held_out.0 += 1;
            held_out.1 += usize::from(good);
        }
        let entry = by_kind.entry(&case.kind).or_default();
        entry.0 += 1;
        if good {
            agreed += 1;
            entry.1 += 1;
        } else {
            println!(
                "  disagrees [{}] {:?}: got {got:?}, want {:?}",
                case.kind, case.input, case.want
            );
            if got.is_ok() {
                wrong.push(format!(
                    "{:?}: got {got:?}, want {:?}",
                    case.input, case.want
                ));
            }
        }
    }
    for (kind, (n, ok)) in &by_kind {
        println!("  {kind}: {ok}/{n}");
    }
    let rate = agreed as f64 / counted.max(1) as f64;
    println!(
        "unseen repair cases: {agreed}/{counted} agree ({:.1}%), cut-off texts left out; \
         as the references: jsonrepair {}/{counted}, json_repair {}/{counted}; \
         held out: {}/{}",
        rate * 100.0,
        with_reference[0],
        with_reference[1],
        held_out.1,
        held_out.0
    );
    assert!(
        misjudged.is_empty(),
        "texts misjudged as cut off or complete:\n{}",
        misjudged.join("\n")
    );
    assert!(
        wrong.is_empty(),
        "the engine returned values the table does not expect:\n{}",
        wrong.join("\n")
    );
    assert!(
        rate >= FLOOR,
        "agreement {agreed}/{counted} fell below {:.0}%",
        FLOOR * 100.0
    );
}
