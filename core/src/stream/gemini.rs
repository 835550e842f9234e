//! Gemini streams (`:streamGenerateContent?alt=sse`): each event is a whole
//! `GenerateContentResponse` holding the next parts. Function calls arrive whole, so each is
//! started, given its arguments and completed at once; text parts are deltas.

use super::tool_input::ToolInputs;
use super::{SseEvent, StreamDecoder, StreamEvent, json};
use crate::providers::gemini::{finish_reason, read_parts, usage};
use crate::providers::{ModelTurn, Provider, ProviderError};
use serde_json::Value;

/// Decoder state for one Gemini stream.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    turn: ModelTurn,
    tools: ToolInputs,
}

impl StreamDecoder for GeminiDecoder {
    fn event(&mut self, sse: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let v = json(Provider::Gemini, &sse.data)?;
        if let Some(e) = v.get("error") {
            return Err(ProviderError::new(
                Provider::Gemini,
                format!(
                    "the stream reported an error: {}",
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                ),
            ));
        }
        if let Some(m) = v.get("modelVersion").and_then(Value::as_str) {
            self.turn.model = Some(m.to_string());
        }
        if let Some(u) = v.get("usageMetadata") {
            self.turn.usage = usage(u);
        }
        let Some(candidate) = v.pointer("/candidates/0") else {
            if let Some(reason) = v
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                self.turn.raw_finish_reason = reason.to_string();
            }
            return Ok(());
        };
        if let Some(parts) = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
        {
            // Read this chunk's parts on their own, then replay them as events.
            let mut chunk = ModelTurn::default();
            read_parts(parts, &mut chunk);
            if !chunk.content.is_empty() {
                self.turn.content.push_str(&chunk.content);
                out.push(StreamEvent::TextDelta {
                    delta: chunk.content,
                });
            }
            for call in chunk.tool_calls {
                let pos = self
                    .tools
                    .start(call.id, call.name, call.provider_data, out);
                self.tools.set_value(pos, call.arguments, out);
                self.tools.complete(pos, out);
            }
        }
        if let Some(r) = candidate.get("finishReason").and_then(Value::as_str) {
            self.turn.raw_finish_reason = r.to_string();
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> ModelTurn {
        let mut turn = std::mem::take(&mut self.turn);
        turn.tool_calls = self
            .tools
            .finish("the stream ended before the call did", out);
        turn.finish_reason = finish_reason(&turn.raw_finish_reason, !turn.tool_calls.is_empty());
        if turn.raw_finish_reason.starts_with("BLOCK") || turn.raw_finish_reason == "SAFETY" {
            turn.finish_reason = crate::providers::FinishReason::ContentFilter;
        }
        turn
    }
}
