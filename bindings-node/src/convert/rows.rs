//! A batch's results as `run` hands them to JS: each plain result (done, with its arguments
//! and its start, nothing else set) as a row of its values, which `lib/rows.mjs` makes into
//! the object [`camel_json`](super::camel_json) would have written; any other result as that
//! object.
//!
//! In a Node profile of 1,000-call batches, parsing the results' text was the largest part of
//! the JS side (every result's twelve keys, its tool and status internalized as strings), and
//! renaming their keys while serializing them 3% of the whole. A row has no keys, and names
//! its tool by its place in the batch's list of tools.
//!
//! `[{..the batch, "results": []}, [..rows], [..tools]]`, where a row is
//! `[call_id, tool, envelope, attempts, flags, arguments, started_us, finished_us,
//! duration_us]` and `flags` holds `repaired` (1), `replayed` (2) and `cached` (4).

use super::camel_json::to_camel_json;
use super::shape;
use serde_json::Value;
use tooljig::{BatchResult, CallResult, CallStatus};

/// The text of `out` for `run` (see the module's docs).
pub fn rows_text(mut out: BatchResult) -> String {
    let results = std::mem::take(&mut out.results);
    let mut tools: Vec<&str> = Vec::new();
    let mut text = Vec::with_capacity(64 + results.len() * 128);
    text.push(b'[');
    text.extend_from_slice(to_camel_json(&out, shape::BATCH).as_bytes());
    text.extend_from_slice(b",[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        match plain(r) {
            Some((arguments, started_us)) => {
                let tool = match tools.iter().rposition(|t| *t == r.tool) {
                    Some(at) => at,
                    None => {
                        tools.push(&r.tool);
                        tools.len() - 1
                    }
                };
                let flags =
                    u8::from(r.repaired) | u8::from(r.replayed) << 1 | u8::from(r.cached) << 2;
                let row = (
                    &r.call_id,
                    tool,
                    &r.envelope,
                    r.attempts,
                    flags,
                    arguments,
                    started_us,
                    r.finished_us,
                    r.duration_us,
                );
                // Only a failing `Serialize` impl can fail here; these types have none.
                if serde_json::to_writer(&mut text, &row).is_err() {
                    text.extend_from_slice(b"null");
                }
            }
            None => text.extend_from_slice(to_camel_json(r, shape::RESULT).as_bytes()),
        }
    }
    text.extend_from_slice(b"],");
    if serde_json::to_writer(&mut text, &tools).is_err() {
        text.extend_from_slice(b"[]");
    }
    text.push(b']');
    String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The arguments and start of a result a row can carry: done, both set, and none of the
/// fields a result leaves out while unset. Every field is named, none skipped with `..`: a
/// field added to `CallResult` does not compile here until it is placed in the row or made
/// to keep its result out of the rows.
fn plain(r: &CallResult) -> Option<(&Value, u64)> {
    let CallResult {
        call_id: _,
        tool: _,
        status,
        envelope: _,
        attempts: _,
        repaired: _,
        replayed: _,
        cached: _,
        arguments,
        started_us,
        finished_us: _,
        duration_us: _,
        detail,
        approval,
        recovered,
        hidden,
        defaults,
        parent,
        model_output,
    } = r;
    let bare = *status == CallStatus::Done
        && detail.is_none()
        && approval.is_none()
        && !recovered
        && hidden.is_empty()
        && defaults.is_empty()
        && parent.is_none()
        && model_output.is_none();
    match (bare, arguments, started_us) {
        (true, Some(arguments), Some(started_us)) => Some((arguments, *started_us)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tooljig::Envelope;

    /// What `lib/rows.mjs` does, for the test: a row made into its result object.
    fn expand(rows: Value) -> Value {
        let tools = rows[2].as_array().unwrap().clone();
        let mut batch = rows[0].clone();
        let results: Vec<Value> = rows[1]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| match r.as_array() {
                None => r.clone(),
                Some(r) => {
                    let flags = r[4].as_u64().unwrap();
                    json!({
                        "callId": r[0], "tool": tools[r[1].as_u64().unwrap() as usize],
                        "status": "done", "envelope": r[2], "attempts": r[3],
                        "repaired": flags & 1 != 0, "replayed": flags & 2 != 0,
                        "cached": flags & 4 != 0, "arguments": r[5], "startedUs": r[6],
                        "finishedUs": r[7], "durationUs": r[8]
                    })
                }
            })
            .collect();
        batch["results"] = Value::Array(results);
        batch
    }

    fn done(id: &str, tool: &str, envelope: Envelope) -> CallResult {
        let mut r = CallResult::refused(id, tool, envelope);
        r.arguments = Some(json!({"q": "x \"y\"", "n_snake": [1, {"deep_key": 2}]}));
        r.started_us = Some(7);
        r.finished_us = 9;
        r.duration_us = 2;
        r.attempts = 1;
        r
    }

    #[test]
    fn rows_expand_to_the_text_of_the_batch() {
        let mut cached = done("c2", "lookup", Envelope::Ok(json!({"user_id": "u"})));
        (cached.cached, cached.replayed) = (true, true);
        let mut hidden = done("c3", "send", Envelope::Ok(json!(null)));
        hidden.hidden = serde_json::from_value(
            json!([{"parameter": "user_id", "source": "principal", "injected": true}]),
        )
        .unwrap();
        let mut pending = done("c5", "send", Envelope::Ok(json!(1)));
        pending.status = CallStatus::PendingApproval;
        let out = BatchResult {
            results: vec![
                done("c1", "lookup", Envelope::Ok(json!({"a_b": [1, 2]}))),
                cached,
                hidden,
                CallResult::refused(
                    "c4",
                    "nope",
                    Envelope::error(tooljig::ErrorCode::UnknownTool, "no tool \"nope\""),
                ),
                pending,
                done(
                    "c6",
                    "send",
                    Envelope::error(tooljig::ErrorCode::Conflict, "é"),
                ),
            ],
            duration_us: 11,
            run_id: Some("run_1".into()),
            rollback: None,
        };
        let whole = to_camel_json(&out, shape::BATCH);
        let rows: Value = serde_json::from_str(&rows_text(out)).unwrap();
        assert_eq!(rows[2], json!(["lookup", "send"]));
        let kinds: Vec<bool> = rows[1]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::is_array)
            .collect();
        assert_eq!(kinds, [true, true, false, false, false, true]);
        // The same keys in the same order, the same values: the same text.
        assert_eq!(expand(rows).to_string(), whole);
    }
}
