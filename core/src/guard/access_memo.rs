//! The static access decisions of one batch, kept per tool.
//!
//! Step 5's static half (flags, roles, scopes: [`access::check`]) depends on nothing but the
//! tool, the caller and the settings. Every call of a batch has the same caller, so a batch of
//! a thousand calls to one tool asked the same question a thousand times; with settings at
//! every level and scopes with alternatives, that was about a quarter of what the guard steps
//! cost a call. A batch now decides once per tool, and again whenever the settings it decided
//! under have been replaced: switching a tool off mid-batch still stops its next call. A
//! batch of one call decides without a memo: it would only cost the one call an allocation.

use crate::caller::Caller;
use crate::envelope::ToolError;
use crate::guard::access::{self, Settings};
use crate::registry::RegisteredTool;
use std::sync::{Arc, Mutex, PoisonError};

/// One batch's decisions. Its calls are polled by one task, so the lock is never contended.
#[derive(Default)]
pub struct AccessMemo {
    decided: Mutex<Vec<Decided>>,
}

/// A decision and what it was decided for: the tool and the caller are held, not just
/// compared by address, so neither address can be reused by another while it is kept.
struct Decided {
    tool: Arc<RegisteredTool>,
    caller: Arc<Caller>,
    settings: Arc<Settings>,
    outcome: Result<(), ToolError>,
}

impl AccessMemo {
    /// [`access::check`] of `tool` for `caller` under `settings`, decided once for as long as
    /// all three stay the same.
    pub fn check(
        &self,
        tool: &Arc<RegisteredTool>,
        caller: &Arc<Caller>,
        settings: &Arc<Settings>,
    ) -> Result<(), ToolError> {
        let mut decided = self.decided.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = decided
            .iter_mut()
            .find(|d| Arc::ptr_eq(&d.tool, tool) && Arc::ptr_eq(&d.caller, caller));
        match kept {
            Some(d) if Arc::ptr_eq(&d.settings, settings) => d.outcome.clone(),
            Some(d) => {
                d.settings = settings.clone();
                d.outcome = access::check(&tool.spec, caller, settings);
                d.outcome.clone()
            }
            None => {
                let outcome = access::check(&tool.spec, caller, settings);
                // Room for one more, not four: most batches call one tool.
                decided.reserve_exact(1);
                decided.push(Decided {
                    tool: tool.clone(),
                    caller: caller.clone(),
                    settings: settings.clone(),
                    outcome: outcome.clone(),
                });
                outcome
            }
        }
    }
}
