//! Compact JSON text, byte for byte as serde_json writes it, for the text a call writes on
//! its path (its audit record, the canonical JSON of its arguments).
//!
//! serde_json checks every string a byte at a time for characters to escape, the names of a
//! struct's fields included; an audit record is mostly such strings, and that scan was the
//! largest single cost of writing one. Here a field name is written as the literal it is, and
//! a string is checked eight bytes at a time and copied when it holds nothing to escape. A
//! string that does is written by serde_json itself, as are numbers, so the text is always
//! serde_json's.

use serde::Serialize;
use serde_json::Value;

/// Whether JSON must escape any of `bytes`: a control character, `"` or `\` (serde_json
/// escapes nothing else). Eight bytes at a time: most strings here are short (names, ids),
/// too short for the compiler's vector loop, and a byte at a time is what this replaces.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether any byte of `x` is below `n` (at most 0x80): its subtraction borrows into
    // the byte's high bit, which was clear.
    let any_below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH != 0;
    let hit = |x: u64| {
        any_below(x, 0x20)
            || any_below(x ^ (ONES * u64::from(b'"')), 1)
            || any_below(x ^ (ONES * u64::from(b'\\')), 1)
    };
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        if hit(u64::from_ne_bytes(word.try_into().expect("eight bytes"))) {
            return true;
        }
    }
    // The last few bytes, padded with spaces, which need no escaping.
    let mut last = [b' '; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    hit(u64::from_ne_bytes(last))
}

/// Writes `s` as a JSON string.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        serde(out, s);
        return;
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// Writes `s` as a JSON string, or `null`.
pub(crate) fn opt_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => string(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes `value`.
pub(crate) fn value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => serde(out, n),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self::value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, key);
                out.push(b':');
                self::value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// Writes `value` as serde_json does (for what has no faster path here).
pub(crate) fn serde(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Writing into a vector fails only for a value whose `Serialize` fails (a map with
    // keys that are not strings), which none of the engine's types is; serde_json leaves
    // the text it wrote so far, as `to_string` would have failed on it.
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        let mut out = Vec::new();
        value(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_character_serde_json_escapes_is_escaped_as_it_does() {
        for c in (0u32..0x80).chain([0x7f, 0xe9, 0x2028, 0x2029, 0xfeff, 0x1f600]) {
            let c = char::from_u32(c).unwrap();
            // At every place in a word and past it, so each byte goes through each path.
            let strings = (0..20).map(|at| format!("{}{c}{}", "a".repeat(at), "b".repeat(at % 9)));
            for s in strings.chain([c.to_string(), format!("{c}{c}x")]) {
                let v = Value::from(s);
                assert_eq!(text(&v), serde_json::to_string(&v).unwrap(), "{v:?}");
            }
        }
    }

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let values = [
            json!(null),
            json!([true, false, [], {}, [[]], {"": ""}]),
            json!([0, -0.0, 1.5, -1e300, 5e-324, 1e21, 0.1, u64::MAX, i64::MIN]),
            json!({"a\"b": {"c\\d": ["\n", "\u{1}", "é", "\u{7f}"]}, "z": 1, "a": 2}),
            json!("a long string with nothing to escape, longer than any vector register holds"),
            json!("a long string with one \" to escape, longer than any vector register holds"),
        ];
        for v in values {
            assert_eq!(text(&v), serde_json::to_string(&v).unwrap());
        }
    }

    #[test]
    fn an_optional_string_is_null_when_absent() {
        let mut out = Vec::new();
        opt_string(&mut out, None);
        opt_string(&mut out, Some("x\ty"));
        assert_eq!(out, b"null\"x\\ty\"");
    }
}
