//! `tooljig stats`: what the audit log says about each tool.

use serde::Serialize;
use std::collections::BTreeMap;
use tooljig::AuditRecord;
use tooljig::audit::Outcome;

/// One tool's calls in the audit log.
#[derive(Debug, Serialize, PartialEq)]
pub struct ToolStats {
    /// The tool.
    pub tool: String,
    /// Calls recorded.
    pub calls: u64,
    /// Calls that returned data.
    pub ok: u64,
    /// Calls refused or failed.
    pub errors: u64,
    /// How many ended with each error code.
    pub codes: BTreeMap<String, u64>,
    /// Median time spent running the handler, in µs (calls that ran).
    pub p50_us: u64,
    /// 99th percentile of the same.
    pub p99_us: u64,
}

/// Stats per tool, by tool name.
pub fn per_tool(records: &[AuditRecord]) -> Vec<ToolStats> {
    let mut by_tool: BTreeMap<&str, (ToolStats, Vec<u64>)> = BTreeMap::new();
    // A rollback's records are about calls already counted.
    for r in records.iter().filter(|r| !r.outcome.is_rollback()) {
        let (stats, durations) = by_tool.entry(&r.tool).or_insert_with(|| {
            let stats = ToolStats {
                tool: r.tool.clone(),
                calls: 0,
                ok: 0,
                errors: 0,
                codes: BTreeMap::new(),
                p50_us: 0,
                p99_us: 0,
            };
            (stats, Vec::new())
        });
        stats.calls += 1;
        match r.outcome {
            Outcome::Ok => stats.ok += 1,
            Outcome::Error => stats.errors += 1,
            _ => {}
        }
        if let Some(code) = r.code {
            *stats.codes.entry(code.as_str().to_string()).or_default() += 1;
        }
        if r.attempts > 0 {
            durations.push(r.duration_us);
        }
    }
    by_tool
        .into_values()
        .map(|(mut stats, mut durations)| {
            durations.sort_unstable();
            let pct = |p: f64| {
                let i = ((durations.len() as f64 - 1.0) * p).round() as usize;
                durations.get(i).copied().unwrap_or(0)
            };
            stats.p50_us = pct(0.5);
            stats.p99_us = pct(0.99);
            stats
        })
        .collect()
}
