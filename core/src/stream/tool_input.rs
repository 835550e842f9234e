//! Tool calls assembled from argument deltas, shared by every provider's decoder.
//!
//! Each call is opened, grows delta by delta (with the partial arguments parsed at each
//! step), and is closed complete, or left open when the stream ends, which makes it
//! incomplete: reported once, kept in the turn marked `incomplete`, never executed.

use super::StreamEvent;
use super::partial_json::parse_partial;
use crate::arguments::{Limits, parse_text};
use crate::providers::ToolCall;
use serde_json::Value;

#[derive(Debug)]
struct Pending {
    id: String,
    name: String,
    text: String,
    /// Arguments given whole as a value (Gemini), not as text.
    value: Option<Value>,
    done: bool,
    provider_data: Option<Value>,
}

/// The calls of one model turn, in the order they started.
#[derive(Debug, Default)]
pub struct ToolInputs {
    calls: Vec<Pending>,
}

impl ToolInputs {
    /// Opens a call; returns its position.
    pub fn start(
        &mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        provider_data: Option<Value>,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let (id, name) = (id.into(), name.into());
        out.push(StreamEvent::ToolInputStart {
            call_id: id.clone(),
            tool: name.clone(),
        });
        self.calls.push(Pending {
            id,
            name,
            text: String::new(),
            value: None,
            done: false,
            provider_data,
        });
        self.calls.len() - 1
    }

    /// Appends argument text to the call at `index`.
    pub fn delta(&mut self, index: usize, delta: &str, out: &mut Vec<StreamEvent>) {
        let Some(c) = self.calls.get_mut(index) else {
            return;
        };
        if delta.is_empty() || c.done {
            return;
        }
        c.text.push_str(delta);
        out.push(StreamEvent::ToolInputDelta {
            call_id: c.id.clone(),
            delta: delta.to_string(),
            partial: parse_partial(&c.text),
        });
    }

    /// Replaces the argument text with the provider's final word on it, when it gives one.
    pub fn set_text(&mut self, index: usize, text: &str) {
        if let Some(c) = self.calls.get_mut(index)
            && !c.done
        {
            c.text = text.to_string();
        }
    }

    /// Sets the arguments of a call given whole, as a value.
    pub fn set_value(&mut self, index: usize, value: Value, out: &mut Vec<StreamEvent>) {
        if let Some(c) = self.calls.get_mut(index) {
            let text = value.to_string();
            c.value = Some(value.clone());
            c.text = text.clone();
            out.push(StreamEvent::ToolInputDelta {
                call_id: c.id.clone(),
                delta: text,
                partial: Some(value),
            });
        }
    }

    /// Closes the call at `index`: its arguments are complete.
    pub fn complete(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        let Some(c) = self.calls.get_mut(index) else {
            return;
        };
        if c.done {
            return;
        }
        c.done = true;
        let input = match &c.value {
            Some(v) => v.clone(),
            None => match parse_text(&c.text, &Limits::default()) {
                Ok(p) => p.value,
                Err(_) => Value::String(c.text.clone()),
            },
        };
        out.push(StreamEvent::ToolInputAvailable {
            call_id: c.id.clone(),
            tool: c.name.clone(),
            input,
        });
    }

    /// Closes every open call before `index`: a later call started, so they are complete.
    pub fn complete_before(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        for i in 0..index.min(self.calls.len()) {
            self.complete(i, out);
        }
    }

    /// Closes every open call as complete.
    pub fn complete_all(&mut self, out: &mut Vec<StreamEvent>) {
        self.complete_before(self.calls.len(), out);
    }

    /// Number of calls started.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether no call started.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Position of the call with this id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.calls.iter().position(|c| c.id == id)
    }

    /// Ends the turn: calls still open are incomplete (reported with `reason`); returns every
    /// call, in order.
    pub fn finish(&mut self, reason: &str, out: &mut Vec<StreamEvent>) -> Vec<ToolCall> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for c in self.calls.drain(..) {
            let incomplete = !c.done;
            if incomplete {
                out.push(StreamEvent::ToolInputIncomplete {
                    call_id: c.id.clone(),
                    tool: c.name.clone(),
                    partial: parse_partial(&c.text),
                    text: c.text.clone(),
                    reason: reason.to_string(),
                });
            }
            calls.push(ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.value.unwrap_or(Value::String(c.text)),
                incomplete,
                provider_data: c.provider_data,
            });
        }
        calls
    }
}
