//! Guardrails: access, hidden arguments, rate limits, the read cache, audit and telemetry.
//!
//! This module gathers what an engine holds for them ([`Guards`]) and the calls `execute.rs`
//! and the batch driver make at their step comments; each guard's own logic is in the file
//! named for it. The order within a call:
//!
//! 1. static access (enabled flags, roles, scopes) — before any app code runs for the call,
//!    so a caller who may not use a tool cannot make its resolvers run or leak candidates;
//!    decided once per tool in a batch (`access_memo.rs`);
//! 2. hidden arguments and resolvers (step 3), then validation (step 4, in `execute.rs`);
//! 3. the policy hook (the rest of step 5), over the final arguments;
//! 4. the read cache (step 7): a hit answers without running, and is not charged;
//! 5. rate limits (step 6), charged by the durable guard once nothing can answer the call
//!    but running it (see `rate_limit.rs`), so a replay is never charged and an approved
//!    call is charged once;
//! 6. audit and telemetry where the engine settles a result (step 11), planning refusals included.

pub mod access;
pub mod access_memo;
pub mod audit;
pub mod cache;
#[cfg(feature = "redis")]
pub mod cache_redis;
pub mod hidden;
pub mod rate_limit;
#[cfg(feature = "redis")]
pub mod rate_limit_redis;
pub mod telemetry;

use crate::call::CallResult;
use crate::caller::Caller;
use crate::envelope::Envelope;
use crate::error_code::ErrorCode;
use crate::handler::{HandlerError, UNEXPECTED_MESSAGE};
use crate::job::Job;
use crate::policy::Policy;
use access::{AccessRequest, PolicyHook, Settings};
use access_memo::AccessMemo;
use arc_swap::ArcSwap;
use audit::{AuditEntry, AuditSink, Outcome};
use cache::{InProcessCache, ResultCache};
use hidden::Resolvers;
use rate_limit::{InProcessLimiter, RateLimiter};
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use telemetry::Telemetry;

/// What an engine holds for the guard steps. Cheap to clone (all shared).
#[derive(Clone)]
pub struct Guards {
    pub(crate) settings: Arc<ArcSwap<Settings>>,
    pub(crate) resolvers: Arc<ArcSwap<Resolvers>>,
    pub(crate) policy_hook: Option<Arc<dyn PolicyHook>>,
    pub(crate) rate_limiter: Arc<dyn RateLimiter>,
    pub(crate) cache: Arc<dyn ResultCache>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    pub(crate) telemetry: Arc<Telemetry>,
}

impl Default for Guards {
    fn default() -> Self {
        Guards {
            settings: Default::default(),
            resolvers: Default::default(),
            policy_hook: None,
            rate_limiter: Arc::new(InProcessLimiter::new()),
            cache: Arc::new(InProcessCache::default()),
            audit: None,
            telemetry: Default::default(),
        }
    }
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guards")
            .field("settings", &self.settings.load())
            .field(
                "resolvers",
                &self.resolvers.load().keys().collect::<Vec<_>>(),
            )
            .field("policy_hook", &self.policy_hook.is_some())
            .field("audit", &self.audit.is_some())
            .finish_non_exhaustive()
    }
}

/// What the cache step leaves for the step that stores the result.
pub struct CacheSlot {
    key: String,
    ttl: Duration,
}

fn refuse(job: &mut Job, result: &mut CallResult, envelope: Envelope) -> ControlFlow<()> {
    job.refuse(result, envelope);
    ControlFlow::Break(())
}

fn unexpected(result: &mut CallResult, detail: String) -> Envelope {
    result.detail = Some(detail);
    Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE)
}

/// Static access (decided once per tool for the batch, in `access`, when the batch has more
/// than one call), then hidden arguments and resolvers (before validation). `Break` means the
/// call was refused and `result` says why.
pub async fn admit(
    guards: &Guards,
    access: Option<&AccessMemo>,
    job: &mut Job,
    result: &mut CallResult,
) -> ControlFlow<()> {
    if job.tool.spec.policy.internal && job.parent.is_none() {
        return refuse(
            job,
            result,
            Envelope::Error(access::internal(&job.tool.spec.name)),
        );
    }
    let settings = guards.settings.load();
    let allowed = match access {
        Some(memo) => memo.check(&job.tool, &job.caller, &settings),
        None => access::check(&job.tool.spec, &job.caller, &settings),
    };
    if let Err(e) = allowed {
        return refuse(job, result, Envelope::Error(e));
    }
    if job.tool.spec.policy.hidden.is_empty() {
        return ControlFlow::Continue(());
    }
    let resolvers = guards.resolvers.load_full();
    // Boxed: inline, the resolvers' future made every call's future larger, hidden
    // arguments or not.
    match Box::pin(hidden::apply(
        &job.tool.spec,
        &job.id,
        &job.caller,
        &resolvers,
        &mut job.arguments,
        job.host.clone(),
    ))
    .await
    {
        Ok(notes) => {
            result.hidden = notes;
            ControlFlow::Continue(())
        }
        Err(refusal) => {
            if let Some(d) = refusal.detail {
                result.detail = Some(d);
            }
            refuse(job, result, refusal.envelope)
        }
    }
}

/// The policy hook over the final arguments (after validation).
pub async fn authorize(guards: &Guards, job: &mut Job, result: &mut CallResult) -> ControlFlow<()> {
    let policy = &job.tool.spec.policy;
    if let Some(hook) = &guards.policy_hook {
        let request = AccessRequest {
            tool: job.tool.name.clone(),
            call_id: job.id.clone(),
            arguments: job.arguments.clone(),
            caller: job.caller.clone(),
            risk: policy.risk,
            effect: policy.effect,
        };
        let envelope = match hook.check(request, job.host.clone()).await {
            Ok(d) if d.allow => None,
            Ok(d) => Some(Envelope::Error(access::denial(&job.tool.spec.name, d))),
            Err(HandlerError::Tool(e)) => Some(Envelope::Error(crate::output::bounded_error(e).0)),
            Err(HandlerError::Needs(fields)) => Some(Envelope::Needs(fields)),
            Err(HandlerError::Unexpected { detail }) => {
                Some(unexpected(result, format!("policy hook failed: {detail}")))
            }
            Err(HandlerError::Accepted { job: j }) => Some(unexpected(
                result,
                format!("policy hook answered accepted({j:?}), which only a handler may"),
            )),
        };
        if let Some(envelope) = envelope {
            return refuse(job, result, envelope);
        }
    }
    ControlFlow::Continue(())
}

/// The read cache: `Break` when the result came from it (`cached: true`, the handler does
/// not run); otherwise the slot to store a fresh result in, when the tool caches.
pub async fn cache_lookup(
    guards: &Guards,
    job: &mut Job,
    result: &mut CallResult,
) -> ControlFlow<(), Option<CacheSlot>> {
    let Some(policy) = &job.tool.spec.policy.cache else {
        return ControlFlow::Continue(None);
    };
    let Some(key) = cache::key(&job.tool.spec.name, policy, &job.caller, &job.arguments) else {
        return ControlFlow::Continue(None);
    };
    if let Some(data) = guards.cache.get(&key).await {
        result.cached = true;
        let _ = refuse(job, result, Envelope::Ok(data));
        return ControlFlow::Break(());
    }
    ControlFlow::Continue(Some(CacheSlot {
        key,
        ttl: Duration::from_millis(policy.ttl_ms),
    }))
}

/// Stores a successful result in the slot the lookup left.
pub async fn cache_store(guards: &Guards, slot: Option<CacheSlot>, result: &CallResult) {
    if let (Some(slot), Envelope::Ok(data)) = (slot, &result.envelope) {
        guards.cache.put(slot.key, data.clone(), slot.ttl).await;
    }
}

impl Guards {
    /// Step 11: counts one settled result (telemetry). Called by the batch's driver: the
    /// counters stay on one thread instead of bouncing between the call tasks' cores.
    pub fn count(&self, result: &CallResult) {
        self.telemetry.record(result, Outcome::of(result));
    }

    /// Step 11: the audit record of a settled result, when the engine audits
    /// ([`Guards::hand_over`] gives records to the sink). `policy` is the tool's (none when
    /// unknown); `raw_arguments` are the model's, for results that carry no parsed ones.
    pub fn audit_record(
        &self,
        result: &CallResult,
        caller: &Caller,
        policy: Option<&Policy>,
        raw_arguments: Option<&Value>,
    ) -> Option<AuditEntry> {
        self.audit
            .is_some()
            .then(|| AuditEntry::of_result(result, caller, policy, raw_arguments))
    }

    /// Hands audit records to the sink, in order, without waiting.
    pub fn hand_over(&self, records: Vec<AuditEntry>) {
        if let (Some(audit), false) = (&self.audit, records.is_empty()) {
            audit.record_all(records);
        }
    }

    /// Hands one record to the audit sink, if one is set.
    pub fn hand_over_one(&self, record: AuditEntry) {
        if let Some(audit) = &self.audit {
            audit.record(record);
        }
    }

    /// Whether an audit sink is set (the engine keeps the raw arguments for it).
    pub fn audits(&self) -> bool {
        self.audit.is_some()
    }

    /// Waits until the audit records handed over so far are durable. A failure is logged
    /// and counted; the batch's results are returned all the same.
    pub async fn flush(&self) {
        if let Some(audit) = &self.audit
            && let Err(e) = audit.flush().await
        {
            tracing::error!(target: "tooljig::audit", error = %e, "audit records could not be made durable");
        }
    }
}
