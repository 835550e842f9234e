//! One model call inside a run: the request built from the conversation, the answer's
//! events forwarded (or held back, act-first), and the events a model that does not stream
//! never sent filled in, so every consumer sees the same shape of stream.

use super::context::Ctx;
use super::model::{ModelClient, ModelError, ModelErrorKind};
use super::options::AgentOptions;
use crate::providers::{Message, ModelRequest, ModelTurn, ToolChoice};
use crate::spec::ToolSpec;
use crate::stream::StreamEvent;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::unbounded_channel;

/// What one call of a model gave.
pub(crate) struct Answer {
    pub turn: ModelTurn,
    /// Call ids whose input events the model streamed itself.
    pub seen: HashSet<String>,
    /// Text held back (act-first) while it was unknown whether tools would follow.
    pub held: Vec<String>,
    /// Whether any text was streamed or held.
    pub streamed_text: bool,
}

/// How the call is made.
pub(crate) struct CallSpec {
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    pub system: Option<String>,
    pub note: Option<String>,
    pub response_schema: Option<serde_json::Value>,
    /// Hold text back until it is known whether the answer has tool calls.
    pub hold_text: bool,
}

/// Calls `model` with the conversation in `ctx` and forwards its events.
pub(crate) async fn call_model(
    ctx: &mut Ctx<'_>,
    model: &Arc<dyn ModelClient>,
    spec: CallSpec,
    options: &AgentOptions,
) -> Result<Answer, ModelError> {
    let mut messages = Vec::with_capacity(ctx.state.messages.len() + 2);
    if let Some(system) = spec.system {
        messages.push(Message::system(system));
    }
    messages.extend(ctx.state.messages.iter().cloned());
    if let Some(note) = spec.note {
        messages.push(Message::system(note));
    }
    let request = ModelRequest {
        model: String::new(),
        messages,
        tools: spec.tools,
        tool_choice: spec.tool_choice,
        max_tokens: options.max_tokens,
        temperature: options.temperature,
        stream: ctx.sink.is_some(),
        response_schema: spec.response_schema,
    };
    let (tx, mut rx) = unbounded_channel::<StreamEvent>();
    let started = Instant::now();
    let remaining = ctx.remaining();
    let call = async move {
        let fut = model.respond(request, Some(tx));
        match remaining {
            Some(left) => tokio::time::timeout(left, fut).await.unwrap_or_else(|_| {
                Err(ModelError::new(
                    ModelErrorKind::Timeout,
                    "the run's deadline passed while the model was answering",
                ))
            }),
            None => fut.await,
        }
    };
    let sink = ctx.sink.clone();
    let hold = spec.hold_text;
    let forward = async move {
        let mut seen = HashSet::new();
        let mut held = Vec::new();
        let mut streamed_text = false;
        while let Some(e) = rx.recv().await {
            match &e {
                StreamEvent::TextDelta { delta } => {
                    streamed_text = true;
                    if hold {
                        held.push(delta.clone());
                        continue;
                    }
                }
                StreamEvent::ToolInputStart { call_id, .. } => {
                    seen.insert(call_id.clone());
                }
                _ => {}
            }
            if let Some(tx) = &sink {
                let _ = tx.send(e);
            }
        }
        (seen, held, streamed_text)
    };
    let (result, (seen, held, streamed_text)) = tokio::join!(call, forward);
    ctx.state.counters.model_calls += 1;
    ctx.state.counters.model_ms += started.elapsed().as_millis() as u64;
    let turn = result?;
    ctx.state.counters.usage.add(turn.usage);
    ctx.state.turn_tokens += turn.usage.total();
    Ok(Answer {
        turn,
        seen,
        held,
        streamed_text,
    })
}

impl Answer {
    /// Sends what the model did not stream itself, and releases or drops held text: text
    /// beside tool calls is dropped from the stream when acting first, otherwise shown.
    pub fn complete_events(&self, ctx: &Ctx<'_>, show_text: bool) {
        if show_text {
            if !self.held.is_empty() {
                for d in &self.held {
                    ctx.emit(StreamEvent::TextDelta { delta: d.clone() });
                }
            } else if !self.streamed_text && !self.turn.content.is_empty() {
                ctx.emit(StreamEvent::TextDelta {
                    delta: self.turn.content.clone(),
                });
            }
        }
        for c in &self.turn.tool_calls {
            if self.seen.contains(&c.id) {
                continue;
            }
            for e in crate::agent::scripted::stream_events(&ModelTurn::calls(vec![c.clone()])) {
                // Deltas are noise for a call that arrived whole.
                if !matches!(e, StreamEvent::ToolInputDelta { .. }) {
                    ctx.emit(e);
                }
            }
        }
    }
}
