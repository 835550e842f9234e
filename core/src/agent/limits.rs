//! The limits of a turn in one place: the check before each step, and the share of the
//! remaining budget one step's batch may use, so the two never disagree about what is left.

use super::context::Ctx;
use super::runner::Agent;
use super::state::StopReason;

/// What one step's batch may use of what the turn has left.
pub(super) struct BatchLimits {
    /// Calls the batch may run: the per-step cap, or fewer when the turn's budget is nearly
    /// spent.
    pub max_calls: usize,
    /// The batch's deadline: its own, cut short by the turn's when that comes first.
    pub deadline_ms: Option<u64>,
}

impl Agent {
    /// Which limit, if any, ends the turn before the next step.
    pub(super) fn limit_reached(&self, ctx: &Ctx<'_>) -> Option<StopReason> {
        let limits = &self.options.limits;
        if ctx.remaining().is_some_and(|d| d.is_zero()) {
            return Some(StopReason::Deadline);
        }
        if limits
            .token_budget
            .is_some_and(|budget| ctx.state.turn_tokens >= budget)
        {
            return Some(StopReason::TokenBudget);
        }
        if ctx.state.turn_steps >= limits.max_steps {
            return Some(StopReason::StepLimit);
        }
        if ctx.tools_ran && ctx.state.turn_tool_calls >= limits.max_tool_calls_per_run {
            return Some(StopReason::ToolCallLimit);
        }
        None
    }

    /// What the next batch may use, from the turn's calls and time so far.
    pub(super) fn batch_limits(&self, ctx: &Ctx<'_>) -> BatchLimits {
        let limits = &self.options.limits;
        let left = limits
            .max_tool_calls_per_run
            .saturating_sub(ctx.state.turn_tool_calls);
        let max_calls = limits.max_tool_calls_per_step.min(left);
        let deadline_ms = match (limits.batch_deadline_ms, ctx.remaining()) {
            (Some(a), Some(b)) => Some(a.min(b.as_millis() as u64)),
            (a, b) => a.or(b.map(|d| d.as_millis() as u64)),
        };
        BatchLimits {
            max_calls,
            deadline_ms,
        }
    }
}
