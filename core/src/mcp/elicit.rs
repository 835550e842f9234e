//! Asking the user through the MCP client (elicitation): the fields a call `needs`, and the
//! decision on a call that waits for approval. Only when the client declared it can, and
//! only in form mode; otherwise the envelope goes back as the result and the model acts on it.

use crate::call::ApprovalInfo;
use crate::spec::ToolSpec;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// What the user said about a call waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run it as asked.
    Approve,
    /// Do not run it; the model sees the message.
    Reject(Option<String>),
    /// The user dismissed the question (or the client could not ask): the call stays pending.
    Dismissed,
}

/// Whether the client can be asked (it declared form elicitation).
pub fn supported(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// Asks the user whether `tool` may run with `arguments`.
pub async fn approval(
    peer: &Peer<RoleServer>,
    tool: &str,
    arguments: Option<&Value>,
    info: &ApprovalInfo,
    cancel: &CancellationToken,
) -> Verdict {
    let shown = arguments
        .map(Value::to_string)
        .unwrap_or_else(|| "{}".into());
    let risk = serde_json::to_value(info.risk).unwrap_or_default();
    let risk = risk.as_str().unwrap_or("unknown");
    let message = format!("Allow {tool} to run with {shown}? ({risk} risk)");
    let schema = json!({
        "type": "object",
        "properties": {
            "approve": {"type": "boolean", "title": "Approve", "description": "Run this call as shown", "default": false},
            "message": {"type": "string", "title": "Message", "description": "Why not (shown to the model)"}
        },
        "required": ["approve"]
    });
    let Some((action, content)) = ask(peer, message, schema, cancel).await else {
        return Verdict::Dismissed;
    };
    let message = content
        .as_ref()
        .and_then(|c| c.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    match action {
        ElicitationAction::Accept => {
            let approved = content.as_ref().and_then(|c| c.get("approve")) == Some(&json!(true));
            if approved {
                Verdict::Approve
            } else {
                Verdict::Reject(message)
            }
        }
        ElicitationAction::Decline => Verdict::Reject(message),
        _ => Verdict::Dismissed,
    }
}

/// Asks the user for the `fields` a call of `spec` needs; `None` when a field cannot be asked
/// in a form (not a top-level property of a primitive type) or the user did not answer.
pub async fn fields(
    peer: &Peer<RoleServer>,
    spec: &ToolSpec,
    fields: &[String],
    cancel: &CancellationToken,
) -> Option<Map<String, Value>> {
    let properties = spec.input_schema.get("properties")?.as_object()?;
    let mut asked = Map::new();
    for field in fields {
        asked.insert(field.clone(), form_field(properties.get(field)?)?);
    }
    let schema = json!({"type": "object", "properties": asked, "required": fields});
    let message = format!("{} needs: {}", spec.name, fields.join(", "));
    match ask(peer, message, schema, cancel).await? {
        // Only what was asked, and all of it: anything else the client sent is dropped.
        (ElicitationAction::Accept, Some(Value::Object(mut values))) => fields
            .iter()
            .map(|f| Some((f.clone(), values.remove(f)?)))
            .collect(),
        _ => None,
    }
}

/// A property as an elicitation form field: primitive types only, with the keywords forms
/// understand.
fn form_field(property: &Value) -> Option<Value> {
    let property = property.as_object()?;
    let kind = property.get("type")?.as_str()?;
    if !matches!(kind, "string" | "number" | "integer" | "boolean") {
        return None;
    }
    const KEPT: [&str; 10] = [
        "type",
        "title",
        "description",
        "enum",
        "format",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "default",
    ];
    Some(Value::Object(
        property
            .iter()
            .filter(|(k, _)| KEPT.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    ))
}

async fn ask(
    peer: &Peer<RoleServer>,
    message: String,
    schema: Value,
    cancel: &CancellationToken,
) -> Option<(ElicitationAction, Option<Value>)> {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form", "message": message, "requestedSchema": schema
    }))
    .ok()?;
    let answer = tokio::select! {
        answer = peer.create_elicitation(params) => answer.ok()?,
        _ = cancel.cancelled() => return None,
    };
    Some((answer.action, answer.content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_primitive_fields_can_be_asked_in_a_form() {
        let f = form_field(
            &json!({"type": "string", "format": "date", "pattern": "x", "description": "d"}),
        );
        assert_eq!(
            f,
            Some(json!({"type": "string", "format": "date", "description": "d"}))
        );
        assert_eq!(form_field(&json!({"type": "object"})), None);
        assert_eq!(form_field(&json!({"anyOf": []})), None);
    }

    #[test]
    fn the_forms_are_valid_elicitation_requests() {
        let schema = json!({"type": "object", "properties": {
            "approve": {"type": "boolean", "default": false}, "message": {"type": "string"}
        }, "required": ["approve"]});
        let parsed: Result<ElicitRequestParams, _> = serde_json::from_value(
            json!({"mode": "form", "message": "m", "requestedSchema": schema}),
        );
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
