//! The casing rule at the JavaScript edge.
//!
//! Core data is snake_case (Rust, Python and the conformance vectors spell it so); JavaScript
//! users write camelCase. Only the *keys of the binding's own objects* are renamed: the first
//! level of specs, policies, callers, calls, options, results and events, plus the nested
//! objects named in each call (`policy`, `retry`, `result`). Values are never touched: envelopes,
//! arguments, schemas, caller attributes and any nested data pass through byte for byte, so a
//! field a later issue adds to the core flows through without a binding change, and an
//! argument named `userId` inside a policy stays `userId`.

use serde_json::{Map, Value};

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

/// Renames the keys of `value` (when it is an object) with `rename`, then the keys of the
/// nested objects under `nested` (names after renaming) the same way, one level each.
pub fn rename(value: Value, rename: fn(&str) -> String, nested: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(rename_map(map, rename, nested)),
        other => other,
    }
}

fn rename_map(
    map: Map<String, Value>,
    rename: fn(&str) -> String,
    nested: &[&str],
) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let k = rename(&k);
            let v = if nested.contains(&k.as_str()) {
                self::rename(v, rename, &[])
            } else {
                v
            };
            (k, v)
        })
        .collect()
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
        let v = json!({"timeoutMs": 5, "retry": {"backoffMs": 1}, "hiddenArgs": {"userId": 1}});
        assert_eq!(
            rename(v, snake, &["retry"]),
            json!({"timeout_ms": 5, "retry": {"backoff_ms": 1}, "hidden_args": {"userId": 1}})
        );
    }
}
