//! What one pass of the loop carries from step to step: the state it writes to, who asks,
//! where events go, the deadline and the turn's mode. One value, so the loop, the model call
//! and the wrap-up all see the same turn.

use super::model::StreamSender;
use super::options::Mode;
use super::state::AgentState;
use crate::caller::Caller;
use crate::stream::StreamEvent;
use std::time::{Duration, Instant};

/// What one pass of the loop works with.
pub(crate) struct Ctx<'a> {
    pub state: &'a mut AgentState,
    pub caller: Caller,
    pub sink: Option<StreamSender>,
    pub deadline: Option<Instant>,
    pub mode: Mode,
    /// Tools ran in this user turn: text may stream now, and the responder takes over.
    pub tools_ran: bool,
}

impl Ctx<'_> {
    pub fn emit(&self, e: StreamEvent) {
        if let Some(tx) = &self.sink {
            let _ = tx.send(e);
        }
    }

    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}
