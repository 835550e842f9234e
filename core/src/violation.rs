//! Schema violations of a call's arguments, and the one `invalid_arguments` error that
//! reports them, whether the JSON Schema found them or a binding's own validator (pydantic,
//! zod) did after it.

use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use serde_json::{Value, json};

/// One schema violation, phrased for a model.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    /// JSON pointer of the offending value in the arguments (`""` for the whole).
    pub pointer: String,
    /// What is wrong, in words a model can act on.
    pub message: String,
}

impl Violation {
    /// A violation at a path of keys and indexes (`["items", 0, "qty"]`), escaped into a
    /// JSON pointer as RFC 6901 says (`~` → `~0`, `/` → `~1`).
    pub fn at_path<'a>(
        path: impl IntoIterator<Item = &'a Value>,
        message: impl Into<String>,
    ) -> Self {
        let pointer = path
            .into_iter()
            .map(|segment| {
                let text = match segment {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("/{}", text.replace('~', "~0").replace('/', "~1"))
            })
            .collect();
        Violation {
            pointer,
            message: message.into(),
        }
    }
}

/// The `invalid_arguments` error for these violations: a summary a model can act on, and
/// each violation under `details.errors`.
pub fn invalid_arguments(violations: &[Violation]) -> ToolError {
    let summary = violations
        .iter()
        .map(|v| {
            if v.pointer.is_empty() {
                v.message.clone()
            } else {
                format!("at {}: {}", v.pointer, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let errors: Vec<Value> = violations
        .iter()
        .map(|v| json!({"pointer": v.pointer, "message": v.message}))
        .collect();
    ToolError::new(
        ErrorCode::InvalidArguments,
        format!("arguments do not match the tool's schema: {summary}"),
    )
    .with("errors", errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_escaped_into_pointers() {
        let path = [json!("a/b"), json!(0), json!("m~n")];
        assert_eq!(Violation::at_path(&path, "bad").pointer, "/a~1b/0/m~0n");
        assert_eq!(Violation::at_path(&[], "whole").pointer, "");
    }

    #[test]
    fn one_text_for_every_source() {
        let e = invalid_arguments(&[
            Violation::at_path(&[json!("n")], "not an integer"),
            Violation::at_path(&[], "too many properties"),
        ]);
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert_eq!(
            e.message,
            "arguments do not match the tool's schema: at /n: not an integer; too many properties"
        );
        assert_eq!(e.details["errors"][0]["pointer"], "/n");
    }
}
