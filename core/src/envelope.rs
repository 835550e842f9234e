//! The envelope: what the model sees of one call.
//!
//! ```json
//! {"ok": true,  "data": ...}
//! {"ok": false, "needs": {"field": true}}
//! {"ok": false, "error": {"code": "...", "message": "...", "retryable": false, ...}}
//! ```

use crate::error_code::ErrorCode;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// What the model sees of one call. Serializes with `ok` first, byte for byte the same in
/// every binding.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope {
    /// The tool ran and returned data.
    Ok(Value),
    /// Required fields are missing; the model should ask the user for them.
    Needs(Vec<String>),
    /// The call was refused or failed.
    Error(ToolError),
}

impl Envelope {
    /// Whether this is the `ok: true` envelope.
    pub fn is_ok(&self) -> bool {
        matches!(self, Envelope::Ok(_))
    }

    /// The error code, when this is an error envelope.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Envelope::Error(e) => Some(e.code),
            _ => None,
        }
    }

    /// The data, when this is an `ok` envelope.
    pub fn data(&self) -> Option<&Value> {
        match self {
            Envelope::Ok(v) => Some(v),
            _ => None,
        }
    }

    /// The envelope as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Shorthand for an error envelope.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Envelope::Error(ToolError::new(code, message))
    }
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        match self {
            Envelope::Ok(data) => {
                map.serialize_entry("ok", &true)?;
                map.serialize_entry("data", data)?;
            }
            Envelope::Needs(fields) => {
                map.serialize_entry("ok", &false)?;
                let needs: Map<String, Value> = fields
                    .iter()
                    .map(|f| (f.clone(), Value::Bool(true)))
                    .collect();
                map.serialize_entry("needs", &needs)?;
            }
            Envelope::Error(err) => {
                map.serialize_entry("ok", &false)?;
                map.serialize_entry("error", err)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut obj = Map::<String, Value>::deserialize(d)?;
        if let Some(data) = obj.remove("data") {
            return Ok(Envelope::Ok(data));
        }
        if let Some(needs) = obj.remove("needs") {
            let fields = match needs {
                Value::Object(m) => m.into_iter().map(|(k, _)| k).collect(),
                Value::Array(a) => a
                    .into_iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect(),
                _ => return Err(D::Error::custom("`needs` must be an object or an array")),
            };
            return Ok(Envelope::Needs(fields));
        }
        if let Some(err) = obj.remove("error") {
            return serde_json::from_value(err)
                .map(Envelope::Error)
                .map_err(D::Error::custom);
        }
        if obj.get("ok") == Some(&Value::Bool(true)) {
            return Ok(Envelope::Ok(Value::Null));
        }
        Err(D::Error::custom(
            "an envelope holds `data`, `needs` or `error`",
        ))
    }
}

/// A refusal or failure as the model sees it: a code, a message it can act on, whether
/// retrying may help, and code-specific details (`retry_after_ms`, `missing_scopes`, ...)
/// flattened beside them. A detail can never shadow `code`, `message` or `retryable`: those
/// keys are left out of the details when written, whoever put them there (a handler, a
/// client's submitted error), so the code the model sees is always one of the closed set.
/// Read from JSON, a missing `retryable` is the code's default (what a client submitting an
/// error need not know).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// One of the closed set of codes.
    pub code: ErrorCode,
    /// A message written for the model: what went wrong and what to do about it.
    pub message: String,
    /// Whether the same call may succeed if tried again.
    pub retryable: bool,
    /// Code-specific details, flattened into the error object.
    pub details: Map<String, Value>,
}

impl<'de> Deserialize<'de> for ToolError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Written {
            code: ErrorCode,
            message: String,
            #[serde(default)]
            retryable: Option<bool>,
            #[serde(flatten)]
            details: Map<String, Value>,
        }
        let w = Written::deserialize(d)?;
        Ok(ToolError {
            retryable: w.retryable.unwrap_or_else(|| w.code.default_retryable()),
            code: w.code,
            message: w.message,
            details: w.details,
        })
    }
}

/// The keys of the error object itself, which no detail may take.
const RESERVED: [&str; 3] = ["code", "message", "retryable"];

impl Serialize for ToolError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", &self.code)?;
        map.serialize_entry("message", &self.message)?;
        map.serialize_entry("retryable", &self.retryable)?;
        for (k, v) in &self.details {
            if !RESERVED.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl ToolError {
    /// An error with the code's default retryability and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            retryable: code.default_retryable(),
            details: Map::new(),
        }
    }

    /// Adds one detail field, e.g. `retry_after_ms`; `code`, `message` and `retryable` are
    /// the error's own and are ignored as details.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        if !RESERVED.contains(&key.as_str()) {
            self.details.insert(key, value.into());
        }
        self
    }

    /// Overrides the retryability.
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serializes_ok_first() {
        assert_eq!(
            serde_json::to_string(&Envelope::Ok(json!({"a": 1}))).unwrap(),
            r#"{"ok":true,"data":{"a":1}}"#
        );
        assert_eq!(
            serde_json::to_string(&Envelope::Needs(vec!["when".into()])).unwrap(),
            r#"{"ok":false,"needs":{"when":true}}"#
        );
        let e = Envelope::Error(
            ToolError::new(ErrorCode::RateLimited, "slow down").with("retry_after_ms", 250),
        );
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"ok":false,"error":{"code":"rate_limited","message":"slow down","retryable":true,"retry_after_ms":250}}"#
        );
    }

    #[test]
    fn a_detail_never_shadows_the_code() {
        let mut e = ToolError::new(ErrorCode::NotFound, "gone").with("code", "ok");
        e.details.insert("code".into(), json!("ok"));
        e.details.insert("message".into(), json!("pwned"));
        e.details.insert("retryable".into(), json!(true));
        e.details.insert("id".into(), json!(3));
        let text = serde_json::to_string(&Envelope::Error(e)).unwrap();
        assert_eq!(
            text,
            r#"{"ok":false,"error":{"code":"not_found","message":"gone","retryable":false,"id":3}}"#
        );
    }

    #[test]
    fn deserializes_what_it_serializes() {
        for env in [
            Envelope::Ok(json!([1, 2])),
            Envelope::Needs(vec!["a".into(), "b".into()]),
            Envelope::Error(ToolError::new(ErrorCode::Conflict, "x").with("k", "v")),
        ] {
            let back: Envelope = serde_json::from_value(env.to_value()).unwrap();
            assert_eq!(back, env);
        }
    }

    #[test]
    fn a_missing_retryable_is_the_codes_default() {
        let read = |v: Value| serde_json::from_value::<ToolError>(v).unwrap();
        let e = read(json!({"code": "timeout", "message": "slow", "id": 1}));
        assert!(e.retryable);
        assert_eq!(e.details, Map::from_iter([("id".to_string(), json!(1))]));
        assert!(!read(json!({"code": "not_found", "message": "gone"})).retryable);
        assert!(!read(json!({"code": "timeout", "message": "slow", "retryable": false})).retryable);
    }
}
