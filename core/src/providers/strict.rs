//! OpenAI strict mode: a tool schema rewritten into the subset structured outputs accept.
//!
//! Strict mode wants every object closed (`additionalProperties: false`) with every property
//! required, optional ones expressed as "this type or null", and only a few keywords. The
//! conversion here does that; [`drop_optional_nulls`] undoes the nulls on the way back, so
//! arguments still validate against the tool's own schema, which tooljig always enforces in
//! full (a constraint dropped for strict mode is still checked).
//!
//! What strict mode cannot say is refused with a reason: a root that is not an object, an
//! object with open or pattern properties, a schema with no type.

use serde_json::{Map, Value, json};

/// Keywords strict mode accepts; every other one is dropped (the original schema still
/// enforces it).
const KEPT: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// String formats strict mode knows.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Constraints worth keeping in words when the keyword itself must go.
const DESCRIBED: &[&str] = &[
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
];

/// Rewrites a tool's input schema for strict mode, or says why it cannot be.
pub fn to_strict(schema: &Value) -> Result<Value, String> {
    let is_object =
        schema.get("type") == Some(&json!("object")) || schema.get("properties").is_some();
    if !is_object {
        return Err("strict mode needs an object at the root of the schema".into());
    }
    convert(schema, "#")
}

fn convert(schema: &Value, path: &str) -> Result<Value, String> {
    let Some(obj) = schema.as_object() else {
        return Err(format!("{path}: a boolean schema cannot be strict"));
    };
    if let Some(r) = obj.get("$ref") {
        // Siblings of `$ref` are not allowed; the reference says it all.
        return Ok(json!({"$ref": r}));
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        if all.len() != 1 {
            return Err(format!(
                "{path}: `allOf` with several schemas cannot be strict"
            ));
        }
        let mut merged = obj.clone();
        merged.remove("allOf");
        if let Some(inner) = all[0].as_object() {
            for (k, v) in inner {
                merged.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        return convert(&Value::Object(merged), path);
    }
    let mut out = Map::new();
    let mut notes = Vec::new();
    for (k, v) in obj {
        if KEPT.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if DESCRIBED.contains(&k.as_str()) {
            notes.push(format!("{k}: {v}"));
        } else if k == "oneOf" {
            // Looser, but the original schema still holds the model to exactly one.
            out.insert("anyOf".into(), v.clone());
        }
    }
    if let Some(f) = out.get("format").and_then(Value::as_str)
        && !FORMATS.contains(&f)
    {
        notes.push(format!("format: {f}"));
        out.remove("format");
    }
    if !notes.is_empty() {
        let base = out
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let sep = if base.is_empty() { "" } else { " " };
        out.insert(
            "description".into(),
            Value::String(format!("{base}{sep}({})", notes.join(", "))),
        );
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = out.get(key).cloned() {
            let mut converted = Map::new();
            for (name, d) in defs {
                converted.insert(name.clone(), convert(&d, &format!("{path}/{key}/{name}"))?);
            }
            out.insert(key.into(), Value::Object(converted));
        }
    }
    if let Some(Value::Array(branches)) = out.get("anyOf").cloned() {
        let converted = branches
            .iter()
            .enumerate()
            .map(|(i, b)| convert(b, &format!("{path}/anyOf/{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf".into(), Value::Array(converted));
    }
    if let Some(items) = out.get("items").cloned() {
        out.insert("items".into(), convert(&items, &format!("{path}/items"))?);
    }
    let typed = out.contains_key("type")
        || out.contains_key("anyOf")
        || out.contains_key("enum")
        || out.contains_key("const");
    if !typed && !out.contains_key("properties") {
        return Err(format!(
            "{path}: a schema without a type (any value) cannot be strict"
        ));
    }
    let is_object = out.get("type") == Some(&json!("object"))
        || out
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.contains(&json!("object")))
        || out.contains_key("properties");
    if is_object {
        if obj.contains_key("patternProperties") {
            return Err(format!(
                "{path}: an object with `patternProperties` cannot be strict"
            ));
        }
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!(
                    "{path}: an object open to extra properties cannot be strict"
                ));
            }
        }
        let props = out
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut converted = Map::new();
        for (name, p) in &props {
            let mut c = convert(p, &format!("{path}/properties/{name}"))?;
            if !required.contains(name) {
                c = nullable(c);
            }
            converted.insert(name.clone(), c);
        }
        out.insert("type".into(), json!("object"));
        out.insert(
            "required".into(),
            Value::Array(props.keys().map(|k| json!(k)).collect()),
        );
        out.insert("properties".into(), Value::Object(converted));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Ok(Value::Object(out))
}

/// "This schema or null": how strict mode says a property may be left out.
fn nullable(mut schema: Value) -> Value {
    if accepts_null(&schema) {
        return schema;
    }
    if schema.get("$ref").is_some() {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        branches.push(json!({"type": "null"}));
        return schema;
    }
    match obj.get("type").cloned() {
        Some(Value::String(t)) => {
            obj.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut types)) => {
            types.push(json!("null"));
            obj.insert("type".into(), Value::Array(types));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.push(Value::Null);
    }
    if let Some(c) = obj.remove("const") {
        obj.insert("enum".into(), json!([c, null]));
    }
    schema
}

/// Whether a schema lets `null` through.
fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.contains(&json!("null")) => return true,
        _ => {}
    }
    schema.get("nullable") == Some(&Value::Bool(true))
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|b| b.iter().any(accepts_null))
}

/// Removes `null`s the model sent for properties the original schema leaves optional and
/// does not allow to be null, recursively.
pub fn drop_optional_nulls(value: &mut Value, schema: &Value) {
    walk(value, schema, schema, 0);
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r.strip_prefix('#').unwrap_or(r);
            root.pointer(pointer).unwrap_or(schema)
        }
        None => schema,
    }
}

fn walk(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(map) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|k, v| {
                !(v.is_null()
                    && !required.contains(&k.as_str())
                    && props
                        .get(k)
                        .is_some_and(|p| !accepts_null(resolve(p, root))))
            });
            for (k, v) in map.iter_mut() {
                if let Some(p) = props.get(k) {
                    walk(v, p, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for v in items {
                    walk(v, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}
