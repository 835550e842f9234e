//! The casing rule for tooljig's provider-neutral types at the JS edge (messages, tool calls,
//! model turns and requests, stream events, run outcomes).
//!
//! These nest deeper than the engine's objects (a request holds messages holding tool calls),
//! so their keys are renamed at every level, except under the keys in
//! [`shape::NEUTRAL_DATA`]: those hold
//! the app's or the model's own data (arguments, envelopes, schemas, partial input) and pass
//! through byte for byte, as `keys.rs` promises for the engine's objects. A spec's `policy`
//! follows the engine's rule (its keys and its `retry`'s).

use crate::convert::{keys, shape};
use serde_json::{Map, Value};

/// A neutral value from the core with camelCase keys for JavaScript.
pub fn to_js(value: Value) -> Value {
    convert(value, keys::camel)
}

/// A neutral value from JavaScript (camelCase or snake_case keys) with the core's keys.
pub fn from_js(value: Value) -> Value {
    convert(value, keys::snake)
}

/// A serializable core value, with camelCase keys.
pub fn js<T: serde::Serialize>(value: &T) -> Value {
    to_js(serde_json::to_value(value).unwrap_or(Value::Null))
}

/// Reads a core value from JavaScript data, naming `what` in the error.
pub fn parse<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> napi::Result<T> {
    serde_json::from_value(from_js(value)).map_err(|e| invalid(what, e))
}

/// An `InvalidArg` error naming the argument.
pub fn invalid(what: &str, e: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, format!("{what}: {e}"))
}

fn convert(value: Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(convert_map(map, rename)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| convert(v, rename)).collect())
        }
        Value::Number(n) => Value::Number(whole(n)),
        other => other,
    }
}

/// A JavaScript number that holds a whole value as an integer. napi hands every number
/// outside the 32-bit range over as a float (a timestamp in ms is one), which the core's
/// integer fields (`expires_at_ms`, `duration_us`) would refuse.
fn whole(n: serde_json::Number) -> serde_json::Number {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: beyond it a float is no exact integer
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT => {
            if f >= 0.0 {
                (f as u64).into()
            } else {
                (f as i64).into()
            }
        }
        _ => n,
    }
}

fn convert_map(map: Map<String, Value>, rename: fn(&str) -> String) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let snake = keys::snake(&k);
            let v = if snake == "policy" {
                keys::rename(v, shape::POLICY, rename)
            } else if shape::NEUTRAL_DATA.contains(&snake.as_str()) {
                v
            } else {
                convert(v, rename)
            };
            (rename(&k), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_renamed_at_every_level_data_untouched() {
        let turn = json!({"tool_calls": [{"id": "c1", "arguments": {"user_id": 1},
            "provider_data": {"thought_signature": "x"}}], "finish_reason": "tool_calls",
            "usage": {"input_tokens": 3}});
        let js = to_js(turn.clone());
        assert_eq!(
            js,
            json!({"toolCalls": [{"id": "c1", "arguments": {"user_id": 1},
                "providerData": {"thought_signature": "x"}}], "finishReason": "tool_calls",
                "usage": {"inputTokens": 3}})
        );
        assert_eq!(from_js(js), turn);
    }

    #[test]
    fn whole_floats_become_integers_outside_data() {
        let from = json!({"expires_at_ms": 1.7e12, "ratio": 0.5, "arguments": {"n": 2.0}});
        let v = from_js(from);
        assert_eq!(v["expires_at_ms"].as_u64(), Some(1_700_000_000_000));
        assert_eq!(v["ratio"], 0.5);
        assert!(v["arguments"]["n"].is_f64(), "data passes untouched");
    }

    #[test]
    fn counters_keep_error_codes_as_keys() {
        let c = json!({"failures_by_code": {"not_found": 2}, "needs_loops": 1});
        assert_eq!(
            to_js(c),
            json!({"failuresByCode": {"not_found": 2}, "needsLoops": 1})
        );
    }
}
