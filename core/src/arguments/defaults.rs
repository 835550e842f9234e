//! JSON Schema `default` values filled into a call's arguments before it is validated.
//!
//! At registration the input schema is read once into a [`Defaults`] tree: for each property
//! that has a `default`, or an object schema with defaults of its own, where to put what.
//! Once the arguments the model sent are valid (step 4: in JSON Schema `default` is an
//! annotation, so a missing property is judged missing, not defaulted), a property left out
//! gets its default and an object that is there gets its own missing properties filled,
//! level by level; what was filled is recorded on the call's result as JSON Pointers. A
//! default that breaks the schema (the official suite has such schemas) is not filled. A
//! schema without any `default` yields no tree, and calls of its tool pay nothing.
//!
//! Read: `properties` (and `$ref` to a local `#/$defs/...` or `#/definitions/...`, and every
//! branch of `allOf`), so defaults nested in objects are filled too. Not read: `anyOf`,
//! `oneOf`, `if`/`then`, `patternProperties`, array `items`: which branch applies depends on
//! the value, and a guess would put values where the schema never asked for them.
//! No library fills defaults (the `jsonschema` crate validates only), hence this file.

use crate::schema::{CompiledSchema, Verdict};
use serde_json::{Map, Value};

/// How deep objects are read.
const MAX_DEPTH: usize = 32;
/// How many `$ref`s are followed on one path: a schema that refers to itself stops there.
const MAX_REFS: usize = 4;
/// How many fields a tree may hold: a schema whose `$ref`s branch (a node with several
/// children of its own type) would otherwise grow it exponentially with the depth.
const MAX_FIELDS: usize = 1024;

/// Where an input schema puts default values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Defaults {
    /// Per property: its default, and the defaults inside it when it is an object.
    fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    default: Option<Value>,
    nested: Option<Defaults>,
}

impl Defaults {
    /// The defaults of `schema`; `None` when it has none (the common case).
    pub fn of(schema: &Value) -> Option<Defaults> {
        let mut budget = MAX_FIELDS;
        let found = Self::read(schema, schema, 0, 0, &mut budget);
        (!found.fields.is_empty()).then_some(found)
    }

    /// `depth` counts nesting, `refs` the `$ref`s followed to get here.
    fn read(
        schema: &Value,
        root: &Value,
        depth: usize,
        refs: usize,
        budget: &mut usize,
    ) -> Defaults {
        let mut out = Defaults::default();
        if depth > MAX_DEPTH || refs > MAX_REFS || *budget == 0 {
            return out;
        }
        let Some(schema) = schema.as_object() else {
            return out;
        };
        // The schema's own properties first: a default there wins over one it refers to.
        for (name, property) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let target = property
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| resolve(root, r));
            let default = property
                .get("default")
                .or_else(|| target.and_then(|t| t.get("default")))
                .cloned();
            let nested = Self::read(property, root, depth + 1, refs, budget);
            let nested = (!nested.fields.is_empty()).then_some(nested);
            if (default.is_some() || nested.is_some()) && *budget > 0 {
                *budget -= 1;
                out.merge(Defaults {
                    fields: vec![Field {
                        name: name.clone(),
                        default,
                        nested,
                    }],
                });
            }
        }
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(root, r))
        {
            out.merge(Self::read(target, root, depth, refs + 1, budget));
        }
        for branch in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.merge(Self::read(branch, root, depth, refs, budget));
        }
        out
    }

    /// Adds `other`'s fields; a property both name keeps the first default and merges what
    /// is inside.
    fn merge(&mut self, other: Defaults) {
        for field in other.fields {
            match self.fields.iter_mut().find(|f| f.name == field.name) {
                None => self.fields.push(field),
                Some(mine) => {
                    if mine.default.is_none() {
                        mine.default = field.default;
                    }
                    match (&mut mine.nested, field.nested) {
                        (Some(a), Some(b)) => a.merge(b),
                        (slot @ None, b) => *slot = b,
                        _ => {}
                    }
                }
            }
        }
    }

    /// Fills what valid `arguments` leave out, keeping `schema` satisfied: a default whose
    /// value breaks the schema is taken out again. Returns the JSON Pointers of what it
    /// filled.
    pub fn apply(&self, arguments: &mut Value, schema: &CompiledSchema) -> Vec<String> {
        let filled = self.fill(arguments);
        if filled.is_empty() || schema.is_valid(arguments) {
            return filled;
        }
        let broken: Vec<String> = match schema.check(arguments) {
            Verdict::Invalid(violations) => violations.into_iter().map(|v| v.pointer).collect(),
            _ => Vec::new(),
        };
        let touches = |filled: &str, at: &str| {
            let under = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}/"));
            under(at, filled) || under(filled, at)
        };
        let (bad, mut good): (Vec<String>, Vec<String>) = filled
            .iter()
            .cloned()
            .partition(|p| broken.iter().any(|at| touches(p, at)));
        for p in &bad {
            remove(arguments, p);
        }
        good.retain(|g| !bad.iter().any(|b| g.starts_with(&format!("{b}/"))));
        if schema.is_valid(arguments) {
            return good;
        }
        // Back to what was sent: filling only added keys, so taking them out, the newest
        // first, restores it (a copy made up front would cost every call with defaults).
        for p in filled.iter().rev() {
            remove(arguments, p);
        }
        Vec::new()
    }

    /// Fills what `arguments` leaves out; returns the JSON Pointers of what it filled. Values
    /// that are there (`null` included) stay as they are; what is not an object is left to
    /// validation.
    pub fn fill(&self, arguments: &mut Value) -> Vec<String> {
        let mut filled = Vec::new();
        if let Value::Object(object) = arguments {
            self.fill_object(object, &mut String::new(), &mut filled);
        }
        filled
    }

    fn fill_object(
        &self,
        object: &mut Map<String, Value>,
        at: &mut String,
        filled: &mut Vec<String>,
    ) {
        for field in &self.fields {
            if !object.contains_key(&field.name)
                && let Some(default) = &field.default
            {
                object.insert(field.name.clone(), default.clone());
                let mut pointer = at.clone();
                push_token(&mut pointer, &field.name);
                filled.push(pointer);
            }
            if let (Some(nested), Some(Value::Object(inner))) =
                (&field.nested, object.get_mut(&field.name))
            {
                let len = at.len();
                push_token(at, &field.name);
                nested.fill_object(inner, at, filled);
                at.truncate(len);
            }
        }
    }
}

/// Appends `/name` to a JSON Pointer, `~` and `/` escaped; a property that is there costs
/// nothing, so the pointer is only written for what is filled or walked into.
fn push_token(pointer: &mut String, name: &str) {
    pointer.push('/');
    for c in name.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Takes the value at `pointer` out of `value`, if it is there.
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    if let Some(Value::Object(object)) = value.pointer_mut(parent) {
        // Shifted, not swapped: the keys after it keep their order.
        object.shift_remove(&key);
    }
}

/// The schema a local `$ref` (`#/...`, a JSON Pointer into the same document) names.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let pointer = percent_decode(pointer);
    root.pointer(&pointer)
}

/// `%25` → `%`, and the like: a `$ref` is a URI fragment.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    impl Defaults {
        fn size(&self) -> usize {
            self.fields
                .iter()
                .map(|f| 1 + f.nested.as_ref().map_or(0, Defaults::size))
                .sum()
        }
    }

    #[test]
    fn no_default_no_tree() {
        assert_eq!(
            Defaults::of(&json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            None
        );
        assert_eq!(Defaults::of(&json!(true)), None);
    }

    #[test]
    fn top_level_nested_ref_and_all_of_defaults_are_filled_and_recorded() {
        let schema = json!({
            "type": "object",
            "$defs": {"unit": {"type": "string", "default": "celsius"},
                      "paging": {"type": "object", "properties": {"size": {"type": "integer", "default": 20}}}},
            "properties": {
                "city": {"type": "string"},
                "unit": {"$ref": "#/$defs/unit"},
                "limit": {"type": "integer", "default": 10},
                "paging": {"$ref": "#/$defs/paging", "default": {}},
                "a/b": {"default": 1}
            },
            "allOf": [{"properties": {"verbose": {"type": "boolean", "default": false}}}]
        });
        let defaults = Defaults::of(&schema).unwrap();
        let mut args = json!({"city": "Paris", "limit": 3});
        let filled = defaults.fill(&mut args);
        assert_eq!(
            args,
            json!({"city": "Paris", "limit": 3, "unit": "celsius", "paging": {"size": 20}, "a/b": 1, "verbose": false})
        );
        assert_eq!(
            filled,
            ["/unit", "/paging", "/paging/size", "/a~1b", "/verbose"]
        );
        // What the model sent stays, null included; a non-object is left to validation.
        let mut given =
            json!({"unit": null, "paging": {"size": 5}, "limit": 1, "a/b": 2, "verbose": true});
        assert!(defaults.fill(&mut given).is_empty());
        assert_eq!(given["unit"], Value::Null);
        let mut odd = json!("not an object");
        assert!(defaults.fill(&mut odd).is_empty());
    }

    #[test]
    fn defaults_that_break_the_schema_are_taken_out_and_the_rest_keeps_its_order() {
        let resources = crate::schema::SchemaResources::default();
        // A default that breaks its own property is dropped; the others stay, in order.
        let schema = json!({"type": "object", "properties": {
            "a": {"default": 1}, "b": {"type": "integer", "default": "x"},
            "y": {"default": 2}, "z": {"default": 3}}});
        let compiled = CompiledSchema::compile(&schema, &resources).unwrap();
        let mut args = json!({"q": 0});
        let filled = Defaults::of(&schema).unwrap().apply(&mut args, &compiled);
        assert_eq!(filled, ["/a", "/y", "/z"]);
        let keys: Vec<&String> = args.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["q", "a", "y", "z"]);
        // Defaults that together break a rule no pointer ties to them: the arguments go
        // back to exactly what was sent.
        let schema = json!({"type": "object",
            "properties": {"c": {}, "a": {"default": 1}, "z": {"default": 3}},
            "dependentSchemas": {"a": {"properties": {"c": {"const": 1}}}}});
        let compiled = CompiledSchema::compile(&schema, &resources).unwrap();
        let sent = json!({"c": 2, "q": 0});
        let mut args = sent.clone();
        assert!(compiled.is_valid(&args));
        let filled = Defaults::of(&schema).unwrap().apply(&mut args, &compiled);
        assert!(filled.is_empty(), "{filled:?}");
        assert_eq!(args, sent);
        let keys: Vec<&String> = args.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["c", "q"]);
    }

    #[test]
    fn a_branching_self_reference_stays_small() {
        let schema = json!({
            "$defs": {"node": {"type": "object", "properties": {
                "label": {"default": "x"},
                "a": {"$ref": "#/$defs/node"}, "b": {"$ref": "#/$defs/node"}, "c": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"
        });
        let defaults = Defaults::of(&schema).unwrap();
        assert!(defaults.size() <= MAX_FIELDS, "{}", defaults.size());
        let mut args = json!({"a": {"b": {}}});
        defaults.fill(&mut args);
        assert_eq!(args["a"]["b"]["label"], "x");
    }

    #[test]
    fn a_schema_that_refers_to_itself_stops() {
        let schema = json!({
            "$defs": {"node": {"type": "object", "properties": {
                "label": {"default": "x"}, "child": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node"
        });
        let defaults = Defaults::of(&schema).unwrap();
        let mut args = json!({"child": {"child": {}}});
        defaults.fill(&mut args);
        assert_eq!(
            args,
            json!({"label": "x", "child": {"label": "x", "child": {"label": "x"}}})
        );
        // Past the last `$ref` followed, nothing more is filled (and nothing breaks).
        let mut deep = json!({"child": {"child": {"child": {"child": {"child": {}}}}}});
        defaults.fill(&mut deep);
        assert_eq!(deep["child"]["child"]["child"]["label"], "x");
        assert!(
            deep["child"]["child"]["child"]["child"]["child"]
                .get("label")
                .is_none()
        );
    }
}
