//! Steps 3 to 11 of one call, once its dependencies are done: validate, guard, run with
//! timeout and retries, check the output.
//!
//! The guard steps (hidden arguments, access, rate limits, the cache: `guard/`) and the
//! durable ones (idempotency, approval, client-side calls: `durable/`) slot in here, in the
//! order of `ARCHITECTURE.md`, each refusal an envelope.

use crate::call::CallResult;
use crate::durable::{self, CallDurable};
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::events::Event;
use crate::guard::access_memo::AccessMemo;
use crate::guard::{self, Guards};
use crate::handler::{HandlerError, ToolContext};
use crate::hook::HookSite;
use crate::job::Job;
use crate::model_output::Presenter;
use crate::on_success;
use crate::output::check_output;
use crate::place::Place;
use crate::progress::Progress;
use crate::schema::arguments_envelope;
use crate::tool_calls::Calling;
use futures::FutureExt;
use serde_json::Value;
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

pub use crate::handler::UNEXPECTED_MESSAGE;

/// Runs one call and, when its tool presents results to the model, presents this one. The
/// driver settles what it returns, and builds its audit record there (step 11).
//
// This and `run_job` return an `async move` block rather than being `async fn`s: an async
// fn's future keeps its arguments twice (as given, and moved into its body), and this
// future is made, boxed and moved once a call.
#[allow(clippy::manual_async_fn)]
pub fn run_call(
    job: Job,
    guards: Arc<Guards>,
    access: Option<Arc<AccessMemo>>,
    durable: CallDurable,
    place: &mut Place,
) -> impl Future<Output = Box<CallResult>> + Send + '_ {
    async move {
        let presenter = Presenter::of(&job);
        let mut result = run_job(job, &guards, access.as_deref(), &durable, place).await;
        if let Some(presenter) = presenter {
            // It may run the app's `to_model_output`. Boxed, as the rare paths of `run_job`.
            place.step_in().await;
            Box::pin(presenter.present(&durable.run_id, &mut result)).await;
        }
        result
    }
}

/// Runs one call through the rest of its path and returns its result. The call holds
/// `place` while the app's code runs for it, and gives it up while it waits for the store.
#[allow(clippy::manual_async_fn)] // see `run_call`
pub fn run_job<'a>(
    mut job: Job,
    guards: &'a Guards,
    access: Option<&'a AccessMemo>,
    d: &'a CallDurable,
    place: &'a mut Place,
) -> impl Future<Output = Box<CallResult>> + Send + 'a {
    async move {
        // Boxed from the start: the result is built in place and handed back as a pointer.
        let mut result = Box::new(CallResult::refused(
            job.id.as_ref(),
            job.tool.spec.name.clone(),
            Envelope::Ok(Value::Null),
        ));
        result.repaired = job.repaired;
        result.parent = job.parent.clone();

        // A decided approval: the approved arguments take the whole path from here.
        if let Err(e) = durable::approved_input(d, &mut job) {
            job.refuse(&mut result, Envelope::Error(e));
            return result;
        }

        // Step 3: hidden arguments and resolvers, before validation. Static access (step 5's
        // flags, roles, scopes) runs first: see guard/mod.rs.
        if guard::admit(guards, access, &mut job, &mut result)
            .await
            .is_break()
        {
            return result;
        }

        // Step 4: validate against the schema compiled at registration, then fill in its
        // defaults for what the model left out.
        if !job.tool.input.is_valid(&job.arguments)
            && let Some(envelope) = arguments_envelope(job.tool.input.check(&job.arguments))
        {
            result.envelope = envelope;
            result.finished_us = job.since_start();
            result.arguments = Some(job.arguments);
            return result;
        }
        if let Some(defaults) = &job.tool.defaults {
            result.defaults = defaults.apply(&mut job.arguments, &job.tool.input).into();
        }

        // Step 5: access (the policy hook over the final arguments).
        if guard::authorize(guards, &mut job, &mut result)
            .await
            .is_break()
        {
            return result;
        }
        // Step 7: the read cache (a hit is not charged against the rate limits).
        let cache_slot = match guard::cache_lookup(guards, &mut job, &mut result).await {
            ControlFlow::Break(()) => return result,
            ControlFlow::Continue(slot) => slot,
        };
        // Steps 7 (idempotency), 6 (rate limits, charged once nothing but running can answer
        // the call) and 8 (approval): see durable/mod.rs.
        let limiter = guards.rate_limiter.as_ref();
        let guarded = durable::before(d, limiter, &mut job, &mut result, place).await;
        if !guarded.proceed {
            result.finished_us = job.since_start();
            result.arguments = Some(job.arguments);
            durable::after(d, guarded, &mut result, place).await;
            return result;
        }
        place.step_in().await;

        // Step 9: execute, or hand over to whoever runs client-side tools.
        let Some(handler) = job.tool.handler.clone() else {
            // The rare paths below are boxed: inline, each made every call's future larger.
            Box::pin(durable::external::park(d, &job, &mut result)).await;
            result.finished_us = job.since_start();
            result.arguments = Some(job.arguments);
            durable::after(d, guarded, &mut result, place).await;
            return result;
        };
        let policy = &job.tool.spec.policy;
        let timeout = policy.timeout_duration();
        // The clock is read once as the call starts and once as it ends: each read is a
        // system call's worth of work on some machines, on every call.
        let started = Instant::now();
        result.started_us = Some(job.micros_at(started));
        let mut attempt = 0;
        let mut accepted = None;
        let envelope = loop {
            attempt += 1;
            job.emit(|at_us| Event::CallStarted {
                at_us,
                call_id: job.id.to_string(),
                tool: job.tool.spec.name.clone(),
                attempt,
            });
            let attempt_cancel = job.cancel.child_token();
            let ctx = ToolContext {
                call_id: job.id.clone(),
                tool: job.tool.name.clone(),
                attempt,
                caller: job.caller.clone(),
                cancel: attempt_cancel.clone(),
                host: job.host.clone(),
                run_id: d.run_id.clone(),
                app_key: d.idempotency_key.as_deref().map(Arc::from),
                progress: match (&job.events, &job.progress) {
                    // Unheard without cloning the tool's name: the common case, on every call.
                    (None, None) => Progress::default(),
                    (events, progress) => Progress::to_events(
                        events.iter().chain(progress).cloned().collect(),
                        job.id.clone(),
                        job.tool.spec.name.clone(),
                        job.batch_start,
                    ),
                },
                tools: job.door.as_ref().and_then(|door| {
                    door.for_call(Calling {
                        run_id: &d.run_id,
                        call_id: &job.id,
                        tool: &job.tool.spec.name,
                        may_call: &job.tool.spec.policy.may_call,
                        caller: job.caller.clone(),
                        cancel: attempt_cancel.clone(),
                        timeout,
                        host: job.host.clone(),
                    })
                }),
            };
            let run = AssertUnwindSafe(handler.call_ref(&job.arguments, ctx)).catch_unwind();
            let outcome = match timeout {
                Some(limit) => match tokio::time::timeout(limit, run).await {
                    Ok(done) => done,
                    Err(_) => {
                        attempt_cancel.cancel();
                        Ok(Err(HandlerError::Tool(ToolError::new(
                            ErrorCode::Timeout,
                            format!("the tool did not finish within {} ms", limit.as_millis()),
                        ))))
                    }
                },
                None => run.await,
            };
            let failure = match outcome {
                Ok(Ok(data)) => break check_output(&job.tool, data),
                Ok(Err(HandlerError::Needs(fields))) => break Envelope::Needs(fields),
                Ok(Err(HandlerError::Accepted { job: reference })) => {
                    accepted = Some(reference);
                    break Envelope::Ok(Value::Null);
                }
                Ok(Err(HandlerError::Tool(err))) => {
                    let (err, note) = crate::output::bounded_error(err);
                    if note.is_some() {
                        result.detail = note;
                    }
                    err
                }
                Ok(Err(HandlerError::Unexpected { detail })) => {
                    result.detail = Some(detail);
                    ToolError::new(ErrorCode::InternalError, UNEXPECTED_MESSAGE)
                }
                Err(panic) => {
                    result.detail = Some(format!("handler panicked: {}", panic_message(&panic)));
                    ToolError::new(ErrorCode::InternalError, UNEXPECTED_MESSAGE)
                }
            };
            if attempt >= policy.retry.attempts
                || !policy.retry.should_retry(failure.code, failure.retryable)
            {
                break Envelope::Error(failure);
            }
            let delay = policy.retry.delay_before(attempt + 1);
            job.emit(|at_us| Event::CallRetried {
                at_us,
                call_id: job.id.to_string(),
                tool: job.tool.spec.name.clone(),
                attempt,
                delay_ms: delay.as_millis() as u64,
                error: failure.clone(),
            });
            // Boxed, as the other rare paths: a sleep and a cancellation waiter are large.
            let cancelled = Box::pin(async {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => false,
                    _ = job.cancel.cancelled() => true,
                }
            });
            if cancelled.await {
                break Envelope::Error(failure);
            }
        };
        result.attempts = attempt;
        let ended = Instant::now();
        result.duration_us = ended.duration_since(started).as_micros() as u64;
        result.envelope = envelope;
        // A job the handler accepted has not succeeded yet: no `on_success` for it.
        let follow_up =
            (job.tool.on_success.is_some() && accepted.is_none()).then(|| HookSite::of(&job));
        result.finished_us = job.micros_at(ended);
        if let Some(reference) = accepted {
            Box::pin(durable::background_job::park(
                d,
                &job,
                reference,
                &mut result,
            ))
            .await;
            result.finished_us = job.since_start();
        }
        result.arguments = Some(job.arguments);
        durable::after(d, guarded, &mut result, place).await;
        guard::cache_store(guards, cache_slot, &result).await;
        // Once the result is recorded, so a duplicate replays it instead of running this again.
        if let Some(site) = follow_up {
            place.step_in().await;
            Box::pin(on_success::follow(site, &d.run_id, &mut result)).await;
        }
        // Step 11: audit (the driver builds the record as it settles the result) and compensations
        // (the run records completed calls when the batch settles).
        result
    }
}

/// What a caught panic said: its message, when it carried one (a `&str` or a `String`).
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".into()
    }
}
