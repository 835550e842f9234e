//! An OpenAPI schema object as the JSON Schema the engine compiles: component references
//! become `$defs` of the tool (only those it reaches), and 3.0's dialect is rewritten (in
//! 3.1 documents too, where published specs still write it: `nullable` means nothing to
//! 2020-12 and a boolean `exclusiveMinimum` does not compile, so the rewrite is safe).

use serde_json::{Map, Value};
use std::collections::BTreeMap;

const COMPONENTS: &str = "#/components/schemas/";

/// `raw` rewritten; the component schemas it reaches are added to `defs` (rewritten too).
pub(super) fn convert(
    doc: &Value,
    raw: &Value,
    defs: &mut BTreeMap<String, Value>,
) -> Result<Value, String> {
    let mut pending = Vec::new();
    let out = rewrite(raw, &mut pending);
    while let Some(name) = pending.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let pointer = format!("/components/schemas/{}", escape(&name));
        let Some(component) = doc.pointer(&pointer) else {
            return Err(format!(
                "the schema refers to {COMPONENTS}{name}, which the document lacks"
            ));
        };
        // Placed before its own references are walked, so a recursive schema ends.
        defs.insert(name.clone(), Value::Null);
        let converted = rewrite(component, &mut pending);
        defs.insert(name, converted);
    }
    Ok(out)
}

fn rewrite(value: &Value, refs: &mut Vec<String>) -> Value {
    match value {
        Value::Object(o) => {
            let mut out = Map::with_capacity(o.len());
            for (k, v) in o {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => match r.strip_prefix(COMPONENTS) {
                        Some(name) => {
                            let name = unescape(name);
                            out.insert(
                                k.clone(),
                                Value::String(format!("#/$defs/{}", escape(&name))),
                            );
                            refs.push(name);
                        }
                        None => {
                            out.insert(k.clone(), v.clone());
                        }
                    },
                    // Values, not schemas: copied as they are.
                    ("example" | "examples" | "default" | "enum" | "const", _) => {
                        out.insert(k.clone(), v.clone());
                    }
                    _ => {
                        out.insert(k.clone(), rewrite(v, refs));
                    }
                }
            }
            openapi_dialect(&mut out);
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| rewrite(v, refs)).collect()),
        other => other.clone(),
    }
}

/// 3.0's keywords in 2020-12's spelling: `nullable: true` adds `null` to `type`, and boolean
/// `exclusiveMinimum` / `exclusiveMaximum` take the bound's number.
fn openapi_dialect(o: &mut Map<String, Value>) {
    if o.remove("nullable") == Some(Value::Bool(true)) {
        match o.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                o.insert(
                    "type".into(),
                    Value::Array(vec![Value::String(t), "null".into()]),
                );
            }
            Some(Value::Array(ts)) if !ts.iter().any(|t| t == "null") => ts.push("null".into()),
            _ => {}
        }
        if let Some(Value::Array(values)) = o.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match o.get(exclusive) {
            Some(Value::Bool(true)) => {
                if let Some(b) = o.remove(bound) {
                    o.insert(exclusive.into(), b);
                } else {
                    o.remove(exclusive);
                }
            }
            Some(Value::Bool(false)) => {
                o.remove(exclusive);
            }
            _ => {}
        }
    }
}

/// A component's name as a JSON Pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn components_become_defs_and_30_is_rewritten() {
        let doc = json!({"components": {"schemas": {
            "Pet": {"type": "object", "properties": {
                "name": {"type": "string", "nullable": true},
                "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
                "friend": {"$ref": "#/components/schemas/Pet"},
                "tag": {"$ref": "#/components/schemas/Tag"}
            }},
            "Tag": {"type": "string", "enum": ["a", "b"], "nullable": true},
            "Unused": {"type": "string"}
        }}});
        let mut defs = BTreeMap::new();
        let out = convert(
            &doc,
            &json!({"$ref": "#/components/schemas/Pet"}),
            &mut defs,
        )
        .unwrap();
        assert_eq!(out, json!({"$ref": "#/$defs/Pet"}));
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["Pet", "Tag"]);
        let pet = &defs["Pet"]["properties"];
        assert_eq!(pet["name"]["type"], json!(["string", "null"]));
        assert_eq!(
            pet["age"],
            json!({"type": "integer", "exclusiveMinimum": 0})
        );
        assert_eq!(pet["friend"], json!({"$ref": "#/$defs/Pet"}));
        assert_eq!(defs["Tag"]["enum"], json!(["a", "b", null]));
        let missing = convert(
            &doc,
            &json!({"$ref": "#/components/schemas/Nope"}),
            &mut defs,
        );
        assert!(missing.unwrap_err().contains("lacks"));
    }
}
