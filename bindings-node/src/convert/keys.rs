//! The casing rule at the JavaScript edge.
//!
//! Core data is snake_case (Rust, Python and the conformance vectors spell it so); JavaScript
//! users write camelCase. Only the *keys of the binding's own objects* are renamed: the first
//! level of specs, policies, callers, calls, options, results and events, plus the nested
//! objects named in each call (`policy`, `retry`, `result`). Values are never touched: envelopes,
//! arguments, schemas, caller attributes and any nested data pass through byte for byte, so a
//! field a later issue adds to the core flows through without a binding change, and an
//! argument named `userId` inside a policy stays `userId`.

use super::shape::{self, Shape};
use serde_json::Value;

/// `timeoutMs` → `timeout_ms`; keys already in snake_case are unchanged.
pub fn snake(key: &str) -> String {
    if !key.bytes().any(|b| b.is_ascii_uppercase()) {
        return key.to_string();
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `timeout_ms` → `timeoutMs`; keys without `_` are unchanged.
pub fn camel(key: &str) -> String {
    if !key.contains('_') {
        return key.to_string();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `value` from the core with the keys of the objects `shape` names in camelCase.
pub fn to_js(value: Value, shape: Shape) -> Value {
    rename(value, shape, camel)
}

/// `value` from JavaScript (camelCase or snake_case keys) with the core's keys.
pub fn from_js(value: Value, shape: Shape) -> Value {
    rename(value, shape, snake)
}

/// `value` with the keys of the objects `shape` names renamed by `rename`.
pub fn rename(value: Value, shape: Shape, rename: fn(&str) -> String) -> Value {
    walk(value, shape, rename, &mut Vec::new())
}

/// Renames the keys of the objects at `shape`'s paths; `path` holds the segments so far, in
/// the core's spelling.
fn walk(value: Value, shape: Shape, rename: fn(&str) -> String, path: &mut Vec<String>) -> Value {
    match value {
        Value::Object(map) if shape::renames(shape, path) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    path.push(snake(&k));
                    let v = walk(v, shape, rename, path);
                    path.pop();
                    (rename(&k), v)
                })
                .collect(),
        ),
        // Objects whose keys stay may still hold renamed ones deeper (`results/*/approval`).
        Value::Object(map) if shape::reaches_below(shape, path) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    path.push(snake(&k));
                    let v = walk(v, shape, rename, path);
                    path.pop();
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) if shape::reaches_below(shape, path) => Value::Array(
            items
                .into_iter()
                .map(|v| {
                    path.push("*".into());
                    let v = walk(v, shape, rename, path);
                    path.pop();
                    v
                })
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renames_both_ways() {
        assert_eq!(snake("timeoutMs"), "timeout_ms");
        assert_eq!(snake("runIfDependencyFailed"), "run_if_dependency_failed");
        assert_eq!(snake("max_calls"), "max_calls");
        assert_eq!(camel("duration_us"), "durationUs");
        assert_eq!(camel("call_id"), "callId");
        assert_eq!(camel("tool"), "tool");
        assert_eq!(camel(&snake("maxBackoffMs")), "maxBackoffMs");
    }

    #[test]
    fn values_are_left_alone() {
        let v = json!({"name": "t", "inputSchema": {"maxItems": 1},
            "policy": {"timeoutMs": 5, "retry": {"backoffMs": 1}, "hiddenArgs": {"userId": 1}}});
        assert_eq!(
            from_js(v, shape::SPEC_IN),
            json!({"name": "t", "input_schema": {"maxItems": 1},
                "policy": {"timeout_ms": 5, "retry": {"backoff_ms": 1}, "hidden_args": {"userId": 1}}})
        );
    }

    #[test]
    fn nested_paths_through_arrays() {
        let batch = json!({"run_id": "r", "results": [{"call_id": "a", "envelope": {"ok_now": 1},
            "approval": {"expires_at_ms": 1}}]});
        assert_eq!(
            to_js(batch, shape::BATCH),
            json!({"runId": "r", "results": [{"callId": "a", "envelope": {"ok_now": 1},
                "approval": {"expiresAtMs": 1}}]})
        );
    }
}
