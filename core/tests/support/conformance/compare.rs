//! Comparing what a batch produced with what a vector expects, as readable problems.

use super::vector::{Expect, ExpectedResult};
use serde_json::Value;
use tooljig::{BatchResult, CallResult};

/// Compares each expected result with the actual one at the same position.
pub fn results(expected: &[ExpectedResult], actual: &[CallResult], problems: &mut Vec<String>) {
    if expected.len() != actual.len() {
        problems.push(format!(
            "expect.results has {} entries but the batch returned {} results (one per call); \
             actual call ids: {:?}",
            expected.len(),
            actual.len(),
            actual
                .iter()
                .map(|r| r.call_id.as_str())
                .collect::<Vec<_>>()
        ));
        return;
    }
    for (i, (want, got)) in expected.iter().zip(actual).enumerate() {
        let whole = got.to_value();
        let at = format!("results[{i}] (call {:?})", got.call_id);
        for (key, want) in &want.0 {
            let got_value = match key.as_str() {
                "error_code" => got
                    .envelope
                    .code()
                    .map_or(Value::Null, |c| Value::from(c.as_str())),
                "has_detail" => Value::Bool(got.detail.is_some()),
                // Approval ids, hashes and times are random: compare the keys given only.
                "approval" => match (whole.get("approval"), want.as_object()) {
                    (Some(Value::Object(a)), Some(w)) => Value::Object(
                        w.keys()
                            .map(|k| (k.clone(), a.get(k).cloned().unwrap_or(Value::Null)))
                            .collect(),
                    ),
                    (a, _) => a.cloned().unwrap_or(Value::Null),
                },
                "retry_after_ms_at_most" => {
                    let wait = whole
                        .pointer("/envelope/error/retry_after_ms")
                        .and_then(Value::as_u64);
                    match (wait, want.as_u64()) {
                        (Some(w), Some(max)) if (1..=max).contains(&w) => {}
                        (w, max) => problems.push(format!(
                            "{at}: retry_after_ms should be 1..={max:?}, it is {w:?}"
                        )),
                    }
                    continue;
                }
                "message_contains" => {
                    let message = whole
                        .pointer("/envelope/error/message")
                        .and_then(Value::as_str);
                    match (message, want.as_str()) {
                        (Some(m), Some(w)) if m.contains(w) => {}
                        (_, None) => problems.push(format!(
                            "{at}: message_contains must be a string, not {want}"
                        )),
                        (m, Some(w)) => problems.push(format!(
                            "{at}: error message should contain {w:?}, it is {m:?}"
                        )),
                    }
                    continue;
                }
                other => whole.get(other).cloned().unwrap_or(Value::Null),
            };
            if &got_value != want {
                let mut paths = Vec::new();
                diff(want, &got_value, String::new(), &mut paths);
                problems.push(format!(
                    "{at}.{key} differs:\n{}\n      expected: {}\n      actual:   {}",
                    paths.join("\n"),
                    want,
                    got_value
                ));
            }
        }
    }
}

/// Lists where two JSON values differ, by JSON pointer.
pub fn diff(want: &Value, got: &Value, path: String, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match g.get(k) {
                    Some(gv) => diff(wv, gv, p, out),
                    None => out.push(format!("      at {p:?}: missing, expected {wv}")),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("      at \"{path}/{k}\": unexpected {gv}"));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(wv, gv, format!("{path}/{i}"), out);
            }
        }
        _ if want != got => out.push(format!("      at {path:?}: expected {want}, got {got}")),
        _ => {}
    }
}

/// Checks the ordering, overlap and wall-time facts.
pub fn timing(expect: &Expect, out: &BatchResult, problems: &mut Vec<String>) {
    let find = |id: &str, problems: &mut Vec<String>| -> Option<CallResult> {
        let r = out.get(id).cloned();
        if r.is_none() {
            problems.push(format!(
                "a timing fact names call {id:?}, which is not in the batch"
            ));
        }
        r
    };
    let started = |r: &CallResult, fact: &str, problems: &mut Vec<String>| -> Option<u64> {
        if r.started_us.is_none() {
            problems.push(format!("{fact}: call {:?} never started", r.call_id));
        }
        r.started_us
    };
    for [a, b] in &expect.order {
        let fact = format!("order [{a:?}, {b:?}]");
        let (Some(ra), Some(rb)) = (find(a, problems), find(b, problems)) else {
            continue;
        };
        if let Some(sb) = started(&rb, &fact, problems)
            && sb < ra.finished_us
        {
            problems.push(format!(
                "{fact}: {b:?} started at {sb} µs, before {a:?} finished at {} µs",
                ra.finished_us
            ));
        }
    }
    for [a, b] in &expect.overlap {
        let fact = format!("overlap [{a:?}, {b:?}]");
        let (Some(ra), Some(rb)) = (find(a, problems), find(b, problems)) else {
            continue;
        };
        let (Some(sa), Some(sb)) = (started(&ra, &fact, problems), started(&rb, &fact, problems))
        else {
            continue;
        };
        if !(sa < rb.finished_us && sb < ra.finished_us) {
            problems.push(format!(
                "{fact}: they did not run at the same time: {a:?} ran {sa}..{} µs, {b:?} ran {sb}..{} µs",
                ra.finished_us, rb.finished_us
            ));
        }
    }
    for [a, b] in &expect.disjoint {
        let fact = format!("disjoint [{a:?}, {b:?}]");
        let (Some(ra), Some(rb)) = (find(a, problems), find(b, problems)) else {
            continue;
        };
        let (Some(sa), Some(sb)) = (started(&ra, &fact, problems), started(&rb, &fact, problems))
        else {
            continue;
        };
        if !(ra.finished_us <= sb || rb.finished_us <= sa) {
            problems.push(format!(
                "{fact}: they ran at the same time: {a:?} ran {sa}..{} µs, {b:?} ran {sb}..{} µs",
                ra.finished_us, rb.finished_us
            ));
        }
    }
    if let Some(ms) = expect.within_ms
        && out.duration_us > ms * 1000
    {
        problems.push(format!(
            "the batch took {} µs, more than within_ms {ms}",
            out.duration_us
        ));
    }
}
