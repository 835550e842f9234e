//! Progress and preliminary results: what a handler reports while it runs.
//!
//! A handler reports how far it is (a fraction and a message) and may hand out partial outputs
//! before its final result (`ctx.progress`). They go to the batch's event stream as
//! [`Event::CallProgress`], and from there to the UI message stream (preliminary tool
//! outputs) and to MCP clients (progress notifications). They are never validated, cached,
//! stored or audited: the final result alone is. With nobody listening, reporting costs a
//! branch. A handler made from a stream reports each item: `handler::stream_handler_fn`.

use crate::events::{Event, EventSender};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// A handler's progress reporter ([`ToolContext::progress`]). Cheap to clone; reporting never
/// blocks and never fails.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<Listener>>);

/// Where a call's reports go: a batch's event stream, its progress listener, or both.
struct Listener {
    sinks: Vec<EventSender>,
    call_id: Arc<str>,
    tool: String,
    batch_start: Instant,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(listened)"
        } else {
            "Progress(unheard)"
        })
    }
}

impl Progress {
    /// Reports of the call `call_id` of `tool` to each of `sinks` (a batch's event stream,
    /// its progress listener); unheard when there is none.
    pub fn to_events(
        sinks: Vec<EventSender>,
        call_id: Arc<str>,
        tool: String,
        batch_start: Instant,
    ) -> Self {
        if sinks.is_empty() {
            return Progress(None);
        }
        Progress(Some(Arc::new(Listener {
            sinks,
            call_id,
            tool,
            batch_start,
        })))
    }

    /// Whether anyone listens (a handler may skip working out what it would report).
    pub fn is_listened(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|l| l.sinks.iter().any(|s| !s.is_closed()))
    }

    /// How far the call is: `fraction` of the work done (clamped to 0..=1; not a number is
    /// left out), and a message for whoever watches.
    pub fn report(&self, fraction: Option<f64>, message: Option<String>) {
        let fraction = fraction
            .filter(|f| f.is_finite())
            .map(|f| f.clamp(0.0, 1.0));
        self.send(fraction, message, None);
    }

    /// A partial output before the final result (a preliminary tool output for the UI).
    pub fn partial(&self, output: Value) {
        self.send(None, None, Some(output));
    }

    fn send(&self, fraction: Option<f64>, message: Option<String>, output: Option<Value>) {
        if let Some(l) = &self.0 {
            let event = Event::CallProgress {
                at_us: l.batch_start.elapsed().as_micros() as u64,
                call_id: l.call_id.to_string(),
                tool: l.tool.clone(),
                fraction,
                message,
                output,
            };
            if let [rest @ .., last] = &l.sinks[..] {
                for sink in rest {
                    let _ = sink.send(event.clone());
                }
                let _ = last.send(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_reach_the_events_clamped_and_nothing_is_sent_unheard() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let progress = Progress::to_events(vec![tx], Arc::from("c1"), "t".into(), Instant::now());
        assert!(progress.is_listened());
        progress.report(Some(1.5), Some("almost".into()));
        progress.report(Some(f64::NAN), None);
        progress.partial(serde_json::json!({"rows": 3}));
        let got: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        let fractions: Vec<Option<f64>> = got
            .iter()
            .map(|e| match e {
                Event::CallProgress { fraction, .. } => *fraction,
                _ => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(fractions, [Some(1.0), None, None]);
        assert!(matches!(&got[2], Event::CallProgress { output: Some(o), .. } if o["rows"] == 3));
        let unheard = Progress::default();
        assert!(!unheard.is_listened());
        unheard.report(Some(0.5), None);
        let none = Progress::to_events(Vec::new(), Arc::from("c1"), "t".into(), Instant::now());
        assert!(!none.is_listened());
    }

    #[test]
    fn each_sink_hears_every_report_and_one_open_sink_is_enough() {
        let (a, mut heard_a) = tokio::sync::mpsc::unbounded_channel();
        let (b, mut heard_b) = tokio::sync::mpsc::unbounded_channel();
        let progress = Progress::to_events(vec![a, b], Arc::from("c1"), "t".into(), Instant::now());
        progress.report(Some(0.25), Some("a quarter".into()));
        assert!(
            matches!(heard_a.try_recv(), Ok(Event::CallProgress { fraction: Some(f), .. }) if f == 0.25)
        );
        assert!(heard_b.try_recv().is_ok());
        drop(heard_b);
        assert!(progress.is_listened());
        drop(heard_a);
        assert!(!progress.is_listened());
    }
}
