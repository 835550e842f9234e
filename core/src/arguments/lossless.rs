//! What the engine adds to repair so that no value changes without a word.
//!
//! `repair_json` follows the JS `jsonrepair`, which favours getting *some* JSON: it drops the
//! backslash of an invalid escape (`"C:\Users"` becomes `"C:Users"`), fills a key written
//! without a value with `null`, and lets a `#` note on one line swallow the keys after it.
//! Before the engine repairs arguments, these rewrites keep what the model wrote, and a key
//! with no value is refused: inventing a value would run the tool with data nobody sent.

use super::scan::{Edit, apply, comment_end, quoted};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// `text` ready for repair without silent loss, or why it cannot be repaired without one.
pub(super) fn prepare(text: &str) -> Result<Cow<'_, str>, String> {
    let text = strip_line_comments(text);
    refuse_missing_values(&text)?;
    Ok(Cow::Owned(keep_invalid_escapes(&text).into_owned()))
}

/// Line comments (`// ...`, `# ...`) removed, each up to its line break or to the first
/// closing bracket it did not open (see [`comment_end`]). A `#` or `//` inside a word or a
/// URL is not a comment.
fn strip_line_comments(text: &str) -> Cow<'_, str> {
    if !text.contains('#') && !text.contains("//") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mask = quoted(text);
    let mut edits = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = !mask[i]
            && (bytes[i] == b'#' || bytes[i..].starts_with(b"//"))
            && (i == 0 || !mask[i - 1])
            && (i == 0 || starts_token_after(bytes[i - 1]));
        if starts {
            let end = comment_end(bytes, i);
            edits.push(Edit::new(i, end, ""));
            i = end;
        } else {
            i += 1;
        }
    }
    apply(text, edits)
}

/// Whether a comment may start right after `byte`: a blank, a bracket, a separator or a
/// closing quote; not a letter (`C#`, `https://`) or a digit.
fn starts_token_after(byte: u8) -> bool {
    byte.is_ascii_whitespace() || matches!(byte, b'{' | b'[' | b'}' | b']' | b',' | b'"' | b'\'')
}

/// An error naming the first key written with no value (`"key": ,` or `"key": }`).
fn refuse_missing_values(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mask = quoted(text);
    for (i, &b) in bytes.iter().enumerate() {
        if b != b':' || mask[i] {
            continue;
        }
        let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
        if matches!(next, Some(b',' | b'}')) {
            let key_start = text[..i].rfind(['{', ',']).map_or(0, |k| k + 1);
            return Err(format!(
                "the key {} has no value; send a value for it (a repair will not invent one)",
                text[key_start..i].trim()
            ));
        }
    }
    Ok(())
}

/// Inside strings, a backslash before a character JSON does not escape (`\U`, `\d`, `\.`)
/// kept as a backslash, where repair would drop it. `\'` stays the apostrophe it means.
fn keep_invalid_escapes(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mask = quoted(text);
    let mut edits = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if mask[i] && bytes[i] == b'\\' {
            let next = bytes[i + 1];
            if !matches!(
                next,
                b'"' | b'\\'
                    | b'/'
                    | b'b'
                    | b'f'
                    | b'n'
                    | b'r'
                    | b't'
                    | b'u'
                    | b'\''
                    | b'\n'
                    | b'\r'
            ) {
                edits.push(Edit::new(i, i + 1, "\\\\"));
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    apply(text, edits)
}

/// An error when the repaired `value` does not hold the letters of `text` (the prepared
/// text repair read), each as often: a repair that guessed wrong drops a word or a whole
/// member, or makes one up. Letters are compared, not digits, so numbers may be written
/// anew (`.5` as `0.5`) and strings joined (`"a" + "b"`); literals (`True`, `None`), wrapper
/// names (`ObjectId(`, `callback(`), fence languages and exponents may go. Values merged into a top-level array must each be an object or an array: a lone
/// key or colon among them is a repair that lost the structure.
pub(super) fn conserved(text: &str, value: &Value) -> Result<(), String> {
    if let Value::Array(items) = value {
        let merged = text.trim_start().starts_with('{');
        if merged && items.iter().any(|v| !v.is_object() && !v.is_array()) {
            return Err(
                "the text holds no single value (a closing bracket may not match its opening one)"
                    .into(),
            );
        }
    }
    let written = written_words(text);
    let (required, optional) = (&written.required, &written.optional);
    let mut found: HashMap<char, usize> = HashMap::new();
    let (mut colons, mut members) = (0, 0);
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                count_words(s.chars(), &mut found);
                colons += separating_colons(s);
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                members += map.len();
                for (k, v) in map {
                    count_words(k.chars(), &mut found);
                    colons += separating_colons(k);
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    // Each member of an object spends a colon written outside strings; the others may have
    // been text (`She said: no way`, unquoted).
    let spare = written.colons_outside.saturating_sub(members);
    if colons > written.colons_inside + spare {
        return Err(
            "a repair would read a key's colon as text (quotes are doubled or misplaced)".into(),
        );
    }
    for (letter, &n) in required {
        if found.get(letter).copied().unwrap_or(0) < n {
            return Err(format!(
                "a repair would drop text (a {letter:?} written is missing from the repaired value)"
            ));
        }
    }
    for (letter, &n) in &found {
        let allowed =
            required.get(letter).copied().unwrap_or(0) + optional.get(letter).copied().unwrap_or(0);
        if n > allowed {
            return Err(format!(
                "a repair would add text (a {letter:?} nobody wrote)"
            ));
        }
    }
    Ok(())
}

/// Colons in `text` that look like the one between a key and its value (followed by a blank,
/// a bracket, a quote or nothing), not like those of a URL or a time (`https://`, `18:35`).
fn separating_colons(text: &str) -> usize {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&i| {
            bytes[i] == b':'
                && matches!(
                    bytes.get(i + 1),
                    None | Some(b' ' | b'[' | b'{' | b'"' | b'\'')
                )
        })
        .count()
}

/// The letters in `chars`, counted into `into`.
fn count_words(chars: impl Iterator<Item = char>, into: &mut HashMap<char, usize>) {
    for c in chars.filter(|c| c.is_alphabetic()) {
        *into.entry(c).or_default() += 1;
    }
}

/// What a text holds that its repaired value must account for.
struct Written {
    /// Letters the value must keep.
    required: HashMap<char, usize>,
    /// Letters it may drop: literals, names of wrappers, fence languages, exponents,
    /// comments.
    optional: HashMap<char, usize>,
    /// Key-like colons written inside strings.
    colons_inside: usize,
    /// Colons written outside strings.
    colons_outside: usize,
}

/// The letters and colons of `text`. Escapes in strings are read as what they stand for;
/// numbers hold no letters.
fn written_words(text: &str) -> Written {
    let (mut required, mut optional) = (HashMap::new(), HashMap::new());
    let mut colons_outside = 0;
    let mask = quoted(text);
    let bytes = text.as_bytes();
    let mut in_string = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if mask[i] {
            let start = i;
            while i < bytes.len() && mask[i] {
                i += 1;
            }
            let piece = unescape(&text[start..i]);
            // What looks like a comment inside a string may be one the repair removes.
            let mut rest = piece.as_str();
            while let Some(open) = rest.find("/*") {
                in_string.push_str(&rest[..open]);
                let end = rest[open..].find("*/").map_or(rest.len(), |e| open + e + 2);
                count_words(rest[open..end].chars(), &mut optional);
                rest = &rest[end..];
            }
            in_string.push_str(rest);
            in_string.push(' ');
            continue;
        }
        let b = bytes[i];
        if b == b':' {
            colons_outside += 1;
        }
        if text[i..].starts_with("/*") {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            count_words(text[i..end].chars(), &mut optional);
            i = end;
        } else if b.is_ascii_digit()
            || (matches!(b, b'-' | b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < bytes.len()
                && (matches!(bytes[i], b'0'..=b'9' | b'.' | b'_')
                    || (matches!(bytes[i], b'e' | b'E')
                        && bytes.get(i + 1).is_none_or(|n| {
                            n.is_ascii_digit()
                                || matches!(n, b'+' | b'-' | b',' | b']' | b'}')
                                || n.is_ascii_whitespace()
                        })))
            {
                if matches!(bytes[i], b'e' | b'E') {
                    // Kept when the number is kept as written text (`"2e3.4"`).
                    count_words(std::iter::once(bytes[i] as char), &mut optional);
                }
                i += 1;
            }
        } else if text[i..].starts_with("```") {
            // A fence and the language named after it.
            let after = text[i..].trim_start_matches('`');
            let end = after
                .find(|c: char| !c.is_alphanumeric())
                .unwrap_or(after.len());
            count_words(after[..end].chars(), &mut optional);
            i = text.len() - after.len() + end;
        } else if text[i..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            let end = text[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .map_or(bytes.len(), |e| i + e);
            let name = &text[i..end];
            let wrapper = text[end..].trim_start().starts_with('(');
            let literal = matches!(
                name,
                "true"
                    | "false"
                    | "null"
                    | "True"
                    | "False"
                    | "None"
                    | "TRUE"
                    | "FALSE"
                    | "NULL"
                    | "Null"
                    | "undefined"
                    | "NaN"
                    | "Infinity"
            );
            let into = if wrapper || literal {
                &mut optional
            } else {
                &mut required
            };
            count_words(name.chars(), into);
            i = end;
        } else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    count_words(in_string.chars(), &mut required);
    Written {
        required,
        optional,
        colons_inside: separating_colons(&in_string),
        colons_outside,
    }
}

/// The characters a string's body stands for: `\uXXXX` decoded, other escapes dropped to
/// what they escape when that is not a letter (`\n` is a line break, not an `n`).
fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) if hex.len() == 4 => {
                        out.push(decoded);
                        chars.nth(3);
                    }
                    _ => out.push(' '),
                }
            }
            Some('b' | 'f' | 'n' | 'r' | 't') => out.push(' '),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_end_where_their_note_ends() {
        assert_eq!(
            strip_line_comments("{ \"a\": { \"b\": 1 # note }, \"c\": 2 }"),
            "{ \"a\": { \"b\": 1 }, \"c\": 2 }"
        );
        assert_eq!(
            strip_line_comments("{\"a\": 1, // see {x}\n\"b\": 2}"),
            "{\"a\": 1, \n\"b\": 2}"
        );
        for kept in [
            "{\"lang\": C#}",
            "{\"u\": https://x.org/a}",
            "{\"t\": \"# not\"}",
        ] {
            assert_eq!(strip_line_comments(kept), kept);
        }
    }

    #[test]
    fn keys_without_values_are_refused() {
        let e = prepare("{\"key\": , \"key2\": \"v\"}").unwrap_err();
        assert!(e.contains("\"key\""), "{e}");
        assert!(prepare("{\"a\": 1, \"b\": }").is_err());
        assert!(prepare("{\"a\": # gone\n}").is_err());
        assert!(prepare("{\"t\": \"a: , b\"}").is_ok());
    }

    #[test]
    fn repairs_that_lose_or_invent_text_are_caught() {
        let check = |text: &str, value: Value| conserved(text, &value);
        assert!(check("{a: 'b'}", serde_json::json!({"a": "b"})).is_ok());
        assert!(
            check(
                "{\"a\": True, \"b\": ObjectId(\"x\")}",
                serde_json::json!({"a": true, "b": "x"})
            )
            .is_ok()
        );
        assert!(check("\"a\" + \"b\"", serde_json::json!("ab")).is_ok());
        assert!(
            check(
                "{u: https://x.org}",
                serde_json::json!({"u": "https://x.org"})
            )
            .is_ok()
        );
        assert!(
            check(
                "[{\"a\": 1}, \"\"\"\" \"b\": 2]",
                serde_json::json!([{"a": 1}])
            )
            .is_err()
        );
        assert!(check("{\"a\": \"x\"}", serde_json::json!({"a": "xy"})).is_err());
        assert!(
            check(
                "{\"a\": [1}, \"b\": 2}",
                serde_json::json!([{"a": [1]}, "b", ":", 2])
            )
            .is_err()
        );
        assert!(
            check(
                "{\"\"a\"\":[{\"\"b\"\":1}]}",
                serde_json::json!({"\"a": ":[{", "b": ":"})
            )
            .is_err()
        );
    }

    #[test]
    fn invalid_escapes_keep_their_backslash() {
        assert_eq!(
            keep_invalid_escapes(r#"{"p": "C:\Users\d\n", 'q': 'it\'s'}"#),
            r#"{"p": "C:\\Users\\d\n", 'q': 'it\'s'}"#
        );
    }
}
