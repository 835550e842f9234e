//! The guardrails' side of an engine the app talks to (docs/guardrails.md): the enabled
//! flags and resolvers of a running engine, what a caller may see, the audit log and the
//! telemetry counters.

use super::Engine;
use crate::caller::Caller;
use crate::guard::access::{self, Settings};
use crate::guard::audit::AuditSink;
use crate::guard::hidden::{self, Resolver, Resolvers};
use crate::guard::telemetry::TelemetrySnapshot;
use crate::spec::ToolSpec;
use std::sync::Arc;

impl Engine {
    /// Registers (or replaces) a resolver on a running engine.
    pub fn add_resolver(&self, name: impl Into<String>, resolver: Arc<dyn Resolver>) {
        let name = name.into();
        self.guards.resolvers.rcu(|old| {
            let mut new = Resolvers::clone(old);
            new.insert(name.clone(), resolver.clone());
            new
        });
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
