//! The guard steps of one call, gathered: what an engine holds for them ([`Guards`]), the
//! builder methods that set them, and the calls `execute.rs` and `engine.rs` make at their
//! step comments. The order within a call:
//!
//! 1. static access (enabled flags, roles, scopes) — before any app code runs for the call,
//!    so a caller who may not use a tool cannot make its resolvers run or leak candidates;
//! 2. hidden arguments and resolvers (step 3), then validation (step 4, in `execute.rs`);
//! 3. the policy hook (the rest of step 5), over the final arguments;
//! 4. rate limits (step 6), then the read cache (step 7);
//! 5. audit and telemetry where the engine settles a result (step 11), planning refusals included.

use crate::access::{self, AccessRequest, PolicyHook, Settings};
use crate::audit::{AuditEntry, AuditRecord, AuditSink, Outcome};
use crate::cache::{self, InProcessCache, ResultCache};
use crate::call::CallResult;
use crate::caller::Caller;
use crate::engine::Engine;
use crate::envelope::{Envelope, ToolError};
use crate::error_code::ErrorCode;
use crate::execute::{Job, UNEXPECTED_MESSAGE};
use crate::handler::HandlerError;
use crate::hidden::{self, Resolver, Resolvers};
use crate::policy::Policy;
use crate::rate_limit::{InProcessLimiter, RateDecision, RateLimiter, RateRequest};
use crate::spec::ToolSpec;
use crate::telemetry::{Telemetry, TelemetrySnapshot};
use arc_swap::ArcSwap;
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// What an engine holds for the guard steps. Cheap to clone (all shared).
#[derive(Clone)]
pub struct Guards {
    settings: Arc<ArcSwap<Settings>>,
    resolvers: Arc<ArcSwap<Resolvers>>,
    policy_hook: Option<Arc<dyn PolicyHook>>,
    rate_limiter: Arc<dyn RateLimiter>,
    cache: Arc<dyn ResultCache>,
    audit: Option<Arc<dyn AuditSink>>,
    telemetry: Arc<Telemetry>,
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
    result.envelope = envelope;
    result.finished_us = job.batch_start.elapsed().as_micros() as u64;
    result.arguments = Some(std::mem::take(&mut job.arguments));
    ControlFlow::Break(())
}

fn unexpected(result: &mut CallResult, detail: String) -> Envelope {
    result.detail = Some(detail);
    Envelope::error(ErrorCode::InternalError, UNEXPECTED_MESSAGE)
}

/// Static access, then hidden arguments and resolvers (before validation). `Break` means
/// the call was refused and `result` says why.
pub async fn admit(job: &mut Job, result: &mut CallResult) -> ControlFlow<()> {
    let guards = job.guards.clone();
    if let Err(e) = access::check(&job.tool.spec, &job.caller, &guards.settings.load()) {
        return refuse(job, result, Envelope::Error(e));
    }
    if job.tool.spec.policy.hidden.is_empty() {
        return ControlFlow::Continue(());
    }
    let resolvers = guards.resolvers.load_full();
    match hidden::apply_hosted(
        &job.tool.spec,
        &job.id,
        &job.caller,
        &resolvers,
        &mut job.arguments,
        job.host.clone(),
    )
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

/// The policy hook over the final arguments, then the rate limits (after validation).
pub async fn authorize(job: &mut Job, result: &mut CallResult) -> ControlFlow<()> {
    let guards = job.guards.clone();
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
        let envelope = match hook.check_hosted(request, job.host.clone()).await {
            Ok(d) if d.allow => None,
            Ok(d) => Some(Envelope::Error(access::denial(&job.tool.spec.name, d))),
            Err(HandlerError::Tool(e)) => Some(Envelope::Error(e)),
            Err(HandlerError::Needs(fields)) => Some(Envelope::Needs(fields)),
            Err(HandlerError::Unexpected { detail }) => {
                Some(unexpected(result, format!("policy hook failed: {detail}")))
            }
        };
        if let Some(envelope) = envelope {
            return refuse(job, result, envelope);
        }
    }
    for limit in &policy.rate_limits {
        let request = RateRequest {
            tool: job.tool.name.clone(),
            key: limit.key(&job.caller),
            limit: limit.clone(),
        };
        if let RateDecision::Limited { retry_after } = guards.rate_limiter.acquire(request).await {
            // Round up: retrying after a rounded-down wait would be refused again.
            let ms = retry_after.as_micros().div_ceil(1000).max(1) as u64;
            let e = ToolError::new(
                ErrorCode::RateLimited,
                format!(
                    "too many calls of {:?}; wait {ms} ms before calling it again",
                    job.tool.spec.name
                ),
            )
            .with("retry_after_ms", ms);
            return refuse(job, result, Envelope::Error(e));
        }
    }
    ControlFlow::Continue(())
}

/// The read cache: `Break` when the result came from it (`cached: true`, the handler does
/// not run); otherwise the slot to store a fresh result in, when the tool caches.
pub async fn cache_lookup(
    job: &mut Job,
    result: &mut CallResult,
) -> ControlFlow<(), Option<CacheSlot>> {
    let Some(policy) = &job.tool.spec.policy.cache else {
        return ControlFlow::Continue(None);
    };
    let Some(key) = cache::key(&job.tool.spec.name, policy, &job.caller, &job.arguments) else {
        return ControlFlow::Continue(None);
    };
    if let Some(data) = job.guards.cache.get(&key).await {
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
            .then(|| AuditRecord::from_result(result, caller, policy, raw_arguments).into())
    }

    /// Hands audit records to the sink, in order, without waiting.
    pub fn hand_over(&self, records: Vec<AuditEntry>) {
        if let (Some(audit), false) = (&self.audit, records.is_empty()) {
            audit.record_all(records);
        }
    }

    /// Whether an audit sink is set (the engine keeps the raw arguments for it).
    pub fn audits(&self) -> bool {
        self.audit.is_some()
    }

    /// Waits until the audit records handed over so far are durable. A failure is logged
    /// and counted; the batch's results are returned all the same.
    pub async fn flush(&self) {
        if let Some(audit) = &self.audit {
            if let Err(e) = audit.flush().await {
                tracing::error!(target: "tooljig::audit", error = %e, "audit records could not be made durable");
            }
        }
    }
}

/// Builders and accessors of the guard pieces (docs/guardrails.md).
impl Engine {
    fn guards_mut(&mut self) -> &mut Guards {
        Arc::make_mut(&mut self.guards)
    }

    /// Writes an audit record for every call to `sink` (e.g. [`crate::audit::SqliteAudit`]).
    pub fn with_audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.guards_mut().audit = Some(sink);
        self
    }

    /// Replaces the in-process rate limiter (e.g. with a shared one).
    pub fn with_rate_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
        self.guards_mut().rate_limiter = limiter;
        self
    }

    /// Replaces the in-process result cache (e.g. with a shared one).
    pub fn with_cache(mut self, cache: Arc<dyn ResultCache>) -> Self {
        self.guards_mut().cache = cache;
        self
    }

    /// Sets the app's policy hook, asked about every call that passed the static checks.
    pub fn with_policy_hook(mut self, hook: Arc<dyn PolicyHook>) -> Self {
        self.guards_mut().policy_hook = Some(hook);
        self
    }

    /// Registers a resolver under `name` (see [`crate::hidden::HiddenParam::Resolver`]).
    pub fn with_resolver(self, name: impl Into<String>, resolver: Arc<dyn Resolver>) -> Self {
        self.add_resolver(name, resolver);
        self
    }

    /// Registers (or replaces) a resolver on a running engine.
    pub fn add_resolver(&self, name: impl Into<String>, resolver: Arc<dyn Resolver>) {
        let name = name.into();
        self.guards.resolvers.rcu(|old| {
            let mut new = Resolvers::clone(old);
            new.insert(name.clone(), resolver.clone());
            new
        });
    }

    /// Sets the enabled flags (system, tenant, department, user).
    pub fn with_settings(self, settings: Settings) -> Self {
        self.set_settings(settings);
        self
    }

    /// Replaces the enabled flags of a running engine; the next batch sees them.
    pub fn set_settings(&self, settings: Settings) {
        self.guards.settings.store(Arc::new(settings));
    }

    /// The enabled flags in force.
    pub fn settings(&self) -> Arc<Settings> {
        self.guards.settings.load_full()
    }

    /// The audit sink, if any: query and verify through it.
    pub fn audit(&self) -> Option<&Arc<dyn AuditSink>> {
        self.guards.audit.as_ref()
    }

    /// Counters and latency histograms per tool, so far.
    pub fn telemetry(&self) -> TelemetrySnapshot {
        self.guards.telemetry.snapshot()
    }

    /// Whether `caller` may see the tool `spec`: the same test [`Engine::specs_for`] applies.
    pub fn visible_to<'a>(&'a self, caller: &'a Caller) -> impl Fn(&ToolSpec) -> bool + 'a {
        let settings = self.guards.settings.load_full();
        move |spec| access::check(spec, caller, &settings).is_ok()
    }

    /// The specs to hand a model for `caller`: only the tools this caller may use (enabled,
    /// role, scopes; the policy hook is asked per call, with the arguments), each with its
    /// hidden parameters removed from the input schema.
    pub fn specs_for(&self, caller: &Caller) -> Vec<ToolSpec> {
        let visible = self.visible_to(caller);
        self.registry()
            .specs()
            .iter()
            .filter(|s| visible(s))
            .map(hidden::model_facing)
            .collect()
    }
}
