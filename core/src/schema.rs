//! Input and output schemas: compiled once at registration, checked on every call.
//!
//! Missing required properties become the `needs` envelope; any other violation becomes
//! `invalid_arguments` with a JSON pointer and a message per error.

use crate::envelope::Envelope;
use crate::violation::invalid_arguments;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{Retrieve, Uri, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Schema documents served from memory when a schema `$ref`s a remote URI. Nothing is ever
/// fetched over the network: an unknown URI fails at registration.
#[derive(Debug, Clone, Default)]
pub struct SchemaResources(Arc<HashMap<String, Value>>);

impl SchemaResources {
    /// Resources keyed by their full URI (`http://example.com/defs.json`).
    pub fn new(resources: HashMap<String, Value>) -> Self {
        SchemaResources(Arc::new(resources))
    }
}

impl Retrieve for SchemaResources {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str();
        let trimmed = key.trim_end_matches('#');
        self.0
            .get(key)
            .or_else(|| self.0.get(trimmed))
            .cloned()
            .ok_or_else(|| {
                format!("schema {key} is not among the registered schema resources").into()
            })
    }
}

/// A schema compiled once, with what the `needs` rule must know.
pub struct CompiledSchema {
    validator: Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

/// What validation concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The value conforms.
    Valid,
    /// Only required properties are missing: these, as dotted paths.
    Needs(Vec<String>),
    /// Other violations, each with its JSON pointer and message.
    Invalid(Vec<Violation>),
}

pub use crate::violation::Violation;

impl CompiledSchema {
    /// Compiles a schema (draft 2020-12 by default, or whatever its `$schema` names).
    pub fn compile(schema: &Value, resources: &SchemaResources) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_retriever(resources.clone())
            .build(schema)
            .map_err(|e| format!("schema does not compile: {e}"))?;
        Ok(CompiledSchema { validator })
    }

    /// Whether the value conforms, without collecting errors (the fast path).
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Validates a value and classifies the errors.
    pub fn check(&self, value: &Value) -> Verdict {
        if self.validator.is_valid(value) {
            return Verdict::Valid;
        }
        let mut needs = Vec::new();
        let mut violations = Vec::new();
        for error in self.validator.iter_errors(value) {
            let pointer = error.instance_path().as_str().to_string();
            match error.kind() {
                ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| property.to_string());
                    needs.push(dotted(&pointer, &name));
                }
                _ => violations.push(Violation {
                    pointer,
                    message: error.to_string(),
                }),
            }
        }
        if violations.is_empty() && !needs.is_empty() {
            Verdict::Needs(needs)
        } else {
            // A model fixing a wrong type should also learn what is missing.
            for field in needs {
                violations.push(Violation {
                    pointer: String::new(),
                    message: format!("{field:?} is a required property"),
                });
            }
            Verdict::Invalid(violations)
        }
    }
}

/// Turns `/address` + `city` into `address.city`; a top-level field stays bare.
fn dotted(pointer: &str, name: &str) -> String {
    let mut path: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .collect();
    path.push(name.to_string());
    path.join(".")
}

/// The envelope for a verdict on arguments (`None` when valid).
pub fn arguments_envelope(verdict: Verdict) -> Option<Envelope> {
    match verdict {
        Verdict::Valid => None,
        Verdict::Needs(fields) => Some(Envelope::Needs(fields)),
        Verdict::Invalid(violations) => Some(Envelope::Error(invalid_arguments(&violations))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> CompiledSchema {
        CompiledSchema::compile(
            &json!({"type":"object","properties":{"n":{"type":"integer"},"a":{"type":"object","properties":{"c":{"type":"string"}},"required":["c"]}},"required":["n"]}),
            &SchemaResources::default(),
        )
        .unwrap()
    }

    #[test]
    fn classifies() {
        let s = schema();
        assert_eq!(s.check(&json!({"n": 1})), Verdict::Valid);
        assert_eq!(s.check(&json!({})), Verdict::Needs(vec!["n".into()]));
        assert_eq!(
            s.check(&json!({"n": 1, "a": {}})),
            Verdict::Needs(vec!["a.c".into()])
        );
        match s.check(&json!({"n": "x"})) {
            Verdict::Invalid(v) => assert_eq!(v[0].pointer, "/n"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_schema_is_refused() {
        assert!(
            CompiledSchema::compile(&json!({"type": 12}), &SchemaResources::default()).is_err()
        );
    }
}
