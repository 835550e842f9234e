//! Building an engine: one `with_*` method for each thing an app may set, each taking the
//! engine and giving it back, so a setup reads as one chain. Settings that a running engine
//! may change too have a `set_*`/`add_*` twin on `&self` (`guardrails.rs`).
//!
//! From data (a binding's options, a config file) the same setup is [`EngineOptions`]
//! (`options.rs`), which ends in these methods.
//!
//! [`EngineOptions`]: super::EngineOptions

use super::Engine;
use crate::arguments::Limits;
use crate::durable::Durable;
use crate::durable::approval::ApprovalPredicate;
use crate::durable::store::StateStore;
use crate::guard::Guards;
use crate::guard::access::{PolicyHook, Settings};
use crate::guard::audit::AuditSink;
use crate::guard::cache::ResultCache;
use crate::guard::hidden::Resolver;
use crate::guard::rate_limit::RateLimiter;
use crate::policy::ApprovalRules;
use crate::schema::SchemaResources;
use std::sync::Arc;

impl Engine {
    fn guards_mut(&mut self) -> &mut Guards {
        Arc::make_mut(&mut self.guards)
    }

    fn durable_mut(&mut self) -> &mut Durable {
        Arc::make_mut(&mut self.durable)
    }

    /// Lets schemas `$ref` these in-memory documents (nothing is fetched over the network);
    /// applies to tools registered from now on.
    pub fn with_schema_resources(mut self, resources: SchemaResources) -> Self {
        self.registry.set_resources(resources);
        self
    }

    /// Sets the argument size and depth limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the enabled flags (system, tenant, department, user).
    pub fn with_settings(self, settings: Settings) -> Self {
        self.set_settings(settings);
        self
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

    /// Registers a resolver under `name` (see [`crate::HiddenParam::Resolver`]).
    pub fn with_resolver(self, name: impl Into<String>, resolver: Arc<dyn Resolver>) -> Self {
        self.add_resolver(name, resolver);
        self
    }

    /// Keeps durable state (idempotency records, approvals, runs, compensations) in `store`,
    /// e.g. a [`crate::store::SqliteStore`] shared by several processes. Without one, an
    /// in-memory store serves this process only. With one, every batch is a run that can
    /// be resumed or rolled back by id.
    pub fn with_state_store(mut self, store: Arc<dyn StateStore>) -> Self {
        let d = self.durable_mut();
        // Waiters in other processes sharing the store hear of changes through its bus.
        d.wakeups = Arc::new(crate::durable::wakeup::Wakeups::new(store.wake_bus()));
        d.store = store;
        d.explicit_store = true;
        self
    }

    /// Seals stored approval decisions with the app's secret key (HMAC-SHA256), so a
    /// decision edited in the store, or written there by someone without the key, is
    /// refused instead of run. Give the same key to the audit sink
    /// ([`AuditOptions::key`](crate::audit::AuditOptions)) to seal its chain; the
    /// `seal_key` option does both.
    pub fn with_seal_key(mut self, key: crate::seal::SealKey) -> Self {
        self.durable_mut().seal_key = Some(key);
        self
    }

    /// How long a run's lease lasts without a heartbeat (15 s by default): after a process
    /// running a run dies, another may take the run over this long after its last beat.
    /// Shorter takes over sooner; the heartbeat renews every third of it.
    pub fn with_run_lease_ms(mut self, ms: u64) -> Self {
        self.durable_mut().lease_ms = ms.max(30);
        self
    }

    /// Sets the engine-wide approval rules (risk threshold).
    pub fn with_approval_rules(mut self, rules: ApprovalRules) -> Self {
        self.durable_mut().rules = rules;
        self
    }

    /// Sets the app's approval predicate, consulted for tools whose requirement is `auto`.
    pub fn with_approval_predicate(mut self, predicate: Arc<dyn ApprovalPredicate>) -> Self {
        self.durable_mut().predicate = Some(predicate);
        self
    }

    /// Sets how long client-side calls wait for a submitted result (default 24 h).
    pub fn with_external_expiry_ms(mut self, ms: u64) -> Self {
        self.durable_mut().external_expiry_ms = ms;
        self
    }
}
