//! Tool specs: the provider-neutral description of a tool, and the name rule.

use crate::policy::Policy;
use crate::registration_error::RegistrationError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as data: what providers need to offer it to a model, plus its policy.
/// This is the format of `Engine::specs()` and of tools in the conformance vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Provider-safe name: 1–64 of letters, digits, `_` and `-`.
    pub name: String,
    /// What the tool does, written for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema (draft 2020-12 or draft 7) of the arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of the data the tool returns, checked after it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The name the tool was imported under when it differs (e.g. `math.factorial`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_name: Option<String>,
    /// How the tool runs.
    #[serde(default)]
    pub policy: Policy,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl ToolSpec {
    /// A spec with a name, a description and an input schema; default policy.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            original_name: None,
            policy: Policy::default(),
        }
    }
}

impl ToolSpec {
    /// A spec from data, as the bindings receive it: its policy read on its own, so that a
    /// mistake in it is reported as `invalid_policy` naming the tool, and any other as
    /// `invalid_spec`.
    pub fn from_value(value: Value) -> Result<ToolSpec, RegistrationError> {
        let Value::Object(mut map) = value else {
            return Err(RegistrationError::InvalidSpec {
                tool: "?".into(),
                message: "a tool spec must be an object".into(),
            });
        };
        let tool = map
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let policy = match map.remove("policy") {
            None | Some(Value::Null) => Policy::default(),
            Some(p) => serde_json::from_value(p).map_err(|e| RegistrationError::InvalidPolicy {
                tool: tool.clone(),
                message: e.to_string(),
            })?,
        };
        let mut spec: ToolSpec = serde_json::from_value(Value::Object(map)).map_err(|e| {
            RegistrationError::InvalidSpec {
                tool,
                message: e.to_string(),
            }
        })?;
        spec.policy = policy;
        Ok(spec)
    }
}

/// Checks the providers' rule for tool names: 1–64 of ASCII letters, digits, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!(
            "tool name {name:?} must be 1 to 64 characters long"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "tool name {name:?} has {bad:?}; only letters, digits, '_' and '-' are allowed"
        ));
    }
    Ok(())
}

/// Maps a foreign name (dots, spaces, too long) onto the providers' rule, deterministically.
pub fn provider_safe_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out.truncate(64);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule() {
        assert!(check_name("get_weather-2").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a.b").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
        assert_eq!(provider_safe_name("math.factorial"), "math_factorial");
    }

    #[test]
    fn from_value_names_what_is_wrong() {
        let spec = ToolSpec::from_value(serde_json::json!({"name": "t", "input_schema": true}));
        assert_eq!(spec.unwrap().input_schema, true);
        let policy = ToolSpec::from_value(serde_json::json!({"name": "t", "policy": {"nope": 1}}));
        let e = policy.unwrap_err();
        assert_eq!(e.code(), "invalid_policy");
        assert!(
            e.to_string()
                .starts_with("tool \"t\": invalid policy: unknown field `nope`"),
            "{e}"
        );
        let e = ToolSpec::from_value(serde_json::json!({"name": "t", "extra": 1})).unwrap_err();
        assert_eq!(e.code(), "invalid_spec");
        let e = ToolSpec::from_value(serde_json::json!([])).unwrap_err();
        assert_eq!(e.code(), "invalid_spec");
    }
}
