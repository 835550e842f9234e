//! Telemetry: what happened to calls, per tool, for dashboards and alerts.
//!
//! Every settled call emits one `tracing` event (target `tooljig::call`, with tool, call id,
//! outcome, code, duration and attempts), so an app can attach `tracing-opentelemetry` or
//! any subscriber. Apps without one read [`Telemetry::snapshot`]: counters for calls,
//! successes, `needs` (missing-field loops), cache hits and errors by code, and a latency
//! histogram per tool, all kept in atomics so recording costs a few nanoseconds.

use crate::call::CallResult;
use crate::error_code::ErrorCode;
use crate::guard::audit::Outcome;
use foldhash::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Upper bounds of the latency buckets, in µs; a last bucket holds everything slower.
pub const LATENCY_BOUNDS_US: [u64; 20] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
    500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000,
];

/// The name calls of unregistered tools are counted under: the names a model invents are
/// unbounded, and must not grow memory.
pub const UNKNOWN_TOOL: &str = "(unknown)";

const CODES: usize = ErrorCode::ALL.len();

#[derive(Default)]
struct ToolStats {
    calls: AtomicU64,
    ok: AtomicU64,
    needs: AtomicU64,
    cached: AtomicU64,
    pending: AtomicU64,
    by_code: [AtomicU64; CODES],
    latency: [AtomicU64; LATENCY_BOUNDS_US.len() + 1],
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
}

/// Counters and histograms of one engine.
#[derive(Default)]
pub struct Telemetry {
    tools: RwLock<HashMap<String, Arc<ToolStats>>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// One tool's figures at the time of the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolSnapshot {
    /// Calls settled.
    pub calls: u64,
    /// Calls that returned data.
    pub ok: u64,
    /// Calls that ended with `needs`.
    pub needs: u64,
    /// Calls served from the cache.
    pub cached: u64,
    /// Calls left pending (approval, client, waiting).
    pub pending: u64,
    /// Errors and refusals, by code.
    pub errors: BTreeMap<String, u64>,
    /// Handler latency of the calls that ran.
    pub latency: LatencySnapshot,
}

/// A latency histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySnapshot {
    /// Calls measured.
    pub count: u64,
    /// Sum of their latencies, in µs.
    pub sum_us: u64,
    /// The slowest, in µs.
    pub max_us: u64,
    /// Calls per bucket: `(upper bound in µs, count)`; the last bound is `u64::MAX`.
    pub buckets: Vec<(u64, u64)>,
    /// Estimated percentiles (the upper bound of the bucket holding them), in µs.
    pub p50_us: u64,
    /// 95th percentile estimate, in µs.
    pub p95_us: u64,
    /// 99th percentile estimate, in µs.
    pub p99_us: u64,
}

/// Every tool's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySnapshot {
    /// By tool name.
    pub tools: BTreeMap<String, ToolSnapshot>,
}

impl TelemetrySnapshot {
    /// Sums over every tool.
    pub fn total(&self) -> ToolSnapshot {
        let mut t = ToolSnapshot::default();
        for s in self.tools.values() {
            t.calls += s.calls;
            t.ok += s.ok;
            t.needs += s.needs;
            t.cached += s.cached;
            t.pending += s.pending;
            for (k, v) in &s.errors {
                *t.errors.entry(k.clone()).or_default() += v;
            }
        }
        t
    }
}

impl Telemetry {
    fn stats(&self, tool: &str) -> Arc<ToolStats> {
        if let Some(s) = self
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tool)
        {
            return s.clone();
        }
        self.tools
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tool.to_string())
            .or_default()
            .clone()
    }

    /// Counts one settled call and emits its `tracing` event.
    pub fn record(&self, result: &CallResult, outcome: Outcome) {
        let code = result.envelope.code();
        tracing::info!(
            target: "tooljig::call",
            tool = %result.tool,
            call_id = %result.call_id,
            outcome = outcome.as_str(),
            code = code.map(|c| c.as_str()),
            duration_us = result.duration_us,
            attempts = result.attempts,
            cached = result.cached,
        );
        let name = if code == Some(ErrorCode::UnknownTool) {
            UNKNOWN_TOOL
        } else {
            &result.tool
        };
        let s = self.stats(name);
        s.calls.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Ok => s.ok.fetch_add(1, Ordering::Relaxed),
            Outcome::Needs => s.needs.fetch_add(1, Ordering::Relaxed),
            Outcome::Error => 0,
            _ => s.pending.fetch_add(1, Ordering::Relaxed),
        };
        if let Some(c) = code {
            s.by_code[c as usize].fetch_add(1, Ordering::Relaxed);
        }
        if result.cached {
            s.cached.fetch_add(1, Ordering::Relaxed);
        }
        if result.attempts > 0 {
            let us = result.duration_us;
            let bucket = LATENCY_BOUNDS_US
                .iter()
                .position(|&b| us <= b)
                .unwrap_or(LATENCY_BOUNDS_US.len());
            s.latency[bucket].fetch_add(1, Ordering::Relaxed);
            s.latency_sum_us.fetch_add(us, Ordering::Relaxed);
            s.latency_max_us.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// The figures so far.
    pub fn snapshot(&self) -> TelemetrySnapshot {
        let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
        let mut out = TelemetrySnapshot::default();
        for (name, s) in tools.iter() {
            let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
            let errors = ErrorCode::ALL
                .iter()
                .filter_map(|&c| {
                    let n = load(&s.by_code[c as usize]);
                    (n > 0).then(|| (c.as_str().to_string(), n))
                })
                .collect();
            let buckets: Vec<(u64, u64)> = LATENCY_BOUNDS_US
                .iter()
                .copied()
                .chain([u64::MAX])
                .zip(s.latency.iter().map(load))
                .collect();
            let count: u64 = buckets.iter().map(|b| b.1).sum();
            let pct = |p: f64| -> u64 {
                let want = ((count as f64) * p).ceil() as u64;
                let mut seen = 0;
                for &(bound, n) in &buckets {
                    seen += n;
                    if n > 0 && seen >= want {
                        return bound.min(load(&s.latency_max_us));
                    }
                }
                0
            };
            out.tools.insert(
                name.clone(),
                ToolSnapshot {
                    calls: load(&s.calls),
                    ok: load(&s.ok),
                    needs: load(&s.needs),
                    cached: load(&s.cached),
                    pending: load(&s.pending),
                    errors,
                    latency: LatencySnapshot {
                        count,
                        sum_us: load(&s.latency_sum_us),
                        max_us: load(&s.latency_max_us),
                        p50_us: pct(0.50),
                        p95_us: pct(0.95),
                        p99_us: pct(0.99),
                        buckets,
                    },
                },
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Envelope;
    use serde_json::json;

    #[test]
    fn counts_by_outcome_code_and_latency() {
        let t = Telemetry::default();
        let mut ok = CallResult::refused("a", "search", Envelope::Ok(json!(1)));
        ok.attempts = 1;
        ok.duration_us = 40;
        t.record(&ok, Outcome::Ok);
        let needs = CallResult::refused("b", "search", Envelope::Needs(vec!["q".into()]));
        t.record(&needs, Outcome::Needs);
        let limited = CallResult::refused(
            "c",
            "search",
            Envelope::error(ErrorCode::RateLimited, "slow down"),
        );
        t.record(&limited, Outcome::Error);
        let unknown = CallResult::refused(
            "d",
            "made_up_by_the_model",
            Envelope::error(ErrorCode::UnknownTool, "no"),
        );
        t.record(&unknown, Outcome::Error);
        let snap = t.snapshot();
        let s = &snap.tools["search"];
        assert_eq!((s.calls, s.ok, s.needs), (3, 1, 1));
        assert_eq!(s.errors["rate_limited"], 1);
        assert_eq!(s.latency.count, 1);
        assert_eq!(s.latency.p50_us, 40, "capped by the max seen");
        assert!(snap.tools.contains_key(UNKNOWN_TOOL));
        assert!(!snap.tools.contains_key("made_up_by_the_model"));
        assert_eq!(snap.total().calls, 4);
    }
}
