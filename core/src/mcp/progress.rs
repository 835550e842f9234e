//! MCP progress notifications: a `tools/call` whose client sent a `progressToken` hears the
//! handler's progress reports (`ctx.progress`) as `notifications/progress`.

use crate::events::{Event, EventSender};
use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;

/// Progress of one `tools/call` for a client that asked for it (a `progressToken` in the
/// request's `_meta`): the batch's progress reports go to the client as
/// `notifications/progress` (`progress` never decreasing, `total` 1 once a fraction was
/// reported). Partial outputs have no MCP form and stay in the app.
pub(super) struct ProgressForwarder {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    /// The batch's event sender and the forwarder, when the client asked for progress.
    pub(super) fn start(
        context: &RequestContext<RoleServer>,
    ) -> Option<(EventSender, ProgressForwarder)> {
        let token = context.meta.get_progress_token()?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            let mut done = 0.0_f64;
            let mut total = None;
            let mut stopping = false;
            loop {
                // After the batch: what is queued still goes, then no more (a handler may
                // keep a clone of its reporter past its result).
                let event = if stopping {
                    rx.try_recv().ok()
                } else {
                    tokio::select! {
                        biased;
                        event = rx.recv() => event,
                        _ = &mut stopped => {
                            stopping = true;
                            continue;
                        }
                    }
                };
                let Some(event) = event else { return };
                let Event::CallProgress {
                    fraction, message, ..
                } = event
                else {
                    continue;
                };
                if fraction.is_none() && message.is_none() {
                    continue;
                }
                if let Some(f) = fraction {
                    done = done.max(f);
                    total = Some(1.0);
                }
                let mut note = ProgressNotificationParam::new(token.clone(), done);
                note.total = total;
                note.message = message;
                if peer.notify_progress(note).await.is_err() {
                    return;
                }
            }
        });
        Some((tx, ProgressForwarder { stop, task }))
    }

    /// Sends what is queued and ends, so every notification precedes the call's response.
    pub(super) async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}
