//! OpenAPI 3.0 and 3.1 documents into tools whose handler calls the described HTTP endpoint.
//!
//! Each operation becomes one tool: its name from `operationId` (else method and path), its
//! description from `summary` and `description`, and its input schema an object of its path,
//! query and header parameters plus `body` (a JSON request body). Component schemas a tool
//! uses go to its `$defs`; 3.0's dialect (`nullable`, boolean `exclusiveMinimum`) is rewritten
//! into the JSON Schema the engine compiles. Operations that cannot be carried (a form or
//! multipart body, a cookie parameter that is required, a schema that does not compile) are
//! skipped and reported, never half-imported.
//!
//! Credentials never come from the model: the handler (`http.rs`) takes them from the
//! caller's attributes ([`Credentials`]), and a header parameter named like the credential
//! header, or `Authorization`, is not an argument.

mod http;
mod schema;

pub use http::Credentials;

use super::{ImportError, make_names_unique, spec_for};
use crate::policy::{Effect, Policy};
use crate::tool::Tool;
use http::{Endpoint, Location, Param};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How [`import_openapi`] turns a document into tools.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenApiOptions {
    /// Where the API lives; unset, the document's first server (its variables at their
    /// defaults). Needed when that is relative or absent.
    pub base_url: Option<String>,
    /// Put before every tool's name (`github_`).
    pub prefix: String,
    /// Only these operations (by `operationId`, or by tool name before the prefix).
    pub include: Option<Vec<String>>,
    /// Where the handler finds the caller's credentials.
    pub credentials: Option<Credentials>,
    /// Headers every request carries (a `User-Agent`, an API version), set by the app.
    pub headers: BTreeMap<String, String>,
    /// The policy of every tool; unset, the default with `effect` from the method (`read`
    /// for GET and HEAD, `external` otherwise).
    pub policy: Option<Policy>,
}

/// An operation that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// `METHOD /path`.
    pub operation: String,
    /// Why.
    pub reason: String,
}

/// What [`import_openapi`] made of a document.
#[derive(Debug, Default)]
pub struct OpenApiTools {
    /// One tool per operation imported, in document order, with its `METHOD /path`.
    pub tools: Vec<(String, Tool)>,
    /// The operations left out.
    pub skipped: Vec<Skipped>,
}

/// What [`Engine::register_openapi`](crate::Engine::register_openapi) registered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenApiReport {
    /// The tools' names, in document order.
    pub registered: Vec<String>,
    /// The operations left out: not carried, or refused at registration.
    pub skipped: Vec<Skipped>,
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// Reads an OpenAPI 3.0 or 3.1 document (as JSON) into tools; see the module docs.
pub fn import_openapi(doc: &Value, options: &OpenApiOptions) -> Result<OpenApiTools, ImportError> {
    let version = doc.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !version.starts_with("3.") {
        return Err(ImportError::at(
            "/openapi",
            format!(
                "expected an OpenAPI 3.0 or 3.1 document, found {}; convert a Swagger 2.0 one first",
                if version.is_empty() {
                    "no `openapi` version"
                } else {
                    version
                }
            ),
        ));
    }
    let base = http::base_url(doc, options.base_url.as_deref())?;
    let client = http::client()?;
    // 3.1 allows a document of webhooks or components alone: nothing to call.
    let empty = Map::new();
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut out = OpenApiTools::default();
    let mut specs = Vec::new();
    let mut endpoints = Vec::new();
    for (path, item) in paths {
        let item = resolve(doc, item);
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let operation = format!("{} {path}", method.to_uppercase());
            let id = op
                .get("operationId")
                .and_then(Value::as_str)
                .map(String::from);
            let name = id.clone().unwrap_or_else(|| fallback_name(method, path));
            let wanted = options
                .include
                .as_ref()
                .is_none_or(|only| only.iter().any(|w| Some(w) == id.as_ref() || *w == name));
            if !wanted {
                continue;
            }
            match operation_tool(doc, item, op, method, options) {
                Ok((input, params, body)) => {
                    let mut spec =
                        spec_for(format!("{}{name}", options.prefix), describe(op), input);
                    spec.policy = options.policy.clone().unwrap_or_else(|| Policy {
                        effect: if matches!(method, "get" | "head") {
                            Effect::Read
                        } else {
                            Effect::External
                        },
                        ..Policy::default()
                    });
                    specs.push(spec);
                    endpoints.push((
                        operation,
                        Endpoint {
                            method: method.to_uppercase(),
                            path: path.clone(),
                            params,
                            body,
                            base: base.clone(),
                            credentials: options.credentials.clone(),
                            headers: options.headers.clone(),
                            client: client.clone(),
                        },
                    ));
                }
                Err(reason) => out.skipped.push(Skipped { operation, reason }),
            }
        }
    }
    make_names_unique(&mut specs);
    out.tools = specs
        .into_iter()
        .zip(endpoints)
        .map(|(spec, (operation, endpoint))| (operation, Tool::new(spec, Arc::new(endpoint))))
        .collect();
    Ok(out)
}

/// The input schema of one operation, its parameters, and whether it takes a JSON body.
fn operation_tool(
    doc: &Value,
    item: &Value,
    op: &Value,
    method: &str,
    options: &OpenApiOptions,
) -> Result<(Value, Vec<Param>, bool), String> {
    let credential = options
        .credentials
        .as_ref()
        .map(|c| c.header.to_ascii_lowercase());
    let mut defs = BTreeMap::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params: Vec<Param> = Vec::new();
    // Operation parameters override the path item's of the same name and location.
    let mut declared: Vec<&Value> = Vec::new();
    for list in [item.get("parameters"), op.get("parameters")] {
        for p in list.and_then(Value::as_array).into_iter().flatten() {
            let p = resolve(doc, p);
            let key = (p.get("name"), p.get("in"));
            declared.retain(|q| (q.get("name"), q.get("in")) != key);
            declared.push(p);
        }
    }
    for p in declared {
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a parameter has no name")?;
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => {
                let lower = name.to_ascii_lowercase();
                if lower == "authorization" || Some(&lower) == credential.as_ref() {
                    continue; // from the caller, never from the model
                }
                Location::Header
            }
            Some("cookie") if p.get("required") == Some(&Value::Bool(true)) => {
                return Err(format!(
                    "the required cookie parameter {name:?} is not supported"
                ));
            }
            Some("cookie") => continue,
            other => return Err(format!("parameter {name:?} is in {other:?}")),
        };
        let raw = p
            .get("schema")
            .or_else(|| p.pointer("/content/application~1json/schema"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut s = schema::convert(doc, &raw, &mut defs)?;
        if let (Some(text), Value::Object(o)) = (p.get("description"), &mut s) {
            o.entry("description").or_insert_with(|| text.clone());
        }
        let mut arg = name.to_string();
        if properties.contains_key(&arg) {
            arg = format!("{name}_{}", location.as_str());
        }
        if location == Location::Path || p.get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(arg.clone()));
        }
        properties.insert(arg.clone(), s);
        params.push(Param {
            arg,
            name: name.to_string(),
            location,
        });
    }
    let mut body = false;
    if let Some(rb) = op.get("requestBody") {
        let rb = resolve(doc, rb);
        let content = rb.get("content").and_then(Value::as_object);
        let json_schema = content.and_then(|c| {
            c.iter()
                .find(|(media, _)| is_json(media))
                .map(|(_, m)| m.get("schema").cloned().unwrap_or_else(|| json!({})))
        });
        match json_schema {
            Some(raw) => {
                if properties.contains_key("body") {
                    return Err("a parameter is named `body`, which the request body takes".into());
                }
                properties.insert("body".into(), schema::convert(doc, &raw, &mut defs)?);
                if rb.get("required") == Some(&Value::Bool(true)) {
                    required.push(json!("body"));
                }
                body = true;
            }
            None if rb.get("required") == Some(&Value::Bool(true)) => {
                let media: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
                return Err(format!(
                    "{} takes a {media:?} body; only JSON bodies are supported",
                    method.to_uppercase()
                ));
            }
            None => {}
        }
    }
    let mut input =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        input["required"] = Value::Array(required);
    }
    if !defs.is_empty() {
        input["$defs"] = Value::Object(defs.into_iter().collect());
    }
    Ok((input, params, body))
}

/// `value`, or what its `$ref` (to a place in this document) points at.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    let mut at = value;
    // A short chain at most: references to references are legal, cycles are not.
    for _ in 0..8 {
        match at.get("$ref").and_then(Value::as_str) {
            Some(r) => match r.strip_prefix('#').and_then(|p| doc.pointer(p)) {
                Some(found) => at = found,
                None => return at,
            },
            None => return at,
        }
    }
    at
}

fn is_json(media: &str) -> bool {
    let media = media.split(';').next().unwrap_or("").trim();
    media == "application/json" || media.ends_with("+json") || media == "*/*"
}

fn describe(op: &Value) -> String {
    let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or("").trim();
    let joined = match (text("summary"), text("description")) {
        ("", d) => d.to_string(),
        (s, "") => s.to_string(),
        (s, d) if d.starts_with(s) => d.to_string(),
        (s, d) => format!("{s}. {d}"),
    };
    // Descriptions of real APIs run to pages; the model needs the gist.
    match joined.char_indices().nth(1024) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// A name for an operation without `operationId`: `get_pets_petId`.
fn fallback_name(method: &str, path: &str) -> String {
    let words: Vec<&str> = path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!("{method}_{}", words.join("_"))
}
