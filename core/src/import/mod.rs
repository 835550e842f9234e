//! Importing tool definitions written for other systems: OpenAI function specs and BFCL
//! function docs become [`ToolSpec`]s ready for `Engine::register`.
//!
//! Import checks the shape of a definition and maps what tooljig spells differently (foreign
//! type names, names with dots); whether the resulting schema compiles is decided once, at
//! registration, like for any other tool. A name that breaks the providers' rule (dots,
//! spaces, more than 64 characters) is mapped with [`provider_safe_name`] and the original is
//! kept as [`ToolSpec::original_name`], so a model that calls the tool by its original name
//! still reaches it.

pub mod bfcl;
pub mod openai;
#[cfg(feature = "http")]
pub mod openapi;

use crate::spec::{ToolSpec, check_name, provider_safe_name};
use serde_json::Value;
use std::collections::HashSet;

/// A definition that cannot be imported: where it is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{at}: {message}", tool.as_ref().map(|t| format!("tool {t:?} ")).unwrap_or_default())]
pub struct ImportError {
    /// The tool's name as written, when the definition got that far.
    pub tool: Option<String>,
    /// JSON pointer into the definition (`""` for the whole), spelled out in messages.
    pub at: String,
    /// What is wrong, and what was expected instead.
    pub message: String,
}

impl ImportError {
    /// An error at a JSON pointer inside the definition.
    pub fn at(at: impl Into<String>, message: impl Into<String>) -> Self {
        let at = at.into();
        ImportError {
            tool: None,
            at: if at.is_empty() { "/".into() } else { at },
            message: message.into(),
        }
    }

    /// Names the tool the error belongs to.
    pub fn in_tool(mut self, tool: &str) -> Self {
        self.tool.get_or_insert_with(|| tool.to_string());
        self
    }

    /// Prefixes the pointer, for definitions nested in a list or a wrapper.
    pub fn under(mut self, prefix: &str) -> Self {
        self.at = if self.at == "/" {
            prefix.to_string()
        } else {
            format!("{prefix}{}", self.at)
        };
        self
    }
}

/// How [`import_tools`] reads definitions: what the bindings hand over as data.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImportOptions {
    /// `openai` (the default) or `bfcl`.
    pub format: Option<String>,
    /// BFCL: the category or file name the docs come from (`simple_java`), which decides
    /// how parameters reach the model.
    pub category: Option<String>,
    /// BFCL: close objects that declare `properties` (default `true`).
    pub close_objects: Option<bool>,
}

/// Imports tool definitions in any accepted shape, for the Python and Node packages' one
/// importer: OpenAI specs (one, or a list), BFCL docs (one, a list, or an entry with
/// `function`). Names are made unique across what is imported together.
pub fn import_tools(defs: &Value, options: &ImportOptions) -> Result<Vec<ToolSpec>, ImportError> {
    match options.format.as_deref().unwrap_or("openai") {
        "openai" => match defs {
            Value::Array(_) => openai::from_openai_list(defs),
            one => openai::from_openai(one).map(|spec| vec![spec]),
        },
        "bfcl" => {
            let bfcl = bfcl::BfclOptions {
                close_objects: options.close_objects.unwrap_or(true),
                language: options
                    .category
                    .as_deref()
                    .map(bfcl::Language::of_category)
                    .unwrap_or_default(),
            };
            let entry = match defs {
                Value::Object(o) if o.contains_key("function") => defs.clone(),
                other => serde_json::json!({ "function": other }),
            };
            bfcl::from_bfcl_entry(&entry, &bfcl)
        }
        other => Err(ImportError::at(
            "",
            format!("unknown format {other:?}: expected \"openai\" or \"bfcl\""),
        )),
    }
}

/// Reads the `name` member of a definition: a non-empty string.
pub(crate) fn read_name(def: &Value, at: &str) -> Result<String, ImportError> {
    match def.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => Ok(name.clone()),
        Some(Value::String(_)) => Err(ImportError::at(
            format!("{at}/name"),
            "the tool name is empty",
        )),
        Some(other) => Err(ImportError::at(
            format!("{at}/name"),
            format!("the tool name must be a string, not {}", kind(other)),
        )),
        None => Err(ImportError::at(at, "the definition has no `name`")),
    }
}

/// Reads an optional string member (`description`); absent or null is empty.
pub(crate) fn read_text(def: &Value, key: &str, at: &str) -> Result<String, ImportError> {
    match def.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ImportError::at(
            format!("{at}/{key}"),
            format!("`{key}` must be a string, not {}", kind(other)),
        )),
    }
}

/// A spec under a provider-safe name, keeping the original when it had to change.
pub(crate) fn spec_for(name: String, description: String, input_schema: Value) -> ToolSpec {
    let mut spec = ToolSpec::new(provider_safe_name(&name), description, input_schema);
    if check_name(&name).is_err() {
        spec.original_name = Some(name);
    }
    spec
}

/// Makes the names of tools imported together distinct: two foreign names can map to the
/// same provider-safe name (`a.b` and `a_b`, or two long names sharing 64 characters). A name
/// that was already valid keeps it; a mapped one gets a `_2`, `_3`, ... suffix. Each keeps
/// its original name, so calls by the original name still resolve.
pub fn make_names_unique(specs: &mut [ToolSpec]) {
    let mut taken: HashSet<String> = specs
        .iter()
        .filter(|s| s.original_name.is_none())
        .map(|s| s.name.clone())
        .collect();
    for spec in specs.iter_mut().filter(|s| s.original_name.is_some()) {
        if taken.insert(spec.name.clone()) {
            continue;
        }
        let base = spec.name.clone();
        let mut n = 2usize;
        loop {
            let suffix = format!("_{n}");
            let keep = base.len().min(64 - suffix.len());
            let candidate = format!("{}{suffix}", &base[..keep]);
            if taken.insert(candidate.clone()) {
                spec.name = candidate;
                break;
            }
            n += 1;
        }
    }
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Escapes one segment of a JSON pointer.
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_names_map_and_keep_the_original() {
        let s = spec_for("math.factorial".into(), String::new(), json!({}));
        assert_eq!(s.name, "math_factorial");
        assert_eq!(s.original_name.as_deref(), Some("math.factorial"));
        let s = spec_for("plain_name".into(), String::new(), json!({}));
        assert_eq!(s.original_name, None);
    }

    #[test]
    fn colliding_names_get_suffixes() {
        let mut specs = vec![
            spec_for("a.b".into(), String::new(), json!({})),
            spec_for("a_b".into(), String::new(), json!({})),
            spec_for("a b".into(), String::new(), json!({})),
            spec_for("x".repeat(70), String::new(), json!({})),
            spec_for(format!("{}y", "x".repeat(70)), String::new(), json!({})),
        ];
        make_names_unique(&mut specs);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(&names[..3], ["a_b_2", "a_b", "a_b_3"]);
        assert_eq!(names[3], "x".repeat(64));
        assert_eq!(names[4], format!("{}_2", "x".repeat(62)));
        assert!(specs.iter().all(|s| check_name(&s.name).is_ok()));
    }

    #[test]
    fn errors_say_where() {
        let e = ImportError::at("/parameters/type", "bad")
            .under("/3")
            .in_tool("t");
        assert_eq!(e.to_string(), "tool \"t\" /3/parameters/type: bad");
    }
}
