//! Bearer tokens, each standing for one caller: the simplest way a server that tooljig runs
//! (an MCP endpoint, the approval inbox) knows who calls.

use crate::caller::Caller;
use std::collections::HashMap;

/// A table of bearer tokens and the callers they stand for.
#[derive(Debug, Clone, Default)]
pub struct BearerTokens(pub HashMap<String, Caller>);

impl BearerTokens {
    /// The caller `token` stands for. Every token is compared in full, so response times do
    /// not tell an attacker how much of one they guessed.
    pub fn caller_of(&self, token: &str) -> Option<Caller> {
        self.0
            .iter()
            .find(|(known, _)| constant_time_eq(known.as_bytes(), token.as_bytes()))
            .map(|(_, caller)| caller.clone())
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
