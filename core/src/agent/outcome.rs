//! What a turn hands back to the app: a snapshot of the state's status, answer and counters,
//! so the app need not read the state to know how the turn ended.

use super::state::{AgentState, RunCounters, RunStatus};
use serde::{Deserialize, Serialize};

/// What a `run`, `send` or `resume` call ended with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Where the run stands.
    pub status: RunStatus,
    /// The answer, or the clarifying question (empty while suspended).
    pub answer: String,
    /// The run's counters so far.
    pub counters: RunCounters,
}

impl RunOutcome {
    pub(crate) fn of(state: &AgentState) -> Self {
        RunOutcome {
            status: state.status.clone(),
            answer: state.answer.clone(),
            counters: state.counters.clone(),
        }
    }

    pub(super) fn with_counters(mut self, state: &AgentState) -> Self {
        self.counters = state.counters.clone();
        self
    }
}
