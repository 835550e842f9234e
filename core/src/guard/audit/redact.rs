//! Redaction of arguments (and outputs) before they reach the audit record, per tool and per
//! field: keep the value, replace it with a marker, or keep only a hash of it (so equal
//! values can still be matched across records without storing them).

use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub use crate::policy::redaction::Redaction;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The key of a redaction map that applies to every top-level field without its own entry.
pub const EVERY_FIELD: &str = "*";

/// `sha256:<hex>` of the canonical JSON of `value`.
pub fn hash_value(value: &Value) -> String {
    let mut out = Vec::with_capacity(71);
    out.extend_from_slice(b"sha256:");
    crate::digest::write_hash_value(value, &mut out);
    crate::digest::into_string(out)
}

/// [`hash_value`] as a JSON string, written straight into `out` (an audit record's text)
/// as serde_json would write it: the text has nothing to escape.
pub fn write_hash_value(value: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\"sha256:");
    crate::digest::write_hash_value(value, out);
    out.push(b'"');
}

fn apply_one(value: &mut Value, how: Redaction) {
    match how {
        Redaction::Keep => {}
        Redaction::Redact => *value = Value::String(REDACTED.into()),
        Redaction::Hash => *value = Value::String(hash_value(value)),
    }
}

fn pointer(field: &str) -> String {
    if field.starts_with('/') {
        field.to_string()
    } else {
        format!("/{}", field.replace('~', "~0").replace('/', "~1"))
    }
}

/// The value a rule names: a top-level name directly, a JSON pointer segment by segment.
fn field_mut<'a>(map: &'a mut Map<String, Value>, field: &str) -> Option<&'a mut Value> {
    let Some(path) = field.strip_prefix('/') else {
        return map.get_mut(field);
    };
    let (first, rest) = match path.find('/') {
        Some(i) => (&path[..i], &path[i..]),
        None => (path, ""),
    };
    let first = first.replace("~1", "/").replace("~0", "~");
    let top = map.get_mut(&first)?;
    if rest.is_empty() {
        Some(top)
    } else {
        top.pointer_mut(rest)
    }
}

/// Applies `rules` (top-level names or JSON pointers → how) to `value`, in place. A value
/// that is not an object (arguments that never parsed) is redacted whole as soon as any rule
/// hides something, since no field of it can be found.
pub fn redact(value: &mut Value, rules: &BTreeMap<String, Redaction>) {
    if !hides_anything(rules) {
        return;
    }
    let Value::Object(map) = value else {
        if !value.is_null() {
            *value = Value::String(REDACTED.into());
        }
        return;
    };
    if let Some(&every) = rules.get(EVERY_FIELD) {
        // A field named `*` has no rule of its own but this one.
        for (k, v) in map.iter_mut() {
            if k == EVERY_FIELD || !rules.contains_key(k) {
                apply_one(v, every);
            }
        }
    }
    for (field, &how) in rules {
        if field == EVERY_FIELD {
            continue;
        }
        if let Some(v) = field_mut(map, field) {
            apply_one(v, how);
        }
    }
}

/// Whether `rules` change anything: some rule redacts or hashes.
pub fn hides_anything(rules: &BTreeMap<String, Redaction>) -> bool {
    rules.values().any(|r| *r != Redaction::Keep)
}

/// How one top-level field is redacted (for values noted apart from the arguments, such as
/// a hidden argument the model tried to set).
pub fn rule_for(rules: &BTreeMap<String, Redaction>, field: &str) -> Redaction {
    if rules.is_empty() {
        return Redaction::Keep;
    }
    // The field's pointer form without building it: `/` and the name, escaped only when
    // the name holds `~` or `/` (rare enough to build the pointer then).
    let by_pointer = || {
        if field.contains(['~', '/']) {
            rules.get(&pointer(field))
        } else {
            rules
                .iter()
                .find(|(k, _)| k.strip_prefix('/') == Some(field))
                .map(|(_, r)| r)
        }
    };
    rules
        .get(field)
        .or_else(by_pointer)
        .or_else(|| rules.get(EVERY_FIELD))
        .copied()
        .unwrap_or_default()
}

/// Redacts one value under the rule of `field`.
pub fn redact_field(value: &mut Value, rules: &BTreeMap<String, Redaction>, field: &str) {
    apply_one(value, rule_for(rules, field));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_redacts_and_hashes() {
        let rules: BTreeMap<String, Redaction> = serde_json::from_value(json!({
            "password": "redact", "email": "hash", "/nested/token": "redact", "name": "keep"
        }))
        .unwrap();
        let mut v = json!({"password": "p", "email": "a@b.c", "name": "Ann", "nested": {"token": "t", "x": 1}});
        redact(&mut v, &rules);
        assert_eq!(v["password"], REDACTED);
        assert_eq!(v["name"], "Ann");
        assert_eq!(v["nested"], json!({"token": REDACTED, "x": 1}));
        assert_eq!(v["email"], hash_value(&json!("a@b.c")));
        assert!(v["email"].as_str().unwrap().starts_with("sha256:"));
    }

    #[test]
    fn every_field_and_unparsed_text() {
        let rules: BTreeMap<String, Redaction> =
            serde_json::from_value(json!({"*": "redact", "id": "keep"})).unwrap();
        let mut v = json!({"id": 1, "body": "secret", "*": "secret too"});
        redact(&mut v, &rules);
        assert_eq!(v, json!({"id": 1, "body": REDACTED, "*": REDACTED}));
        let mut text = json!("{\"body\": \"secret\"");
        redact(&mut text, &rules);
        assert_eq!(text, json!(REDACTED));
        assert_eq!(rule_for(&rules, "other"), Redaction::Redact);
    }

    #[test]
    fn pointers_reach_escaped_and_nested_fields() {
        let rules: BTreeMap<String, Redaction> = serde_json::from_value(json!({
            "/a~1b": "redact", "/t~0x/0": "redact", "/missing/deep": "redact", "/list/9": "redact"
        }))
        .unwrap();
        let mut v = json!({"a/b": 1, "t~x": ["s", "k"], "list": [1]});
        redact(&mut v, &rules);
        assert_eq!(
            v,
            json!({"a/b": REDACTED, "t~x": [REDACTED, "k"], "list": [1]})
        );
        assert_eq!(rule_for(&rules, "a/b"), Redaction::Redact);
        let rules: BTreeMap<String, Redaction> =
            serde_json::from_value(json!({"/token": "hash"})).unwrap();
        assert_eq!(rule_for(&rules, "token"), Redaction::Hash);
        assert_eq!(rule_for(&rules, "other"), Redaction::Keep);
    }
}
