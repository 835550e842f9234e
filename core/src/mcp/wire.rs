//! What crosses MCP: a tool spec as an MCP tool and back, an envelope as an MCP result and
//! back. The mapping is the one `docs/mcp.md` and `docs/error-codes.md` describe.

use crate::call::model_view;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::handler::{HandlerError, HandlerResult};
use crate::policy::{Effect, EffectClass, Policy, Risk};
use crate::spec::{ToolSpec, provider_safe_name};
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The MCP tool for a model-facing spec: its input schema (always `type: object`), its output
/// schema when it describes an object (MCP's `structuredContent` is one), and annotations
/// derived from the policy.
pub fn tool(spec: &ToolSpec) -> Tool {
    let mut input = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => Map::new(),
    };
    input
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let mut tool = Tool::new_with_raw(
        spec.name.clone(),
        Some(spec.description.clone().into()),
        Arc::new(input),
    )
    .with_annotations(annotations(&spec.policy));
    if let Some(Value::Object(output)) = &spec.output_schema
        && output.get("type") == Some(&json!("object"))
    {
        tool = tool.with_raw_output_schema(Arc::new(output.clone()));
    }
    tool
}

/// Hints from the policy: `read` tools are read-only; a tool whose crash may be retried
/// (pure or idempotent) is idempotent; `external` tools reach an open world; high-risk
/// writes are destructive.
pub fn annotations(policy: &Policy) -> ToolAnnotations {
    let read_only = policy.effect == Effect::Read;
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only && policy.risk == Risk::High)
        .idempotent(policy.resolved_effect_class() != EffectClass::AtMostOnce)
        .open_world(policy.effect == Effect::External)
}

/// The MCP result of a call's envelope. The envelope's JSON is the text content either way,
/// so the model reads code and message, with `model_output` (the tool's view of its data for
/// the model) in place of the data when the tool shapes it; data that is an object is also
/// `structuredContent`, whole, for the client's code; anything but `ok` is `isError` (a
/// `needs` envelope too: the tool produced no data). Takes the envelope whole, so its data
/// becomes `structuredContent` without a copy.
pub fn result(envelope: Envelope, model_output: Option<&Value>) -> CallToolResult {
    let text = match model_view(&envelope, model_output) {
        Some(shown) => serde_json::to_string(&shown),
        None => serde_json::to_string(&envelope),
    };
    let text = ContentBlock::text(text.unwrap_or_default());
    match envelope {
        Envelope::Ok(data) => {
            let mut out = CallToolResult::success(vec![text]);
            if data.is_object() {
                out.structured_content = Some(data);
            }
            out
        }
        _ => CallToolResult::error(vec![text]),
    }
}

/// The spec under which an MCP server's tool is registered: the name prefixed and made safe
/// for every provider, the server's schemas, and `policy`; for a trusted server the
/// annotations set the policy's effect, effect class and risk first.
pub fn spec_of(tool: &Tool, prefix: &str, mut policy: Policy, trusted: bool) -> ToolSpec {
    if trusted && let Some(hints) = &tool.annotations {
        if hints.read_only_hint == Some(true) {
            policy.effect = Effect::Read;
        } else if hints.open_world_hint == Some(true) {
            policy.effect = Effect::External;
        }
        if hints.idempotent_hint == Some(true) && policy.effect != Effect::Read {
            policy.effect_class = Some(EffectClass::Idempotent);
        }
        if hints.is_destructive() && policy.effect != Effect::Read {
            policy.risk = policy.risk.max(Risk::High);
        }
    }
    let mut name = provider_safe_name(&format!("{prefix}{}", tool.name));
    name.truncate(64);
    ToolSpec {
        name,
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        output_schema: tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone())),
        original_name: None,
        policy,
    }
}

/// What a server's result is to the engine: `isError` is the server's own failure
/// (`external_api_error`, its text as the message); otherwise `structuredContent` when given
/// (checked against the tool's output schema in step 10), else the text (parsed when it is
/// JSON, as servers often answer), else the content blocks as they came.
pub fn outcome(result: CallToolResult) -> HandlerResult {
    let text = || -> Option<String> {
        let texts: Option<Vec<&str>> = result
            .content
            .iter()
            .map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        texts.map(|t| t.join("\n"))
    };
    if result.is_error == Some(true) {
        let message = text()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "the MCP server reported an error".into());
        let error = ToolError::new(ErrorCode::ExternalApiError, message).retryable(false);
        return Err(HandlerError::Tool(error));
    }
    if let Some(structured) = result.structured_content.clone() {
        return Ok(structured);
    }
    match text() {
        Some(text) => Ok(serde_json::from_str(&text).unwrap_or(Value::String(text))),
        None => serde_json::to_value(&result.content).map_err(HandlerError::unexpected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_tool_is_read_only_and_an_external_high_risk_one_destructive() {
        let read = annotations(&Policy::default().effect(Effect::Read));
        assert_eq!(read.read_only_hint, Some(true));
        assert_eq!(read.destructive_hint, Some(false));
        assert_eq!(read.idempotent_hint, Some(true));
        let mut send = Policy::default().effect(Effect::External);
        send.risk = Risk::High;
        let send = annotations(&send);
        assert_eq!(send.read_only_hint, Some(false));
        assert_eq!(send.destructive_hint, Some(true));
        assert_eq!(send.idempotent_hint, Some(false));
        assert_eq!(send.open_world_hint, Some(true));
    }

    #[test]
    fn envelopes_map_to_results_and_back() {
        let ok = result(Envelope::Ok(json!({"sum": 3})), None);
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"sum": 3})));
        assert_eq!(outcome(ok).unwrap(), json!({"sum": 3}));
        let scalar = result(Envelope::Ok(json!(3)), None);
        assert_eq!(scalar.structured_content, None);
        assert_eq!(outcome(scalar).unwrap(), json!({"ok": true, "data": 3}));
        let prose = CallToolResult::success(vec![ContentBlock::text("it is 3")]);
        assert_eq!(outcome(prose).unwrap(), json!("it is 3"));
        let refused = result(
            Envelope::error(ErrorCode::ScopesMissing, "needs admin"),
            Some(&json!("a view is for data only")),
        );
        assert_eq!(refused.is_error, Some(true));
        let text = &refused.content[0].as_text().unwrap().text;
        assert!(
            !text.contains("a view"),
            "an error is shown as it is: {text}"
        );
        let Err(HandlerError::Tool(e)) = outcome(refused) else {
            panic!("an isError result is the server's failure")
        };
        assert_eq!(e.code, ErrorCode::ExternalApiError);
        assert!(e.message.contains("scopes_missing"), "{}", e.message);
        assert_eq!(
            result(Envelope::Needs(vec!["when".into()]), None).is_error,
            Some(true)
        );
    }

    #[test]
    fn the_text_is_the_models_view_and_structured_content_the_data() {
        let data = json!({"rows": [1, 2, 3]});
        let shaped = result(Envelope::Ok(data.clone()), Some(&json!({"count": 3})));
        assert_eq!(shaped.structured_content, Some(data));
        let text = &shaped.content[0].as_text().unwrap().text;
        assert_eq!(text, r#"{"ok":true,"data":{"count":3}}"#);
    }

    #[test]
    fn a_servers_tool_gets_a_safe_prefixed_name_and_trusted_hints() {
        let raw: Tool = serde_json::from_value(json!({
            "name": "read.file", "description": "Reads.", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        let spec = spec_of(&raw, "fs_", Policy::default(), true);
        assert_eq!(spec.name, "fs_read_file");
        assert_eq!(spec.policy.effect, Effect::Read);
        assert_eq!(
            spec_of(&raw, "fs_", Policy::default(), false).policy.effect,
            Effect::Write
        );
    }
}
