//! Tool calling for any model that can emit JSON: no native tool calling needed.
//!
//! The model is asked for one JSON object (Gemini's `responseSchema`, OpenAI's
//! `response_format`, or just the prompt):
//!
//! ```json
//! {"toolCalls": [{"id": "m", "tool": "search_memories", "params": {"query": "..."}},
//!                {"id": "k", "tool": "retrieve_nvc_knowledge",
//!                 "params": {"query": {"$from": "x", "pointer": "/needs/0"}}, "dependsOn": ["x"]}],
//!  "reasoning": "why these tools"}
//! ```
//!
//! [`JsonProtocol::response_schema`] and [`JsonProtocol::prompt`] describe the tools;
//! [`JsonProtocol::parse`] turns the model's text (repaired if need be) into a batch whose
//! `dependsOn` and `$from` references order the calls; [`format_results`] writes every result
//! back as one message.

use crate::arguments::{Limits, parse_text};
use crate::call::{Call, CallResult};
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// How the response schema names tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaShape {
    /// One `anyOf` branch per tool, each tying its name to its own parameter schema: the
    /// model cannot send one tool's parameters to another.
    #[default]
    PerTool,
    /// The flat shape: `tool` is an enum of every name, `params` any object; the prompt
    /// carries the per-tool parameters. For models whose structured output has no `anyOf`.
    Flat,
}

/// Options of the protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JsonProtocol {
    /// How the schema names tools.
    pub shape: SchemaShape,
    /// Offer `id` and `dependsOn` so calls can wait for each other.
    pub dependencies: bool,
    /// Ask for a short `reasoning` beside the calls.
    pub reasoning: bool,
    /// Most calls the model should make in one answer (said in the prompt and the schema).
    pub max_calls: Option<usize>,
}

impl Default for JsonProtocol {
    fn default() -> Self {
        JsonProtocol {
            shape: SchemaShape::PerTool,
            dependencies: true,
            reasoning: true,
            max_calls: None,
        }
    }
}

/// What the model decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonPlan {
    /// The calls, in the model's order, with their dependencies.
    pub calls: Vec<Call>,
    /// The model's reasoning, when it gave one.
    pub reasoning: Option<String>,
    /// Whether the JSON had to be repaired.
    pub repaired: bool,
}

impl JsonProtocol {
    /// The JSON Schema of the model's answer.
    pub fn response_schema(&self, specs: &[ToolSpec]) -> Value {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let item = |tool: Value, params: Value| {
            let mut props = Map::new();
            if self.dependencies {
                props.insert(
                    "id".into(),
                    json!({"type": "string", "description": "A short id other calls can name in dependsOn and $from."}),
                );
            }
            props.insert("tool".into(), tool);
            props.insert("params".into(), params);
            if self.dependencies {
                props.insert(
                    "dependsOn".into(),
                    json!({"type": "array", "items": {"type": "string"}, "description": "Ids of calls that must finish first."}),
                );
            }
            json!({"type": "object", "properties": props, "required": ["tool", "params"]})
        };
        let items = match self.shape {
            SchemaShape::PerTool => json!({
                "anyOf": specs
                    .iter()
                    .map(|s| item(json!({"type": "string", "enum": [s.name]}), s.input_schema.clone()))
                    .collect::<Vec<_>>()
            }),
            SchemaShape::Flat => item(
                json!({"type": "string", "enum": names}),
                json!({"type": "object", "description": "The tool's parameters, as its schema in the instructions says."}),
            ),
        };
        let mut calls = json!({"type": "array", "items": items});
        if let Some(max) = self.max_calls {
            calls["maxItems"] = json!(max);
        }
        let mut props = Map::new();
        props.insert("toolCalls".into(), calls);
        if self.reasoning {
            props.insert(
                "reasoning".into(),
                json!({"type": "string", "description": "Brief explanation of why these tools are needed."}),
            );
        }
        json!({"type": "object", "properties": props, "required": ["toolCalls"]})
    }

    /// Instructions describing the tools and the answer format, for the system prompt.
    pub fn prompt(&self, specs: &[ToolSpec]) -> String {
        let mut p = String::from(
            "You can call tools. Answer with one JSON object and nothing else, in this shape:\n",
        );
        p.push_str(if self.dependencies {
            "{\"toolCalls\": [{\"id\": \"a\", \"tool\": \"<tool name>\", \"params\": {...}, \"dependsOn\": []}]"
        } else {
            "{\"toolCalls\": [{\"tool\": \"<tool name>\", \"params\": {...}}]"
        });
        p.push_str(if self.reasoning {
            ", \"reasoning\": \"<one sentence>\"}\n"
        } else {
            "}\n"
        });
        p.push_str(
            "Call every tool the message needs; calls without dependencies run in parallel. ",
        );
        p.push_str("Use an empty toolCalls list when no tool is needed.\n");
        if self.dependencies {
            p.push_str(
                "A call that needs another call's result lists that call's id in dependsOn; to put part of that \
                 result in params, write {\"$from\": \"<id>\", \"pointer\": \"/json/pointer/into/its/data\"}.\n",
            );
        }
        if let Some(max) = self.max_calls {
            p.push_str(&format!("Make at most {max} calls.\n"));
        }
        p.push_str("\nTools:\n");
        for s in specs {
            p.push_str(&format!(
                "- {}: {}\n  params schema: {}\n",
                s.name,
                s.description,
                serde_json::to_string(&s.input_schema).unwrap_or_default()
            ));
        }
        p
    }

    /// Parses the model's answer into a batch. The text may be fenced or slightly broken JSON
    /// (it is repaired); a bare array is taken as the list of calls.
    pub fn parse(&self, text: &str) -> Result<JsonPlan, ToolError> {
        let body = text.trim();
        let body = body
            .strip_prefix("```json")
            .or_else(|| body.strip_prefix("```"))
            .unwrap_or(body)
            .trim_start();
        // Prose is not a plan, however leniently JSON repair would read it.
        if !body.starts_with('{') && !body.starts_with('[') {
            return Err(ToolError::new(
                ErrorCode::MalformedArguments,
                "the answer is not a JSON object with a `toolCalls` array",
            ));
        }
        let limits = Limits::default();
        let parsed = parse_text(text, &limits)?;
        let (list, reasoning) = match &parsed.value {
            Value::Array(items) => (items.clone(), None),
            Value::Object(obj) => {
                let list = ["toolCalls", "tool_calls", "calls"]
                    .iter()
                    .find_map(|k| obj.get(*k))
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                let Value::Array(list) = list else {
                    return Err(ToolError::new(
                        ErrorCode::MalformedArguments,
                        "`toolCalls` must be an array of {tool, params} objects",
                    ));
                };
                let reasoning = obj
                    .get("reasoning")
                    .and_then(Value::as_str)
                    .map(String::from);
                (list, reasoning)
            }
            _ => {
                return Err(ToolError::new(
                    ErrorCode::MalformedArguments,
                    "the answer must be a JSON object with a `toolCalls` array",
                ));
            }
        };
        let mut calls = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            if !item.is_object() {
                return Err(ToolError::new(
                    ErrorCode::MalformedArguments,
                    format!("tool call {i} must be an object with `tool` and `params`"),
                ));
            }
            let field = |keys: &[&str]| keys.iter().find_map(|k| item.get(*k)).cloned();
            let id = field(&["id"])
                .and_then(|v| match v {
                    Value::String(s) => Some(s),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("call_{i}"));
            let tool = field(&["tool", "name"])
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let params =
                field(&["params", "parameters", "arguments", "args"]).unwrap_or(Value::Null);
            let depends_on = field(&["dependsOn", "depends_on"])
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|d| match d {
                    Value::String(s) => Some(s),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect();
            let mut call = Call::new(id, tool, params);
            call.depends_on = depends_on;
            calls.push(call);
        }
        Ok(JsonPlan {
            calls,
            reasoning,
            repaired: parsed.repaired,
        })
    }
}

/// Every result of a batch as one message for the model: a short preface and a JSON array
/// of `{id, tool, result}`, `result` being the envelope.
pub fn format_results(results: &[CallResult]) -> String {
    let list: Vec<Value> = results
        .iter()
        .map(|r| json!({"id": r.call_id, "tool": r.tool, "result": r.model_envelope().to_value()}))
        .collect();
    format!(
        "Tool results, in call order. Each result is {{\"ok\": true, \"data\": ...}}, or {{\"ok\": false}} with \
         \"needs\" (fields to ask the user for) or \"error\":\n{}",
        serde_json::to_string(&list).unwrap_or_default()
    )
}
