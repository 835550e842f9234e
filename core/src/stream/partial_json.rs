//! The value of a JSON text that is still arriving: what has been received so far, closed.
//!
//! `{"city": "Par` reads as `{"city": "Par"}`, `{"a": [1, 2` as `{"a": [1, 2]}`. A key whose
//! value has not started is left out (`{"a": 1, "b` reads as `{"a": 1}`), a half-written
//! literal is completed (`tr` → `true`) and a number is taken as far as it is a number. This
//! is for showing arguments as they stream; a call never runs on a partial value.

use serde_json::Value;

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    /// In an object, expecting a key (or the end).
    Key,
    /// In an object, after a key, before or at its value.
    Value,
    /// In an array.
    Array,
}

/// Parses the longest meaningful prefix of `text`, closing what is open. `None` when
/// nothing of value has arrived yet (or the text is not JSON at all).
pub fn parse_partial(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    // Everything before `safe` plus the closers of `safe_stack` is valid JSON.
    let mut safe = 0usize;
    let mut safe_stack: Vec<Frame> = Vec::new();
    let mut i = 0usize;
    // The unfinished tail, when the text ends inside a scalar value.
    let mut tail: Option<(usize, String)> = None;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => i += 1,
            b',' => {
                if let Some(top) = stack.last_mut()
                    && *top == Frame::Value
                {
                    *top = Frame::Key;
                }
                i += 1;
            }
            b'{' | b'[' => {
                stack.push(if c == b'{' { Frame::Key } else { Frame::Array });
                i += 1;
                safe = i;
                safe_stack = stack.clone();
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
                value_done(&mut stack);
                safe = i;
                safe_stack = stack.clone();
            }
            b'"' => {
                let start = i;
                i += 1;
                let mut closed = false;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                let is_key = stack.last() == Some(&Frame::Key);
                if !closed {
                    if !is_key {
                        tail = Some((start, close_string(&text[start..])));
                    }
                    break;
                }
                if is_key {
                    if let Some(top) = stack.last_mut() {
                        *top = Frame::Value;
                    }
                } else {
                    value_done(&mut stack);
                    safe = i;
                    safe_stack = stack.clone();
                }
            }
            _ => {
                let start = i;
                while i < bytes.len() && !b",}] \t\n\r".contains(&bytes[i]) {
                    i += 1;
                }
                let token = &text[start..i];
                if i == bytes.len() {
                    tail = complete_scalar(token).map(|t| (start, t));
                    break;
                }
                if serde_json::from_str::<Value>(token).is_err() {
                    return None;
                }
                value_done(&mut stack);
                safe = i;
                safe_stack = stack.clone();
            }
        }
    }
    if let Some((start, t)) = tail {
        let mut with_tail = stack.clone();
        value_done(&mut with_tail);
        let candidate = close(format!("{}{t}", &text[..start]), &with_tail);
        if let Some(v) = candidate {
            return Some(v);
        }
    }
    close(text[..safe].to_string(), &safe_stack)
}

/// Appends the closers of `stack` to `prefix` and parses the result.
fn close(mut out: String, stack: &[Frame]) -> Option<Value> {
    if out.trim().is_empty() {
        return None;
    }
    // A comma just before the cut would leave `[1,]`.
    let trimmed = out.trim_end().trim_end_matches(',').len();
    out.truncate(trimmed);
    for frame in stack.iter().rev() {
        out.push(if *frame == Frame::Array { ']' } else { '}' });
    }
    serde_json::from_str(&out).ok()
}

/// After a value inside an object, the next thing is a key.
fn value_done(stack: &mut [Frame]) {
    if let Some(top) = stack.last_mut()
        && *top == Frame::Value
    {
        *top = Frame::Key;
    }
}

/// Closes an unterminated string, dropping a half-written escape.
fn close_string(raw: &str) -> String {
    let mut s = raw.to_string();
    // A trailing backslash, or `\u` with fewer than four hex digits, cannot be kept.
    if let Some(pos) = s.rfind('\\') {
        let after = &s[pos + 1..];
        let backslashes = s[..=pos].chars().rev().take_while(|&c| c == '\\').count();
        let dangling = backslashes % 2 == 1
            && (after.is_empty() || (after.starts_with('u') && after.len() < 5));
        if dangling {
            s.truncate(pos);
        }
    }
    s.push('"');
    s
}

/// Completes a literal or trims a number cut off at the end.
fn complete_scalar(token: &str) -> Option<String> {
    for lit in ["true", "false", "null"] {
        if !token.is_empty() && lit.starts_with(token) {
            return Some(lit.to_string());
        }
    }
    let mut t = token;
    while !t.is_empty() && serde_json::from_str::<Value>(t).is_err() {
        // One character off the end: a token may hold any text, not only ASCII.
        let last = t.char_indices().next_back().map_or(0, |(i, _)| i);
        t = &t[..last];
    }
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_of_any_text_is_trimmed_by_characters() {
        assert_eq!(parse_partial("{\"a\": 1é"), Some(json!({"a": 1})));
        assert_eq!(parse_partial("[tré"), Some(json!([])));
    }

    #[test]
    fn closes_what_is_open() {
        let cases = [
            ("{\"city\": \"Par", json!({"city": "Par"})),
            ("{\"a\": [1, 2", json!({"a": [1, 2]})),
            ("{\"a\": 1, \"b", json!({"a": 1})),
            ("{\"a\": 1, \"b\":", json!({"a": 1})),
            ("{\"a\": tr", json!({"a": true})),
            ("{\"a\": -1.", json!({"a": -1})),
            (
                "{\"a\": {\"b\": [\"x\", {\"c\": nu",
                json!({"a": {"b": ["x", {"c": null}]}}),
            ),
            ("{\"a\": \"x\\", json!({"a": "x"})),
            ("{\"a\": \"x\\u00", json!({"a": "x"})),
            ("{\"a\": [1,", json!({"a": [1]})),
            ("{", json!({})),
            ("{\"a\": \"b\"}", json!({"a": "b"})),
        ];
        for (text, want) in cases {
            assert_eq!(parse_partial(text), Some(want), "{text}");
        }
        assert_eq!(parse_partial(""), None);
    }

    #[test]
    fn every_prefix_of_a_document_parses_to_something_consistent() {
        let doc = r##"{"filename": "taxes.txt", "lines": ["# GUIDE", "", "a \"q\" b"], "n": 12.5, "ok": false}"##;
        for end in 1..=doc.len() {
            let v = parse_partial(&doc[..end]);
            if let Some(v) = v {
                assert!(v.is_object(), "{}", &doc[..end]);
            }
        }
        assert_eq!(
            parse_partial(doc).unwrap(),
            serde_json::from_str::<Value>(doc).unwrap()
        );
    }
}
