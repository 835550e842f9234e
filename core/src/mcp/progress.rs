//! MCP progress notifications: a `tools/call` whose client sent a `progressToken` hears the
//! handler's progress reports (`ctx.progress`) as `notifications/progress`.

use crate::batch::BatchOptions;
use crate::events::Event;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use std::future::Future;
use tokio::sync::mpsc::UnboundedReceiver;

/// Runs one `tools/call`'s batch (`run` with `options`), its progress reports going to the
/// client when it asked for them (a `progressToken` in the request's `_meta`). Every
/// notification precedes the call's response.
///
/// Some clients (rmcp's among them) send a token with every request, and most handlers report
/// nothing: the batch's progress listener alone is taken, not its event stream, and a task
/// to forward reports starts with the first one, so a call that reports nothing costs
/// neither a task nor a wake-up.
pub(super) async fn with_progress<F, Fut>(
    context: &RequestContext<RoleServer>,
    mut options: BatchOptions,
    run: F,
) -> Fut::Output
where
    F: FnOnce(BatchOptions) -> Fut,
    Fut: Future,
{
    let heard = context.meta.get_progress_token().map(|token| {
        let (tx, reports) = tokio::sync::mpsc::unbounded_channel();
        options.progress = Some(tx);
        (token, reports)
    });
    // One future of the batch for both ways below: two made this one twice its size.
    let run = run(options);
    tokio::pin!(run);
    let Some((token, mut reports)) = heard else {
        return run.await;
    };
    let mut notes = Notes::new(token);
    let first = tokio::select! {
        biased;
        out = &mut run => {
            while let Ok(event) = reports.try_recv() {
                // Boxed: rare (reports still queued when the call ended), and large inline.
                if !Box::pin(notes.send(&context.peer, event)).await {
                    break;
                }
            }
            return out;
        }
        Some(event) = reports.recv() => event,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let forwarder = tokio::spawn(forward(
        context.peer.clone(),
        notes,
        first,
        reports,
        stopped,
    ));
    let out = run.await;
    let _ = stop.send(());
    let _ = forwarder.await;
    out
}

/// Sends reports as they come until told to stop, then what is still queued, then no more (a
/// handler may keep a clone of its reporter past its result).
async fn forward(
    peer: Peer<RoleServer>,
    mut notes: Notes,
    first: Event,
    mut reports: UnboundedReceiver<Event>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut next = Some(first);
    let mut stopping = false;
    loop {
        let Some(event) = next.take() else { return };
        if !notes.send(&peer, event).await {
            return;
        }
        next = if stopping {
            reports.try_recv().ok()
        } else {
            tokio::select! {
                biased;
                event = reports.recv() => event,
                _ = &mut stopped => {
                    stopping = true;
                    reports.try_recv().ok()
                }
            }
        };
    }
}

/// One call's progress as the client sees it: `progress` never decreasing, `total` 1 once a
/// fraction was reported. Partial outputs have no MCP form and stay in the app.
struct Notes {
    token: ProgressToken,
    done: f64,
    total: Option<f64>,
}

impl Notes {
    fn new(token: ProgressToken) -> Self {
        Notes {
            token,
            done: 0.0,
            total: None,
        }
    }

    /// Sends the notification a report makes, if any; false once the client is gone.
    async fn send(&mut self, peer: &Peer<RoleServer>, event: Event) -> bool {
        let Event::CallProgress {
            fraction, message, ..
        } = event
        else {
            return true;
        };
        if fraction.is_none() && message.is_none() {
            return true;
        }
        if let Some(f) = fraction {
            self.done = self.done.max(f);
            self.total = Some(1.0);
        }
        let mut note = ProgressNotificationParam::new(self.token.clone(), self.done);
        note.total = self.total;
        note.message = message;
        peer.notify_progress(note).await.is_ok()
    }
}
