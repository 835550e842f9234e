//! BFCL (Berkeley Function Calling Leaderboard) function docs → [`ToolSpec`].
//!
//! A BFCL doc is `{"name", "description", "parameters"}` where `parameters` looks like JSON
//! Schema but spells types its own way. The mapping (BFCL's own `GORILLA_TO_OPENAPI` table,
//! except `any`, which BFCL's checker accepts as any value and tooljig therefore leaves
//! unconstrained instead of narrowing it to a string):
//!
//! | BFCL type | JSON Schema |
//! |---|---|
//! | `dict`, `object`, `HashMap`, `Hashtable` | `object` |
//! | `float`, `number`, `double` | `number` |
//! | `integer`, `int`, `long`, `short`, `byte`, `Bigint` | `integer` |
//! | `string`, `str`, `String`, `char` | `string` |
//! | `boolean`, `bool` | `boolean` |
//! | `array`, `list`, `tuple`, `ArrayList`, `Array`, `Queue`, `Stack` | `array` |
//! | `any`, `Any` | no type constraint |
//! | `null` | `null` |
//!
//! Other rules:
//! - `optional` (a flag on a property, or a list of names on an object) is BFCL-only and
//!   dropped; `required` alone decides, as in BFCL's checker.
//! - `"default": null` (Python's `Optional[int] = None`, common in the live categories) makes
//!   the parameter nullable: `{"type": ["integer", "null"], "default": null}`.
//! - `default` is an annotation; one that does not fit the declared type (`"false"` on a
//!   `boolean`, `"5 years"` on an `integer`, both in the corpus) is dropped so it cannot
//!   mislead a model.
//! - Objects that declare `properties` are closed (`additionalProperties: false`) unless the
//!   doc says otherwise, because BFCL's checker refuses unexpected parameters; a required name
//!   missing from `properties` is added as an unconstrained property so the schema stays
//!   satisfiable. A `dict` without `properties` stays a free-form object. Set
//!   [`BfclOptions::close_objects`] to `false` to keep every object open.
//! - Java and JavaScript categories: BFCL hands every top-level parameter to the model as a
//!   string of source code (`"new ArrayList<>()"`), and so does [`Language::Java`] /
//!   [`Language::JavaScript`], with BFCL's hint appended to each description.
//! - Anything else that is JSON Schema (`enum`, `format`, `minimum`, `items`, ...) is kept;
//!   an unknown type name, or a keyword of the wrong shape, is an [`ImportError`] naming the
//!   place.

use super::{ImportError, escape, kind, read_name, read_text, spec_for};
use crate::spec::ToolSpec;
use serde_json::{Map, Value, json};

/// The language a BFCL category is written for; it decides how parameters reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    /// Parameters are JSON values of their declared types.
    #[default]
    Python,
    /// Every top-level parameter is a string of Java source.
    Java,
    /// Every top-level parameter is a string of JavaScript source.
    JavaScript,
}

impl Language {
    /// The language of a BFCL category or file name (`simple_java`, `BFCL_v4_simple_javascript.json`).
    pub fn of_category(category: &str) -> Language {
        if category.contains("javascript") {
            Language::JavaScript
        } else if category.contains("java") {
            Language::Java
        } else {
            Language::Python
        }
    }
}

/// How BFCL docs are imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfclOptions {
    /// Close objects that declare `properties` (`additionalProperties: false`), as BFCL's
    /// checker does. Default `true`.
    pub close_objects: bool,
    /// How parameters reach the model. Default [`Language::Python`].
    pub language: Language,
}

impl Default for BfclOptions {
    fn default() -> Self {
        BfclOptions {
            close_objects: true,
            language: Language::Python,
        }
    }
}

/// Imports one BFCL function doc with the default options.
///
/// ```
/// let spec = tooljig::import::bfcl::from_bfcl(&serde_json::json!({
///     "name": "math.factorial",
///     "description": "Calculate the factorial of a given number.",
///     "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]}
/// })).unwrap();
/// assert_eq!(spec.name, "math_factorial");
/// assert_eq!(spec.input_schema["type"], "object");
/// ```
pub fn from_bfcl(doc: &Value) -> Result<ToolSpec, ImportError> {
    from_bfcl_with(doc, &BfclOptions::default())
}

/// Imports one BFCL function doc.
pub fn from_bfcl_with(doc: &Value, options: &BfclOptions) -> Result<ToolSpec, ImportError> {
    if !doc.is_object() {
        return Err(ImportError::at(
            "",
            format!("a BFCL function doc must be an object, not {}", kind(doc)),
        ));
    }
    let name = read_name(doc, "")?;
    let description = read_text(doc, "description", "").map_err(|e| e.in_tool(&name))?;
    let schema = parameters_schema(doc.get("parameters"), options).map_err(|e| e.in_tool(&name))?;
    Ok(spec_for(name, description, schema))
}

/// Imports the functions of one BFCL entry (`{"id", "question", "function"}`, where
/// `function` is a list of docs or a single doc). Names are made unique across the entry.
pub fn from_bfcl_entry(entry: &Value, options: &BfclOptions) -> Result<Vec<ToolSpec>, ImportError> {
    let docs: Vec<&Value> = match entry.get("function") {
        Some(Value::Array(docs)) => docs.iter().collect(),
        Some(doc @ Value::Object(_)) => vec![doc],
        Some(other) => {
            return Err(ImportError::at(
                "/function",
                format!("`function` must be a list of docs, not {}", kind(other)),
            ));
        }
        None => return Err(ImportError::at("", "the entry has no `function`")),
    };
    let many = matches!(entry.get("function"), Some(Value::Array(_)));
    let mut specs = docs
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            from_bfcl_with(d, options).map_err(|e| {
                if many {
                    e.under(&format!("/function/{i}"))
                } else {
                    e.under("/function")
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    super::make_names_unique(&mut specs);
    Ok(specs)
}

/// The JSON Schema of a doc's `parameters`: an object schema; absent means no parameters.
pub fn parameters_schema(
    params: Option<&Value>,
    options: &BfclOptions,
) -> Result<Value, ImportError> {
    let at = "/parameters";
    let params = match params {
        None | Some(Value::Null) => return Ok(json!({"type": "object", "properties": {}})),
        Some(p @ Value::Object(_)) => p,
        Some(other) => {
            return Err(ImportError::at(
                at,
                format!("`parameters` must be an object, not {}", kind(other)),
            ));
        }
    };
    // A doc without a top-level type still lists named parameters: read it as a `dict`.
    let typed;
    let params = if params.get("type").is_none() {
        let mut with_type = params.clone();
        with_type["type"] = json!("dict");
        typed = with_type;
        &typed
    } else {
        params
    };
    let mut schema = convert(params, at, options)?;
    match schema.get("type") {
        // `any` at the top: still named parameters, of any value.
        None => schema["type"] = json!("object"),
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(ImportError::at(
                format!("{at}/type"),
                format!("`parameters` must describe a `dict` of named parameters, not {other}"),
            ));
        }
    }
    if options.language != Language::Python {
        as_source_strings(&mut schema, params, options.language);
    }
    Ok(schema)
}

/// The JSON Schema type for a BFCL type name; `Ok(None)` for `any`.
pub fn json_type(bfcl: &str) -> Result<Option<&'static str>, String> {
    Ok(Some(match bfcl {
        "dict" | "object" | "HashMap" | "Hashtable" => "object",
        "float" | "number" | "double" => "number",
        "integer" | "int" | "long" | "short" | "byte" | "Bigint" => "integer",
        "string" | "str" | "String" | "char" => "string",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "ArrayList" | "Array" | "Queue" | "Stack" => "array",
        "null" => "null",
        "any" | "Any" => return Ok(None),
        other => {
            return Err(format!(
                "unknown BFCL type {other:?}; expected one of dict, float, integer, string, \
                 boolean, array, tuple, any (or a JSON Schema type)"
            ));
        }
    }))
}

fn convert(node: &Value, at: &str, options: &BfclOptions) -> Result<Value, ImportError> {
    let obj = match node {
        Value::Bool(_) => return Ok(node.clone()),
        Value::Object(obj) => obj,
        other => {
            return Err(ImportError::at(
                at,
                format!("a parameter schema must be an object, not {}", kind(other)),
            ));
        }
    };
    let mut out = Map::with_capacity(obj.len() + 1);
    for (key, value) in obj {
        let here = format!("{at}/{}", escape(key));
        match key.as_str() {
            "type" => {
                if let Some(t) = convert_type(value, &here)? {
                    out.insert(key.clone(), t);
                }
            }
            "properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas" => {
                let Value::Object(props) = value else {
                    return Err(ImportError::at(
                        here,
                        format!("`{key}` must map names to schemas, not {}", kind(value)),
                    ));
                };
                let mut mapped = Map::with_capacity(props.len());
                for (name, schema) in props {
                    let inner = format!("{here}/{}", escape(name));
                    mapped.insert(name.clone(), convert(schema, &inner, options)?);
                }
                out.insert(key.clone(), Value::Object(mapped));
            }
            "items" if value.is_array() => {
                // The old tuple form of `items`; 2020-12 spells it `prefixItems`.
                out.insert("prefixItems".into(), convert_list(value, &here, options)?);
            }
            "items"
            | "additionalProperties"
            | "additionalItems"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => {
                out.insert(key.clone(), convert(value, &here, options)?);
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                out.insert(key.clone(), convert_list(value, &here, options)?);
            }
            "required" => {
                let names_ok = value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string));
                if !names_ok {
                    return Err(ImportError::at(
                        here,
                        "`required` must be a list of parameter names",
                    ));
                }
                out.insert(key.clone(), value.clone());
            }
            "enum" if !value.is_array() => {
                return Err(ImportError::at(
                    here,
                    format!("`enum` must be a list of values, not {}", kind(value)),
                ));
            }
            // BFCL-only: `required` alone says what must be present.
            "optional" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    // `"default": null` is Python's `Optional[...] = None`: null is a value the parameter takes.
    if out.get("default") == Some(&Value::Null)
        && let Some(Value::String(t)) = out.get("type")
        && t != "null"
    {
        let nullable = json!([t, "null"]);
        out.insert("type".into(), nullable);
    }
    if let Some(default) = out.get("default")
        && !fits(default, out.get("type"))
    {
        out.remove("default");
    }
    let is_object = out.get("type").and_then(Value::as_str) == Some("object");
    if options.close_objects && is_object && out.contains_key("properties") {
        let required: Vec<String> = out
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = out.get_mut("properties") {
            for name in required {
                props.entry(name).or_insert_with(|| json!({}));
            }
        }
        out.entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    Ok(Value::Object(out))
}

fn convert_list(value: &Value, at: &str, options: &BfclOptions) -> Result<Value, ImportError> {
    let Value::Array(items) = value else {
        return Err(ImportError::at(
            at,
            format!("expected a list of schemas, not {}", kind(value)),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, s)| convert(s, &format!("{at}/{i}"), options))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Maps `type` (a name or a list of names); `None` when any value is allowed.
fn convert_type(value: &Value, at: &str) -> Result<Option<Value>, ImportError> {
    match value {
        Value::String(t) => json_type(t)
            .map(|t| t.map(|t| json!(t)))
            .map_err(|m| ImportError::at(at, m)),
        Value::Array(names) => {
            let mut out: Vec<&str> = Vec::with_capacity(names.len());
            for (i, n) in names.iter().enumerate() {
                let Some(n) = n.as_str() else {
                    return Err(ImportError::at(
                        format!("{at}/{i}"),
                        "a type must be a name such as \"string\"",
                    ));
                };
                match json_type(n).map_err(|m| ImportError::at(format!("{at}/{i}"), m))? {
                    None => return Ok(None),
                    Some(t) if !out.contains(&t) => out.push(t),
                    Some(_) => {}
                }
            }
            Ok(Some(json!(out)))
        }
        other => Err(ImportError::at(
            at,
            format!("`type` must be a type name, not {}", kind(other)),
        )),
    }
}

/// Whether a default value has the (already mapped) declared type.
fn fits(value: &Value, ty: Option<&Value>) -> bool {
    let one = |t: &str| match t {
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    };
    match ty {
        None => true,
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(one),
        Some(_) => true,
    }
}

/// BFCL's Java/JavaScript presentation: each top-level parameter becomes a string of source,
/// its description saying what it holds.
fn as_source_strings(schema: &mut Value, original: &Value, language: Language) {
    let lang = match language {
        Language::Java => "Java",
        Language::JavaScript => "JavaScript",
        Language::Python => return,
    };
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let source = original
            .pointer(&format!("/properties/{}", escape(name)))
            .unwrap_or(&Value::Null);
        let ty = source.get("type").and_then(Value::as_str).unwrap_or("any");
        let mut description = source
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if ty == "any" || ty == "Any" {
            description += &format!(
                " This parameter can be of any type of {lang} object in string representation."
            );
        } else {
            description +=
                &format!(" This is {lang} {ty} type parameter in string representation.");
        }
        let is_list = match language {
            Language::Java => matches!(ty, "ArrayList" | "Array"),
            _ => ty == "array",
        };
        if is_list && let Some(item) = source.pointer("/items/type").and_then(Value::as_str) {
            description += &format!(
                " The list elements are of type {item}; they are not in string representation."
            );
        }
        if language == Language::JavaScript
            && ty == "dict"
            && let Some(p) = source.get("properties")
        {
            description += &format!(
                " The dictionary entries have the following schema; they are not in string representation. {p}"
            );
        }
        let mut out = json!({"type": "string", "description": description});
        if let Some(d) = prop.get("default").filter(|d| d.is_string()) {
            out["default"] = d.clone();
        }
        *prop = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(params: Value) -> Value {
        parameters_schema(Some(&params), &BfclOptions::default()).unwrap()
    }

    #[test]
    fn maps_bfcl_types() {
        let s = schema(json!({
            "type": "dict",
            "properties": {
                "coords": {"type": "tuple", "items": {"type": "float"}},
                "data": {"type": "any", "description": "anything"},
                "grades": {"type": "dict"},
                "n": {"type": "integer", "optional": true, "default": "5 years"},
                "flag": {"type": "boolean", "default": true},
                "stop": {"type": "integer", "default": null},
                "nested": {"type": "dict", "properties": {"a": {"type": "float"}}, "required": ["a"]}
            },
            "required": ["coords", "missing"],
            "optional": ["n"]
        }));
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "coords": {"type": "array", "items": {"type": "number"}},
                    "data": {"description": "anything"},
                    "grades": {"type": "object"},
                    "n": {"type": "integer"},
                    "flag": {"type": "boolean", "default": true},
                    "stop": {"type": ["integer", "null"], "default": null},
                    "nested": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"], "additionalProperties": false},
                    "missing": {}
                },
                "required": ["coords", "missing"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn open_objects_on_request() {
        let opts = BfclOptions {
            close_objects: false,
            ..Default::default()
        };
        let s = parameters_schema(
            Some(&json!({"type": "dict", "properties": {"a": {"type": "string"}}})),
            &opts,
        )
        .unwrap();
        assert!(s.get("additionalProperties").is_none());
        let s = schema(json!({"type": "dict", "properties": {}, "additionalProperties": true}));
        assert_eq!(s["additionalProperties"], true);
    }

    #[test]
    fn java_parameters_are_source_strings() {
        let opts = BfclOptions {
            language: Language::of_category("simple_java"),
            ..Default::default()
        };
        let s = parameters_schema(
            Some(&json!({"type": "dict", "properties": {
                "list": {"type": "ArrayList", "description": "Names.", "items": {"type": "String"}},
                "obj": {"type": "any", "description": "Any."}
            }, "required": ["list"]})),
            &opts,
        )
        .unwrap();
        assert_eq!(s["properties"]["list"]["type"], "string");
        assert_eq!(
            s["properties"]["list"]["description"],
            "Names. This is Java ArrayList type parameter in string representation. The list elements are of type String; they are not in string representation."
        );
        assert_eq!(
            s["properties"]["obj"]["description"],
            "Any. This parameter can be of any type of Java object in string representation."
        );
        assert_eq!(
            Language::of_category("BFCL_v4_simple_javascript.json"),
            Language::JavaScript
        );
    }

    #[test]
    fn malformed_docs_say_where() {
        for (doc, at, says) in [
            (
                json!({"name": "f", "parameters": {"type": "dict", "properties": {"a": {"type": "set"}}}}),
                "/parameters/properties/a/type",
                "unknown BFCL type \"set\"",
            ),
            (
                json!({"name": "f", "parameters": {"type": "dict", "properties": []}}),
                "/parameters/properties",
                "map names",
            ),
            (
                json!({"name": "f", "parameters": {"type": "dict", "required": "a"}}),
                "/parameters/required",
                "list of parameter names",
            ),
            (
                json!({"name": "f", "parameters": {"type": "string"}}),
                "/parameters/type",
                "dict",
            ),
            (
                json!({"name": "f", "parameters": 3}),
                "/parameters",
                "must be an object",
            ),
            (
                json!({"name": "f", "parameters": {"properties": {"a": 3}}}),
                "/parameters/properties/a",
                "must be an object",
            ),
            (
                json!({"name": "f", "parameters": {"properties": {"a": {"enum": "x"}}}}),
                "/parameters/properties/a/enum",
                "list",
            ),
            (json!({"parameters": {}}), "/", "no `name`"),
        ] {
            let e = from_bfcl(&doc).unwrap_err();
            assert_eq!(e.at, at, "{doc}");
            assert!(e.message.contains(says), "{doc}: {e}");
        }
        let e = from_bfcl_entry(
            &json!({"function": [{"name": "ok"}, {"name": "f", "parameters": 1}]}),
            &BfclOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.at, "/function/1/parameters");
        assert_eq!(e.tool.as_deref(), Some("f"));
    }

    #[test]
    fn union_types_map_each_member() {
        let s = schema(
            json!({"properties": {"a": {"type": ["float", "null", "double"]}, "b": {"type": ["string", "any"]}}}),
        );
        assert_eq!(s["properties"]["a"]["type"], json!(["number", "null"]));
        assert!(s["properties"]["b"].get("type").is_none());
        assert_eq!(s["type"], "object");
    }
}
