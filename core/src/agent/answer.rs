//! What a model written in the app's language answered, read one way for every binding.
//!
//! A Python callable or a JavaScript function answers a request with a turn, a plain string
//! (a text answer), or a failure; scripts for tests list the same. The bindings hand those
//! values over as data and this module decides what they mean: the defaults of a turn, and
//! the kind of a failure that only carries an HTTP status.

use super::model::{ModelError, ModelErrorKind};
use super::scripted::Step;
use crate::import::kind;
use crate::providers::ModelTurn;
use serde_json::{Value, json};

/// A turn from a model's answer: a string is a text answer; an object is a turn whose
/// `tool_calls` default to none and whose `finish_reason` defaults to `tool_calls` when it
/// holds calls, else `stop`.
pub fn turn_from_value(value: Value) -> Result<ModelTurn, String> {
    let value = match value {
        Value::String(text) => json!({"content": text, "finish_reason": "stop"}),
        Value::Object(mut turn) => {
            if !turn.contains_key("finish_reason") {
                let calls = turn
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty());
                let reason = if calls { "tool_calls" } else { "stop" };
                turn.insert("finish_reason".into(), reason.into());
            }
            Value::Object(turn)
        }
        other => {
            return Err(format!(
                "a model must return a turn ({{content, tool_calls}}) or a string, got {}",
                kind(&other)
            ));
        }
    };
    serde_json::from_value(value).map_err(|e| format!("the model returned an invalid turn: {e}"))
}

/// A failure from its data: `{kind?, message, status?, retry_after_ms?}`. Without a kind,
/// the HTTP status decides it as the core's HTTP clients do, and `other` without either.
pub fn error_from_value(value: Value) -> ModelError {
    let Value::Object(mut e) = value else {
        return ModelError::new(
            ModelErrorKind::Other,
            format!("the model failed with {value}"),
        );
    };
    let status = e
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    if e.get("kind").is_none_or(Value::is_null) {
        let kind = status.map_or(ModelErrorKind::Other, ModelErrorKind::from_status);
        e.insert("kind".into(), json!(kind));
    }
    if e.get("message").is_none_or(Value::is_null) {
        e.insert("message".into(), "".into());
    }
    let raw = Value::Object(e);
    serde_json::from_value(raw.clone()).unwrap_or_else(|why| {
        ModelError::new(
            ModelErrorKind::Other,
            format!("the model failed with an unreadable error ({why}): {raw}"),
        )
    })
}

/// A model function's answer: `{"turn": turn}` or `{"error": failure}`. A turn that is not
/// one is the model's failure of kind `other`, naming what it returned.
pub fn answer_from_value(value: Value) -> Result<ModelTurn, ModelError> {
    match value {
        Value::Object(mut answer) if answer.len() == 1 && answer.contains_key("error") => {
            Err(error_from_value(answer.remove("error").unwrap_or_default()))
        }
        Value::Object(mut answer) if answer.len() == 1 && answer.contains_key("turn") => {
            turn_from_value(answer.remove("turn").unwrap_or_default())
                .map_err(|why| ModelError::new(ModelErrorKind::Other, why))
        }
        other => Err(ModelError::new(
            ModelErrorKind::BadResponse,
            format!("a model answer is {{turn}} or {{error}}, got {other}"),
        )),
    }
}

/// A step of a script: `{"error": failure}`, `{"turn": turn}`, or the turn itself (an object
/// or a string).
pub fn step_from_value(value: Value) -> Result<Step, String> {
    match value {
        Value::Object(mut step) if step.len() == 1 && step.contains_key("error") => Ok(Step::Fail(
            error_from_value(step.remove("error").unwrap_or_default()),
        )),
        Value::Object(mut step) if step.len() == 1 && step.contains_key("turn") => {
            turn_from_value(step.remove("turn").unwrap_or_default()).map(Step::Turn)
        }
        turn => turn_from_value(turn).map(Step::Turn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::FinishReason;

    #[test]
    fn a_turn_is_defaulted_the_same_way_from_every_shape() {
        let text = turn_from_value(json!("hello")).unwrap();
        assert_eq!(text.content, "hello");
        assert_eq!(text.finish_reason, FinishReason::Stop);
        let calls = turn_from_value(json!({"tool_calls": [{"id": "c1", "name": "t",
            "arguments": "{}"}]}))
        .unwrap();
        assert_eq!(calls.finish_reason, FinishReason::ToolCalls);
        let told = turn_from_value(json!({"content": "x", "finish_reason": "length"})).unwrap();
        assert_eq!(told.finish_reason, FinishReason::Length);
        let bad = turn_from_value(json!(42)).unwrap_err();
        assert!(
            bad.contains("must return a turn") && bad.contains("a number"),
            "{bad}"
        );
    }

    #[test]
    fn a_failure_without_a_kind_takes_it_from_its_status() {
        for (status, kind) in [
            (429, ModelErrorKind::RateLimited),
            (401, ModelErrorKind::Auth),
            (408, ModelErrorKind::Timeout),
            (503, ModelErrorKind::Server),
            (404, ModelErrorKind::InvalidRequest),
            // Not a server error: outside 500-599, whatever a client library reports.
            (600, ModelErrorKind::InvalidRequest),
        ] {
            let e = error_from_value(json!({"message": "m", "status": status}));
            assert_eq!((e.kind, e.status), (kind, Some(status)), "{status}");
        }
        let e = error_from_value(json!({"message": "boom"}));
        assert_eq!(e.kind, ModelErrorKind::Other);
        let e = error_from_value(json!({"kind": "timeout", "message": "t", "status": 503}));
        assert_eq!(e.kind, ModelErrorKind::Timeout);
    }

    #[test]
    fn answers_and_steps() {
        assert_eq!(
            answer_from_value(json!({"turn": "hi"})).unwrap().content,
            "hi"
        );
        let e = answer_from_value(json!({"turn": null})).unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::Other);
        assert!(e.message.contains("got null"), "{}", e.message);
        let e = answer_from_value(json!({"error": {"kind": "auth", "message": "no key"}}));
        assert_eq!(e.unwrap_err().kind, ModelErrorKind::Auth);
        assert!(matches!(step_from_value(json!("x")), Ok(Step::Turn(_))));
        assert!(matches!(
            step_from_value(json!({"error": {"kind": "server", "message": "m"}})),
            Ok(Step::Fail(_))
        ));
        assert!(matches!(
            step_from_value(json!({"turn": {"content": "x"}})),
            Ok(Step::Turn(_))
        ));
    }
}
