//! OpenAI function specs → [`ToolSpec`], and back.
//!
//! Accepted shapes, as apps already hold them:
//! - Chat Completions: `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`
//! - Responses API: `{"type": "function", "name", "description", "parameters", "strict"}`
//! - bare: `{"name", "description", "parameters", "strict"}` (the inner object of the first)
//!
//! `parameters` is kept as the input schema unchanged; when absent the tool takes an empty
//! object. `strict` asks OpenAI to constrain decoding to the schema; tooljig validates every
//! call against the schema anyway, so it is checked for its type and not stored. Members
//! OpenAI may add later are ignored, so newer specs still import.

use super::{ImportError, kind, read_name, read_text, spec_for};
use crate::spec::ToolSpec;
use serde_json::{Value, json};

/// Imports one OpenAI function spec in any of the accepted shapes.
///
/// ```
/// let spec = tooljig::import::openai::from_openai(&serde_json::json!({
///     "type": "function",
///     "function": {"name": "get_weather", "parameters": {"type": "object"}}
/// })).unwrap();
/// assert_eq!(spec.name, "get_weather");
/// ```
pub fn from_openai(def: &Value) -> Result<ToolSpec, ImportError> {
    let Value::Object(obj) = def else {
        return Err(ImportError::at(
            "",
            format!("a function spec must be an object, not {}", kind(def)),
        ));
    };
    let (inner, at) = match obj.get("type") {
        Some(Value::String(t)) if t == "function" => match obj.get("function") {
            Some(f @ Value::Object(_)) => (f, "/function"),
            Some(other) => {
                return Err(ImportError::at(
                    "/function",
                    format!("`function` must be an object, not {}", kind(other)),
                ));
            }
            None => (def, ""),
        },
        Some(Value::String(t)) => {
            return Err(ImportError::at(
                "/type",
                format!("only function tools can be imported; this one has type {t:?}"),
            ));
        }
        Some(other) => {
            return Err(ImportError::at(
                "/type",
                format!(
                    "`type` must be the string \"function\", not {}",
                    kind(other)
                ),
            ));
        }
        None => (def, ""),
    };
    let name = read_name(inner, at)?;
    let described = |e: ImportError| e.in_tool(&name);
    let description = read_text(inner, "description", at).map_err(described)?;
    let parameters = match inner.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(other) => {
            return Err(described(ImportError::at(
                format!("{at}/parameters"),
                format!(
                    "`parameters` must be a JSON Schema object, not {}",
                    kind(other)
                ),
            )));
        }
    };
    match inner.get("strict") {
        None | Some(Value::Null) | Some(Value::Bool(_)) => {}
        Some(other) => {
            return Err(described(ImportError::at(
                format!("{at}/strict"),
                format!("`strict` must be a boolean, not {}", kind(other)),
            )));
        }
    }
    Ok(spec_for(name, description, parameters))
}

/// Imports a list of OpenAI function specs (the `tools` array of a request). Names are made
/// unique across the list (see [`super::make_names_unique`]); errors point into the list.
pub fn from_openai_list(defs: &Value) -> Result<Vec<ToolSpec>, ImportError> {
    let Value::Array(items) = defs else {
        return Err(ImportError::at(
            "",
            format!("expected an array of function specs, not {}", kind(defs)),
        ));
    };
    let mut specs = items
        .iter()
        .enumerate()
        .map(|(i, d)| from_openai(d).map_err(|e| e.under(&format!("/{i}"))))
        .collect::<Result<Vec<_>, _>>()?;
    super::make_names_unique(&mut specs);
    Ok(specs)
}

/// A spec as an OpenAI Chat Completions function tool, under its provider-safe name. The
/// registry resolves calls by that name and by the original one alike.
pub fn to_openai(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_imports_the_same() {
        let params = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        let bare = json!({"name": "get_weather", "description": "Weather.", "parameters": params, "strict": true});
        let chat = json!({"type": "function", "function": bare});
        let responses = json!({"type": "function", "name": "get_weather", "description": "Weather.", "parameters": params});
        let want = ToolSpec::new("get_weather", "Weather.", params.clone());
        for def in [bare, chat, responses] {
            assert_eq!(from_openai(&def).unwrap(), want, "{def}");
        }
    }

    #[test]
    fn round_trips_through_export() {
        let spec = from_openai(
            &json!({"name": "f", "description": "d", "parameters": {"type": "object"}}),
        )
        .unwrap();
        assert_eq!(from_openai(&to_openai(&spec)).unwrap(), spec);
    }

    #[test]
    fn missing_parameters_mean_no_arguments() {
        let spec = from_openai(&json!({"name": "now"})).unwrap();
        assert_eq!(
            spec.input_schema,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn dotted_names_keep_their_original() {
        let spec = from_openai(&json!({"name": "calendar.create"})).unwrap();
        assert_eq!(spec.name, "calendar_create");
        assert_eq!(spec.original_name.as_deref(), Some("calendar.create"));
    }

    #[test]
    fn malformed_definitions_say_what_is_wrong() {
        for (def, at, says) in [
            (json!([1]), "/", "must be an object"),
            (json!({"description": "x"}), "/", "no `name`"),
            (json!({"name": 3}), "/name", "must be a string"),
            (json!({"name": " "}), "/name", "empty"),
            (
                json!({"type": "function", "function": {"name": "f", "parameters": "x"}}),
                "/function/parameters",
                "JSON Schema object",
            ),
            (json!({"name": "f", "strict": "yes"}), "/strict", "boolean"),
            (
                json!({"name": "f", "description": 1}),
                "/description",
                "string",
            ),
            (
                json!({"type": "web_search"}),
                "/type",
                "only function tools",
            ),
            (
                json!({"type": "function", "function": 1}),
                "/function",
                "object",
            ),
        ] {
            let e = from_openai(&def).unwrap_err();
            assert_eq!(e.at, at, "{def}");
            assert!(e.message.contains(says), "{def}: {e}");
        }
    }

    #[test]
    fn lists_point_at_the_bad_item() {
        let e = from_openai_list(&json!([{"name": "a"}, {"name": 1}])).unwrap_err();
        assert_eq!(e.at, "/1/name");
        let specs = from_openai_list(&json!([{"name": "a.b"}, {"name": "a_b"}])).unwrap();
        assert_eq!(specs[0].name, "a_b_2");
        assert_eq!(specs[1].name, "a_b");
    }
}
