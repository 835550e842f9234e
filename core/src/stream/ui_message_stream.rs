//! tooljig's events in the Vercel AI SDK UI message stream protocol (v1), so an AI SDK front
//! end (`useChat`) renders a tooljig run as it happens.
//!
//! The protocol is server-sent events, one JSON chunk per `data:` line, ending with
//! `data: [DONE]`; responses carry [`HEADERS`]. Text is sent as `text-start` /
//! `text-delta` / `text-end` parts with an id, which this writer opens and closes around
//! tool parts and step boundaries. Mapping:
//!
//! | tooljig event | UI chunk |
//! |---|---|
//! | `Start` | `start` (`messageId`) |
//! | `StepStart` / `StepFinish` | `start-step` / `finish-step` |
//! | `TextDelta` | `text-start` (once) + `text-delta` |
//! | `ReasoningDelta` | `reasoning-start` (once) + `reasoning-delta` |
//! | `ToolInputStart` / `ToolInputDelta` / `ToolInputAvailable` | `tool-input-start` / `tool-input-delta` / `tool-input-available` |
//! | `ToolInputIncomplete` | `tool-input-error` |
//! | `ToolOutputAvailable` | `tool-output-available` (the envelope, `needs` included) |
//! | `ToolProgress` with an output | `tool-output-available` with `preliminary: true` |
//! | `ToolProgress` with a fraction or message | `data-tooljig-progress` (transient: `onData` sees it) |
//! | `ToolOutputError` | `tool-output-error` (`errorText`: `code: message`) |
//! | `ToolApprovalRequest` | `tool-approval-request` |
//! | `ToolOutputPending` | nothing: the part stays `input-available` for the client to run |
//! | `Finish` | `finish` (`finishReason`) |
//! | `Error` | `data-tooljig-error` (transient: `onData` sees it; the run goes on) |

use super::StreamEvent;
use serde_json::{Value, json};

/// Response headers of a UI message stream.
pub const HEADERS: &[(&str, &str)] = &[
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    ("x-vercel-ai-ui-message-stream", "v1"),
    ("x-accel-buffering", "no"),
];

/// Writes one assistant message's UI stream.
#[derive(Debug, Clone)]
pub struct UiMessageStream {
    message_id: String,
    text: Option<String>,
    reasoning: Option<String>,
    parts: u32,
    tools_seen: std::collections::HashSet<String>,
}

impl UiMessageStream {
    /// A writer for the assistant message `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        UiMessageStream {
            message_id: message_id.into(),
            text: None,
            reasoning: None,
            parts: 0,
            tools_seen: Default::default(),
        }
    }

    fn close_open(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.parts += 1;
        format!("{prefix}-{}-{}", self.message_id, self.parts)
    }

    /// The UI chunks for one event.
    pub fn chunks(&mut self, event: &StreamEvent) -> Vec<Value> {
        let mut out = Vec::new();
        match event {
            StreamEvent::Start { .. } => {
                out.push(json!({"type": "start", "messageId": self.message_id}));
            }
            StreamEvent::StepStart { .. } => {
                self.close_open(&mut out);
                out.push(json!({"type": "start-step"}));
            }
            StreamEvent::TextDelta { delta } => {
                if let Some(id) = self.reasoning.take() {
                    out.push(json!({"type": "reasoning-end", "id": id}));
                }
                let id = match &self.text {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.next_id("text");
                        out.push(json!({"type": "text-start", "id": id}));
                        self.text = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "text-delta", "id": id, "delta": delta}));
            }
            StreamEvent::ReasoningDelta { delta } => {
                if let Some(id) = self.text.take() {
                    out.push(json!({"type": "text-end", "id": id}));
                }
                let id = match &self.reasoning {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.next_id("reasoning");
                        out.push(json!({"type": "reasoning-start", "id": id}));
                        self.reasoning = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "reasoning-delta", "id": id, "delta": delta}));
            }
            StreamEvent::ToolInputStart { call_id, tool } => {
                self.close_open(&mut out);
                self.tools_seen.insert(call_id.clone());
                out.push(
                    json!({"type": "tool-input-start", "toolCallId": call_id, "toolName": tool}),
                );
            }
            StreamEvent::ToolInputDelta { call_id, delta, .. } => {
                out.push(json!({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta}));
            }
            StreamEvent::ToolInputAvailable {
                call_id,
                tool,
                input,
            } => {
                self.close_open(&mut out);
                self.tools_seen.insert(call_id.clone());
                out.push(json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": tool, "input": input}));
            }
            StreamEvent::ToolInputIncomplete {
                call_id,
                tool,
                text,
                partial,
                reason,
            } => {
                self.close_open(&mut out);
                self.tools_seen.insert(call_id.clone());
                let input = partial
                    .clone()
                    .unwrap_or_else(|| Value::String(text.clone()));
                out.push(json!({
                    "type": "tool-input-error",
                    "toolCallId": call_id,
                    "toolName": tool,
                    "input": input,
                    "errorText": format!("incomplete_arguments: {reason}"),
                }));
            }
            StreamEvent::ToolOutputAvailable {
                call_id,
                tool,
                output,
            } => {
                self.close_open(&mut out);
                self.ensure_tool(call_id, tool, &mut out);
                out.push(json!({"type": "tool-output-available", "toolCallId": call_id, "output": output}));
            }
            StreamEvent::ToolProgress {
                call_id,
                tool,
                fraction,
                message,
                output,
            } => {
                self.close_open(&mut out);
                self.ensure_tool(call_id, tool, &mut out);
                if let Some(output) = output {
                    out.push(json!({"type": "tool-output-available", "toolCallId": call_id, "output": output, "preliminary": true}));
                }
                if fraction.is_some() || message.is_some() {
                    out.push(json!({
                        "type": "data-tooljig-progress",
                        "id": format!("progress-{call_id}"),
                        "data": {"toolCallId": call_id, "fraction": fraction, "message": message},
                        "transient": true,
                    }));
                }
            }
            StreamEvent::ToolOutputError {
                call_id,
                tool,
                error,
            } => {
                self.close_open(&mut out);
                self.ensure_tool(call_id, tool, &mut out);
                out.push(json!({
                    "type": "tool-output-error",
                    "toolCallId": call_id,
                    "errorText": format!("{}: {}", error.code, error.message),
                }));
            }
            StreamEvent::ToolApprovalRequest {
                call_id,
                tool,
                approval_id,
            } => {
                self.close_open(&mut out);
                self.ensure_tool(call_id, tool, &mut out);
                out.push(json!({"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call_id}));
            }
            StreamEvent::ToolOutputPending {
                call_id,
                tool,
                input,
            } => {
                if !self.tools_seen.contains(call_id) {
                    self.tools_seen.insert(call_id.clone());
                    out.push(json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": tool, "input": input}));
                }
            }
            StreamEvent::StepFinish { .. } => {
                self.close_open(&mut out);
                out.push(json!({"type": "finish-step"}));
            }
            StreamEvent::Finish { finish_reason } => {
                self.close_open(&mut out);
                out.push(json!({"type": "finish", "finishReason": finish_reason.ai_sdk()}));
            }
            StreamEvent::Error { message } => {
                // Not `error`: that chunk fails `useChat`'s request, while a tooljig run goes
                // on after a model error (a fallback, a summary answer). Apps see it in onData.
                out.push(json!({"type": "data-tooljig-error", "data": {"message": message}, "transient": true}));
            }
        }
        out
    }

    /// A result for a call whose input was never shown needs its part first, or the UI has
    /// nothing to attach it to.
    fn ensure_tool(&mut self, call_id: &str, tool: &str, out: &mut Vec<Value>) {
        if self.tools_seen.insert(call_id.to_string()) {
            out.push(json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": tool, "input": {}}));
        }
    }

    /// The SSE frames for one event.
    pub fn encode(&mut self, event: &StreamEvent) -> String {
        self.chunks(event).iter().map(frame).collect()
    }

    /// Closes what is open and ends the stream with `data: [DONE]`.
    pub fn done(&mut self) -> String {
        let mut out = Vec::new();
        self.close_open(&mut out);
        let mut s: String = out.iter().map(frame).collect();
        s.push_str("data: [DONE]\n\n");
        s
    }
}

/// One chunk as an SSE frame.
pub fn frame(chunk: &Value) -> String {
    format!(
        "data: {}\n\n",
        serde_json::to_string(chunk).unwrap_or_default()
    )
}

/// A whole run's events as one UI message stream body.
pub fn to_ui_message_stream(message_id: &str, events: &[StreamEvent]) -> String {
    let mut w = UiMessageStream::new(message_id);
    let mut s: String = events.iter().map(|e| w.encode(e)).collect();
    s.push_str(&w.done());
    s
}
