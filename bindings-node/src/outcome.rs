//! What a JavaScript handler settled with, as the JS layer reports it, turned into the core's
//! [`HandlerResult`].
//!
//! The JS layer settles calls in bulk with one JSON text, `[[token, kind, payload], ...]`:
//!
//! | kind | meaning | payload |
//! |---|---|---|
//! | 0 | returned data (`undefined` already mapped to `null`) | the value |
//! | 1 | threw a `ToolError` | `{code, message, retryable?, details?}` |
//! | 2 | returned or threw `needs(...)` | the field names |
//! | 3 | threw or rejected with anything else | the stack (or the value as text) |
//! | 4 | threw `InvalidArguments` | `[{path, message}, ...]` |
//! | 5 | returned or threw `accepted(job)` | the job's reference |
//!
//! One settlement the core cannot read (a lone surrogate, nesting past what `serde_json`
//! reads) ends its own call as `invalid_output`; its neighbours in the same text keep theirs.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::str::FromStr;
use tooljig::{ErrorCode, HandlerError, HandlerResult, ToolError, Violation};

/// Kind of a settlement: returned data.
pub const OK: u8 = 0;
/// Kind of a settlement: threw a `ToolError`.
pub const TOOL_ERROR: u8 = 1;
/// Kind of a settlement: returned or threw `needs(...)`.
pub const NEEDS: u8 = 2;
/// Kind of a settlement: failed unexpectedly (the payload is the detail).
pub const UNEXPECTED: u8 = 3;

/// Kind of a settlement: threw `InvalidArguments` (its own validation refused the arguments).
pub const INVALID_ARGUMENTS: u8 = 4;

/// Kind of a settlement: returned or threw `accepted(job)` (the work goes on as a job).
pub const ACCEPTED: u8 = 5;

/// Kind of a settlement this side could not read (never sent by the JS layer): the payload
/// is why.
const UNREADABLE: u8 = u8::MAX;

/// One settled call: its token and how it ended.
pub type Settlement = (u64, u8, Value);

/// Parses the JS layer's bulk settlement text. When the whole does not read, each
/// settlement is read on its own, and one that does not read settles its token as
/// unreadable: a hostile value fails its own call, never the group.
pub fn parse_settlements(text: &str) -> Result<Vec<Settlement>, serde_json::Error> {
    let whole = match serde_json::from_str(text) {
        Ok(all) => return Ok(all),
        Err(e) => e,
    };
    let Some(items) = crate::convert::items::split(text) else {
        return Err(whole);
    };
    Ok(items
        .into_iter()
        .filter_map(|item| match serde_json::from_str::<Settlement>(item) {
            Ok(s) => Some(s),
            Err(e) => leading_token(item).map(|t| (t, UNREADABLE, Value::String(e.to_string()))),
        })
        .collect())
}

/// The token an item `[token, kind, payload]` starts with.
fn leading_token(item: &str) -> Option<u64> {
    let rest = item.trim().strip_prefix('[')?.trim_start();
    let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

#[derive(Deserialize)]
struct ThrownToolError {
    code: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    retryable: Option<bool>,
    #[serde(default)]
    details: Option<Map<String, Value>>,
}

/// Turns one settlement's kind and payload into the handler's result.
pub fn to_handler_result(kind: u8, payload: Value) -> HandlerResult {
    match kind {
        OK => Ok(payload),
        TOOL_ERROR => Err(tool_error(payload)),
        NEEDS => match serde_json::from_value::<Vec<String>>(payload) {
            Ok(fields) => Err(HandlerError::Needs(fields)),
            Err(e) => Err(HandlerError::unexpected(format!(
                "needs(...) takes field names as strings: {e}"
            ))),
        },
        UNEXPECTED => Err(HandlerError::unexpected(match payload {
            Value::String(s) => s,
            other => other.to_string(),
        })),
        INVALID_ARGUMENTS => Err(invalid_arguments(payload)),
        ACCEPTED => match payload {
            Value::String(job) if !job.is_empty() => Err(HandlerError::Accepted { job }),
            other => Err(HandlerError::unexpected(format!(
                "accepted(...) takes the job's reference, a non-empty string, not {other}"
            ))),
        },
        UNREADABLE => Err(HandlerError::Tool(ToolError::new(
            ErrorCode::InvalidOutput,
            format!(
                "the tool returned a value tooljig cannot read (a lone surrogate in a string, or \
                 nesting too deep): {}",
                payload.as_str().unwrap_or_default()
            ),
        ))),
        other => Err(HandlerError::unexpected(format!(
            "the JavaScript layer settled a call with unknown kind {other}"
        ))),
    }
}

/// A failure of an app function other than a handler (policy hook, resolver), which can
/// only return data: a `ToolError` keeps its code, anything else is unexpected.
pub fn to_failure(kind: u8, payload: Value, what: &str) -> HandlerError {
    match to_handler_result(kind, payload) {
        Err(e @ (HandlerError::Tool(_) | HandlerError::Unexpected { .. })) => e,
        Err(HandlerError::Needs(_)) => HandlerError::unexpected(format!(
            "{what} returned needs(...), which only handlers may"
        )),
        Err(HandlerError::Accepted { .. }) => HandlerError::unexpected(format!(
            "{what} returned accepted(...), which only handlers may"
        )),
        Ok(v) => HandlerError::unexpected(format!("{what} returned {v}")),
    }
}

/// The violations of an `InvalidArguments`, worded by the core.
fn invalid_arguments(payload: Value) -> HandlerError {
    #[derive(Deserialize)]
    struct Thrown {
        #[serde(default)]
        path: Vec<Value>,
        message: String,
    }
    match serde_json::from_value::<Vec<Thrown>>(payload) {
        Ok(thrown) => HandlerError::invalid_arguments(
            &thrown
                .iter()
                .map(|t| Violation::at_path(&t.path, t.message.clone()))
                .collect::<Vec<_>>(),
        ),
        Err(e) => HandlerError::unexpected(format!("a malformed InvalidArguments was thrown: {e}")),
    }
}

fn tool_error(payload: Value) -> HandlerError {
    let thrown: ThrownToolError = match serde_json::from_value(payload) {
        Ok(t) => t,
        Err(e) => {
            return HandlerError::unexpected(format!("a malformed ToolError was thrown: {e}"));
        }
    };
    let code = match ErrorCode::from_str(&thrown.code) {
        Ok(code) => code,
        Err(e) => {
            return HandlerError::unexpected(format!(
                "a ToolError was thrown with {e} (message: {:?})",
                thrown.message
            ));
        }
    };
    let mut err = ToolError::new(code, thrown.message);
    if let Some(retryable) = thrown.retryable {
        err = err.retryable(retryable);
    }
    if let Some(details) = thrown.details {
        err.details = details;
    }
    HandlerError::Tool(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_unreadable_settlement_fails_alone() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let text = format!(r#"[[1,0,{{"a":"x,]\"["}}],[2,0,"\ud800"],[3,0,{deep}],[4,3,"boom"]]"#);
        let got = parse_settlements(&text).unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (1, OK, json!({"a": "x,]\"["})));
        assert_eq!((got[1].0, got[1].1), (2, UNREADABLE));
        assert_eq!((got[2].0, got[2].1), (3, UNREADABLE));
        assert_eq!(got[3], (4, UNEXPECTED, json!("boom")));
        let Err(HandlerError::Tool(e)) = to_handler_result(UNREADABLE, got[1].2.clone()) else {
            panic!("unreadable is a tool error")
        };
        assert_eq!(e.code, ErrorCode::InvalidOutput);
        assert!(parse_settlements("not json").is_err());
    }

    #[test]
    fn every_kind_maps() {
        assert_eq!(to_handler_result(0, json!({"a": 1})), Ok(json!({"a": 1})));
        let Err(HandlerError::Tool(e)) = to_handler_result(
            1,
            json!({"code": "not_found", "message": "no such lead", "details": {"id": 3}}),
        ) else {
            panic!("a tool error")
        };
        assert_eq!(e.code, ErrorCode::NotFound);
        assert!(!e.retryable);
        assert_eq!(e.details["id"], 3);
        assert_eq!(
            to_handler_result(2, json!(["when"])),
            Err(HandlerError::Needs(vec!["when".into()]))
        );
        assert!(matches!(
            to_handler_result(3, json!("Error: x\n    at y")),
            Err(HandlerError::Unexpected { detail }) if detail.contains("at y")
        ));
    }

    #[test]
    fn an_unknown_code_is_an_unexpected_failure() {
        assert!(matches!(
            to_handler_result(1, json!({"code": "nope", "message": "m"})),
            Err(HandlerError::Unexpected { detail }) if detail.contains("nope")
        ));
    }

    #[test]
    fn bulk_text_parses() {
        let s = parse_settlements(r#"[[1,0,null],[2,2,["a"]]]"#).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].0, 2);
    }
}
