//! Operators' requests on an engine (`durable/operator_request.rs`): the command line asks
//! for a resume or a rollback it cannot run itself, and the app's workers carry it out with
//! their handlers.

use super::Engine;
use crate::batch::BatchOptions;
use crate::durable::operator_request::{self, OperatorAction, OperatorRequest};
use crate::envelope::ToolError;
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long [`Engine::serve_operator_requests`] pauses after the store failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);

impl Engine {
    /// Asks the app's workers (any process sharing this engine's store that serves operator
    /// requests) to `action` run `run_id` — for a rollback, only `call_id` when given — and
    /// wakes them. `asked_by` names the operator. Refused with `not_found` for an unknown
    /// run. Then [`Engine::wait_operator_request`] for the answer.
    pub async fn ask_operator(
        &self,
        action: OperatorAction,
        run_id: &str,
        call_id: Option<&str>,
        asked_by: Option<&str>,
    ) -> Result<OperatorRequest, ToolError> {
        operator_request::ask(
            &self.durable,
            action,
            run_id,
            call_id.map(str::to_string),
            asked_by.map(str::to_string),
        )
        .await
    }

    /// Waits up to `timeout` for request `id` to be answered (woken by the answer through the
    /// store's wake bus). When the time runs out before any worker took it, the request is
    /// withdrawn, so it never runs later, and comes back `queued`; one a worker holds comes
    /// back `taken` and goes on.
    pub async fn wait_operator_request(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<OperatorRequest, ToolError> {
        operator_request::wait(&self.durable, id, timeout).await
    }

    /// An operator's request as stored now.
    pub async fn operator_request(&self, id: &str) -> Result<Option<OperatorRequest>, ToolError> {
        operator_request::get(self.durable.store.as_ref(), id).await
    }

    /// Waits up to `timeout` for one operator request, takes it (exactly one worker does),
    /// carries it out with this engine's handlers and records the answer, which wakes the
    /// operator. `live` is what [`Engine::resume_with`] takes (a binding's event loop as
    /// `host`; its `cancel` ends the wait, and cancels a resume under way as it would a
    /// batch). `None` when no request came in time.
    pub async fn serve_operator_request(
        &self,
        worker: &str,
        timeout: Duration,
        live: BatchOptions,
    ) -> Result<Option<OperatorRequest>, ToolError> {
        let stop = live.cancel.clone();
        self.serve_operator_request_until(worker, timeout, stop.as_ref(), live)
            .await
    }

    /// [`Engine::serve_operator_request`], whose wait (only) `stop` ends.
    async fn serve_operator_request_until(
        &self,
        worker: &str,
        timeout: Duration,
        stop: Option<&CancellationToken>,
        live: BatchOptions,
    ) -> Result<Option<OperatorRequest>, ToolError> {
        let durable = &self.durable;
        operator_request::serve_one(durable, worker, timeout, stop, |request| async move {
            match request.action {
                OperatorAction::Resume => {
                    let out = self.resume_with(&request.run_id, live).await?;
                    Ok(serde_json::to_value(&out).unwrap_or(Value::Null))
                }
                OperatorAction::Rollback => {
                    let call = request.call_id.as_deref();
                    let report = self.rollback_with(&request.run_id, call, live.host).await?;
                    Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
                }
            }
        })
        .await
    }

    /// Serves operator requests as `worker` until `stop` is cancelled: the loop a Rust app
    /// runs beside its work (Python and Node have their own, around
    /// [`Engine::serve_operator_request`], since their handlers need their event loop).
    /// `stop` ends the waiting; a request taken is carried out to its end first. A store
    /// that fails is retried after a pause; the failure is logged.
    pub async fn serve_operator_requests(&self, worker: &str, stop: CancellationToken) {
        while !stop.is_cancelled() {
            let wait = Duration::from_secs(60);
            let served = self
                .serve_operator_request_until(worker, wait, Some(&stop), BatchOptions::default())
                .await;
            if let Err(e) = served {
                tracing::warn!(target: "tooljig::operator", error = %e.message, "serving operator requests failed; retrying");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(RETRY_AFTER) => {}
                }
            }
        }
    }
}
