//! A model that plays back a script: for tests, examples and demos, with no network.
//!
//! Each request takes the next step of the script: a turn, an error, or a function of the
//! request (to answer from what the conversation holds). Every request is recorded, so a
//! test can check what the loop sent. With streaming on, a turn is sent as events the way a
//! provider would stream it (text in word-sized deltas, arguments in small pieces).

use super::model::{ModelClient, ModelError, ModelErrorKind, StreamSender};
use crate::handler::BoxFuture;
use crate::providers::{ModelRequest, ModelTurn};
use crate::stream::StreamEvent;
use crate::stream::partial_json::parse_partial;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

type Answer = Box<dyn Fn(&ModelRequest) -> Result<ModelTurn, ModelError> + Send + Sync>;

/// One step of a script.
pub enum Step {
    /// Answer with this turn.
    Turn(ModelTurn),
    /// Fail with this error.
    Fail(ModelError),
    /// Answer from the request.
    With(Answer),
}

impl From<ModelTurn> for Step {
    fn from(t: ModelTurn) -> Self {
        Step::Turn(t)
    }
}

impl From<ModelError> for Step {
    fn from(e: ModelError) -> Self {
        Step::Fail(e)
    }
}

/// A model that answers from a script.
pub struct ScriptedModel {
    name: String,
    steps: Mutex<VecDeque<Step>>,
    repeat_last: Mutex<Option<ModelTurn>>,
    requests: Mutex<Vec<ModelRequest>>,
    stream: bool,
}

impl ScriptedModel {
    /// A model named `name` that answers with `steps`, in order.
    pub fn new<S: Into<Step>>(name: impl Into<String>, steps: impl IntoIterator<Item = S>) -> Self {
        ScriptedModel {
            name: name.into(),
            steps: Mutex::new(steps.into_iter().map(Into::into).collect()),
            repeat_last: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            stream: false,
        }
    }

    /// Streams each turn as events, like a provider would.
    pub fn streaming(mut self) -> Self {
        self.stream = true;
        self
    }

    /// Once the script is played, answers every further request with `turn` (a model that
    /// never stops calling tools, say).
    pub fn then_forever(self, turn: ModelTurn) -> Self {
        *self.repeat_last.lock().unwrap_or_else(|e| e.into_inner()) = Some(turn);
        self
    }

    /// Adds a step answered from the request.
    pub fn push_with(
        &self,
        f: impl Fn(&ModelRequest) -> Result<ModelTurn, ModelError> + Send + Sync + 'static,
    ) {
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Step::With(Box::new(f)));
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Steps not yet played.
    pub fn remaining(&self) -> usize {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Wraps it for the agent.
    pub fn shared(self) -> Arc<ScriptedModel> {
        Arc::new(self)
    }
}

impl ModelClient for ScriptedModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        let step = self
            .steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let answer = match step {
            Some(Step::Turn(t)) => Ok(t),
            Some(Step::Fail(e)) => Err(e),
            Some(Step::With(f)) => f(&request),
            None => match self
                .repeat_last
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
            {
                Some(t) => Ok(t),
                None => Err(ModelError::new(
                    ModelErrorKind::Other,
                    format!("the script of {} has no more answers", self.name),
                )),
            },
        };
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        let stream = self.stream;
        Box::pin(async move {
            let turn = answer?;
            if let (true, Some(tx)) = (stream, events) {
                for e in stream_events(&turn) {
                    let _ = tx.send(e);
                    tokio::task::yield_now().await;
                }
            }
            Ok(turn)
        })
    }
}

/// The events a provider would stream for a turn.
pub fn stream_events(turn: &ModelTurn) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    for word in turn.content.split_inclusive(' ') {
        out.push(StreamEvent::TextDelta {
            delta: word.to_string(),
        });
    }
    for c in &turn.tool_calls {
        out.push(StreamEvent::ToolInputStart {
            call_id: c.id.clone(),
            tool: c.name.clone(),
        });
        let text = c.arguments_text();
        let mut sent = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(8) {
            let delta: String = piece.iter().collect();
            sent.push_str(&delta);
            out.push(StreamEvent::ToolInputDelta {
                call_id: c.id.clone(),
                delta,
                partial: parse_partial(&sent),
            });
        }
        if c.incomplete {
            out.push(StreamEvent::ToolInputIncomplete {
                call_id: c.id.clone(),
                tool: c.name.clone(),
                partial: parse_partial(&text),
                text,
                reason: "the model stopped before the arguments were complete".into(),
            });
        } else {
            out.push(StreamEvent::ToolInputAvailable {
                call_id: c.id.clone(),
                tool: c.name.clone(),
                input: c.arguments_object(),
            });
        }
    }
    out
}
