//! Turning what a model sent into an arguments value: parse, repair, refuse.
//!
//! Models send arguments as a JSON string (OpenAI) or an object (Anthropic). A string is
//! parsed strictly first; when that fails it is repaired the way models break JSON (code
//! fences and sentences around the value, trailing commas, single quotes, unescaped quotes,
//! Python literals, tuples and sets, comments, missing closing brackets at the very end) and
//! the result records that it was repaired. A string cut off
//! inside a value (a truncated stream) is refused as `incomplete_arguments` and never runs.

mod defaults;
mod extract;
mod lossless;
mod repair;
mod scan;
mod truncation;

pub use defaults::Defaults;
pub use truncation::truncation;

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
    // Fences and sentences around the value are not arguments; cut them before judging.
    let body = extract::isolate(text);
    if let Ok(value) = serde_json::from_str::<Value>(&body) {
        return Ok(ParsedArguments {
            value,
            repaired: true,
        });
    }
    if let Some(reason) = truncation(&body) {
        return Err(ToolError::new(
            ErrorCode::IncompleteArguments,
            format!(
                "arguments were cut off ({reason}); the call was not executed, send the complete arguments"
            ),
        ));
    }
    // A set standing alone is read as a list before the check that a list of fragments is
    // no repair of an object (`lossless::conserved`).
    let body = repair::python_collections(&body);
    let body = lossless::prepare(&body).map_err(|why| {
        ToolError::new(
            ErrorCode::MalformedArguments,
            format!("arguments are not valid JSON and could not be repaired: {why}"),
        )
    })?;
    match repair_json(&body).and_then(|value| lossless::conserved(&body, &value).map(|()| value)) {
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
