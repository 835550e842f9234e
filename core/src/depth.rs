//! How deep a JSON value nests. Whatever tooljig accepts it also stores (idempotency records,
//! runs, the audit log) and must read back, and `serde_json` refuses to read text nested
//! deeper than 128 levels; a stored record wraps a call's data in a few levels of its own. So
//! data and error details deeper than [`MAX_DEPTH`] are refused where they enter, with a
//! closed code, rather than stored unreadable.

use serde_json::Value;

/// Deepest a tool's data or an error's details may nest: 128 less room for the records
/// that wrap them.
pub const MAX_DEPTH: usize = 100;

/// Whether `value` nests deeper than `max` levels (a scalar is level 0, `[1]` level 1).
/// Iterative, so a hostile value cannot overflow the stack here; only nested containers are
/// stacked, so flat data (most tools' results) costs no allocation.
pub fn deeper_than(value: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 0usize));
    while let Some((v, depth)) = next.take().or_else(|| stack.pop()) {
        let (mut items, mut values);
        let children: &mut dyn Iterator<Item = &Value> = match v {
            Value::Array(a) => {
                items = a.iter();
                &mut items
            }
            Value::Object(map) => {
                values = map.values();
                &mut values
            }
            _ => continue,
        };
        if depth + 1 > max {
            return true;
        }
        stack.extend(
            children
                .filter(|c| matches!(c, Value::Array(_) | Value::Object(_)))
                .map(|c| (c, depth + 1)),
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |v, _| json!([v]))
    }

    #[test]
    fn counts_levels_of_arrays_and_objects() {
        assert!(!deeper_than(&json!(1), 0));
        assert!(deeper_than(&json!([1]), 0));
        assert!(!deeper_than(&json!({"a": [1]}), 2));
        assert!(deeper_than(&json!({"a": [[1]]}), 2));
        assert!(!deeper_than(&nested(MAX_DEPTH), MAX_DEPTH));
        assert!(deeper_than(&nested(MAX_DEPTH + 1), MAX_DEPTH));
        assert!(deeper_than(&nested(1_000), MAX_DEPTH));
        assert!(deeper_than(&json!([]), 0));
        assert!(!deeper_than(&json!([]), 1));
        assert!(deeper_than(
            &json!({"a": 1, "b": [{"c": [2]}], "d": "e"}),
            3
        ));
        assert!(!deeper_than(
            &json!({"a": 1, "b": [{"c": [2]}], "d": "e"}),
            4
        ));
    }
}
