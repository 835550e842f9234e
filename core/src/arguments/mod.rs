//! Turning what a model sent into an arguments value: parse, repair, refuse.
//!
//! Models send arguments as a JSON string (OpenAI) or an object (Anthropic). A string is
//! parsed strictly first; when that fails it is repaired the way models break JSON (code
//! fences, trailing commas, single quotes, Python literals, comments, missing closing
//! brackets at the very end) and the result records that it was repaired. A string cut off
//! inside a value (a truncated stream) is refused as `incomplete_arguments` and never runs.

mod repair;

use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Size and nesting limits on arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest argument text or value accepted, in bytes.
    pub max_argument_bytes: usize,
    /// Deepest nesting of arrays and objects accepted.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_argument_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// Arguments ready for the rest of the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArguments {
    /// The arguments as a JSON value.
    pub value: Value,
    /// Whether the text had to be repaired to parse.
    pub repaired: bool,
}

/// Parses a call's arguments: a JSON string is parsed (and repaired if need be); any other
/// value is taken as is, after the limits are checked.
pub fn parse_arguments(raw: &Value, limits: &Limits) -> Result<ParsedArguments, ToolError> {
    match raw {
        Value::String(text) => parse_text(text, limits),
        Value::Null => Ok(ParsedArguments {
            value: Value::Object(Default::default()),
            repaired: false,
        }),
        other => {
            check_value_depth(other, limits)?;
            Ok(ParsedArguments {
                value: other.clone(),
                repaired: false,
            })
        }
    }
}

/// Parses argument text, repairing it when strict parsing fails.
pub fn parse_text(text: &str, limits: &Limits) -> Result<ParsedArguments, ToolError> {
    if text.len() > limits.max_argument_bytes {
        return Err(too_large(format!(
            "arguments are {} bytes; the limit is {} bytes",
            text.len(),
            limits.max_argument_bytes
        )));
    }
    let depth = text_depth(text);
    if depth > limits.max_depth {
        return Err(too_large(format!(
            "arguments nest {depth} levels deep; the limit is {}",
            limits.max_depth
        )));
    }
    if text.trim().is_empty() {
        return Ok(ParsedArguments {
            value: Value::Object(Default::default()),
            repaired: false,
        });
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok(ParsedArguments {
            value,
            repaired: false,
        });
    }
    if let Some(reason) = truncation(text) {
        return Err(ToolError::new(
            ErrorCode::IncompleteArguments,
            format!(
                "arguments were cut off ({reason}); the call was not executed, send the complete arguments"
            ),
        ));
    }
    match repair_json(text) {
        Ok(value) => Ok(ParsedArguments {
            value,
            repaired: true,
        }),
        Err(why) => Err(ToolError::new(
            ErrorCode::MalformedArguments,
            format!("arguments are not valid JSON and could not be repaired: {why}"),
        )),
    }
}

/// Repairs JSON the way language models break it and parses the result.
///
/// Built on `jsonrepair-rs` (a port of the JS `jsonrepair`) with its gaps closed (see
/// `repair.rs`); `docs/arguments.md` reports the agreement measured on the jsonrepair corpus.
pub fn repair_json(text: &str) -> Result<Value, String> {
    if text_depth(text) > 512 {
        return Err("nesting is too deep to repair".into());
    }
    repair::repair(text)
}

fn too_large(message: String) -> ToolError {
    ToolError::new(ErrorCode::ArgumentsTooLarge, message)
}

fn check_value_depth(value: &Value, limits: &Limits) -> Result<(), ToolError> {
    // Iterative, so a hostile value cannot overflow the stack here.
    let mut stack = vec![(value, 1usize)];
    let mut bytes = 0usize;
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::Array(items) => {
                if depth > limits.max_depth {
                    return Err(too_large(format!(
                        "arguments nest deeper than {} levels",
                        limits.max_depth
                    )));
                }
                bytes += 2 + items.len();
                stack.extend(items.iter().map(|i| (i, depth + 1)));
            }
            Value::Object(map) => {
                if depth > limits.max_depth {
                    return Err(too_large(format!(
                        "arguments nest deeper than {} levels",
                        limits.max_depth
                    )));
                }
                bytes += 2;
                for (k, item) in map {
                    bytes += k.len() + 4;
                    stack.push((item, depth + 1));
                }
            }
            Value::String(s) => bytes += s.len() + 2,
            _ => bytes += 8,
        }
        if bytes > limits.max_argument_bytes {
            return Err(too_large(format!(
                "arguments exceed {} bytes",
                limits.max_argument_bytes
            )));
        }
    }
    Ok(())
}

/// The deepest bracket nesting in JSON-like text, ignoring brackets inside strings.
fn text_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for &b in text.as_bytes() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                quote = None;
            }
            continue;
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether a quote followed by `rest` ends its string: what comes next (after blanks) is the
/// end of the text or something that may follow a string in JSON (a separator, a closing
/// bracket, another string after a missing comma, a comment).
fn closes_string(rest: &[u8]) -> bool {
    match rest.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(next) => matches!(next, b',' | b'}' | b']' | b':' | b'"' | b'\'' | b'/' | b'#'),
    }
}

/// Why the text looks cut off inside a value, if it does.
///
/// Missing closing brackets are repairable only when the last thing written is a complete
/// value: a closed string, a closed bracket, or a whole literal. A text ending inside a
/// string, after a key, a colon or a comma, or on a number or a partial word is cut off: a
/// number may have had more digits, a word more letters.
pub fn truncation(text: &str) -> Option<&'static str> {
    let body = strip_fences(text);
    #[derive(Clone, Copy, PartialEq)]
    enum Last {
        Nothing,
        Open,
        Colon,
        Comma,
        KeyString,
        ValueString,
        Close,
        Word,
    }
    let bytes = body.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let mut last = Last::Nothing;
    let mut word = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' | b'`' => {
                let expecting_key =
                    matches!(last, Last::Open | Last::Comma) && stack.last() == Some(&b'{');
                let mut j = i + 1;
                let mut closed = false;
                while j < bytes.len() {
                    if bytes[j] == b'\\' {
                        j += 2;
                        continue;
                    }
                    // In a value, a quote followed by what cannot follow a string
                    // (`(72") tall"`) is one the model forgot to escape: the string goes on,
                    // as repair reads it. A key ends at its first quote.
                    if bytes[j] == b && (expecting_key || closes_string(&bytes[j + 1..])) {
                        closed = true;
                        break;
                    }
                    j += 1;
                }
                if !closed {
                    return Some("the text ends inside a string");
                }
                last = if expecting_key {
                    Last::KeyString
                } else {
                    Last::ValueString
                };
                i = j + 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                match body[i + 2..].find("*/") {
                    Some(end) => i += end + 4,
                    None => return Some("the text ends inside a comment"),
                }
                continue;
            }
            b'{' | b'[' => {
                stack.push(b);
                last = Last::Open;
            }
            b'}' | b']' => {
                stack.pop();
                last = Last::Close;
            }
            b':' => last = Last::Colon,
            b',' => last = Last::Comma,
            c if c.is_ascii_whitespace() => {}
            _ => {
                let start = i;
                while i < bytes.len() && !b"{}[]:,\"' \t\r\n".contains(&bytes[i]) {
                    i += 1;
                }
                word = body[start..i].to_string();
                last = Last::Word;
                continue;
            }
        }
        i += 1;
    }
    if stack.is_empty() {
        return None;
    }
    match last {
        Last::ValueString | Last::Close => None,
        Last::Word
            if matches!(
                word.as_str(),
                "true" | "false" | "null" | "True" | "False" | "None"
            ) =>
        {
            None
        }
        Last::Word if word.parse::<f64>().is_ok() => {
            Some("the text ends on a number that may have had more digits")
        }
        Last::Word => Some("the text ends inside a word"),
        Last::KeyString => Some("the text ends after a key, before its value"),
        Last::Colon => Some("the text ends after a colon, before the value"),
        Last::Comma => Some("the text ends after a comma, before the next item"),
        Last::Open | Last::Nothing => Some("the text ends right after an opening bracket"),
    }
}

fn strip_fences(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.find('\n').map_or("", |nl| &rest[nl + 1..]);
    rest.trim_end().strip_suffix("```").unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(t: &str) -> Result<ParsedArguments, ToolError> {
        parse_text(t, &Limits::default())
    }

    #[test]
    fn strict_json_is_not_repaired() {
        let p = parse(r#"{"a": 1}"#).unwrap();
        assert_eq!(p.value, json!({"a": 1}));
        assert!(!p.repaired);
    }

    #[test]
    fn model_breakage_is_repaired() {
        for (text, want) in [
            ("```json\n{\"a\": 1}\n```", json!({"a": 1})),
            ("{\"a\": 1,}", json!({"a": 1})),
            ("{'a': 'b'}", json!({"a": "b"})),
            ("{a: 1}", json!({"a": 1})),
            ("{\"a\": True, \"b\": None}", json!({"a": true, "b": null})),
            ("{\"a\": 1 /* c */}", json!({"a": 1})),
            ("{\"a\": [1, \"x\"]", json!({"a": [1, "x"]})),
            ("{\"a\": {\"b\": true", json!({"a": {"b": true}})),
            // A quote the model forgot to escape is not a cut-off string.
            (
                "{\"text\": \"He is 6 feet (72\") tall\"}",
                json!({"text": "He is 6 feet (72\") tall"}),
            ),
        ] {
            let p = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(p.value, want, "{text}");
            assert!(p.repaired, "{text}");
        }
    }

    #[test]
    fn cut_off_arguments_are_refused() {
        for text in [
            "{\"a\": \"He said \"hi",
            "{\"a\": \"x\") y",
            "{\"a\": \"hel",
            "{\"a\": 12",
            "{\"a\": tr",
            "{\"a\":",
            "{\"a\"",
            "{\"a\": 1,",
            "{",
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.code, ErrorCode::IncompleteArguments, "{text}");
        }
    }

    #[test]
    fn limits_hold_without_overflow() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(parse(&deep).unwrap_err().code, ErrorCode::ArgumentsTooLarge);
        let big = format!("{{\"a\": \"{}\"}}", "x".repeat(10 << 20));
        assert_eq!(parse(&big).unwrap_err().code, ErrorCode::ArgumentsTooLarge);
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!([v]);
        }
        assert_eq!(
            parse_arguments(&v, &Limits::default()).unwrap_err().code,
            ErrorCode::ArgumentsTooLarge
        );
    }

    #[test]
    fn garbage_is_malformed() {
        assert_eq!(
            parse("{\"a\" 1 2 3}").unwrap_err().code,
            ErrorCode::MalformedArguments
        );
    }
}
