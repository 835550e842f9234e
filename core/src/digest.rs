//! Canonical JSON and its SHA-256: the identity of a call's arguments.
//!
//! Two argument values that differ only in key order or whitespace are the same call, so
//! idempotency keys and approval bindings hash a canonical form: object keys sorted,
//! no whitespace, numbers and strings as `serde_json` writes them.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` serialized with every object's keys sorted and no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    write_canonical(value, &mut out);
    into_string(out)
}

/// Appends the canonical form of `value` to `out` (the cache builds its keys this way).
/// Strings and numbers are written as serde_json writes them ([`crate::json_text`]),
/// straight into `out`: no allocation per string, and the text is valid, unambiguous JSON.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                crate::json_text::string(out, k);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => crate::json_text::value(out, scalar),
    }
}

/// The text of bytes written as JSON (always UTF-8), without copying them.
pub fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Lower-case hex of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    const_hex::encode(bytes)
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 of the canonical form of `value`.
pub fn hash_value(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    write_hash_value(value, &mut out);
    into_string(out)
}

/// Appends the lower-case hex SHA-256 of the canonical form of `value` to `out`: the form
/// is written at `out`'s end, hashed, and replaced by its hash, so the digest of a value
/// written into a larger text (an audit record's redacted field) costs no allocation.
pub fn write_hash_value(value: &Value, out: &mut Vec<u8>) {
    let start = out.len();
    write_canonical(value, out);
    let digest = Sha256::digest(&out[start..]);
    out.truncate(start);
    let mut hex = [0u8; 64];
    if const_hex::encode_to_slice(digest, &mut hex).is_ok() {
        out.extend_from_slice(&hex);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#);
        assert_eq!(hash_value(&a), hash_value(&b));
        let mut written = b"before ".to_vec();
        write_hash_value(&a, &mut written);
        assert_eq!(written, format!("before {}", hash_value(&a)).into_bytes());
        assert_ne!(hash_value(&a), hash_value(&json!({"a": null, "b": [1]})));
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
