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

    /// Replaces the enabled flags of a running engine; every call that starts after this
    /// sees them, in batches already running too.
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
        move |spec| !spec.policy.internal && access::check(spec, caller, &settings).is_ok()
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

impl Engine {
    /// The tools `caller` may use that best match `query` (their names, descriptions and
    /// parameters; see `tool_search.rs`), best first, at most `limit`, as a model sees them.
    pub fn search_tools(&self, query: &str, limit: usize, caller: &Caller) -> Vec<ToolSpec> {
        let visible = self.visible_to(caller);
        self.registry
            .snapshot()
            .search(query, limit, &visible)
            .iter()
            .map(hidden::model_facing)
            .collect()
    }

    /// [`Engine::search_tools`] as a tool, `search_tools`, for the model to find tools it was
    /// not offered: it takes `{"query", "limit"}` (5 by default, at most 20) and answers the
    /// matching tools the caller may use, `[{"name", "description", "input_schema"}]`,
    /// itself left out. Register it like any tool; it sees tools registered later too, and
    /// finds nothing once this engine is gone (it holds the registry weakly).
    pub fn tool_search(&self) -> crate::tool::Tool {
        let view = self.registry.view();
        let settings = self.guards.settings.clone();
        let mut spec = ToolSpec::new(
            TOOL_SEARCH,
            "Finds tools by what you need done. Answers the best matching tools with their \
             parameters; call them by name.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        );
        spec.policy.effect = crate::policy::Effect::Read;
        let handler = crate::handler::handler_fn(move |args, ctx| {
            let (view, settings) = (view.clone(), settings.clone());
            async move {
                let query = args["query"].as_str().unwrap_or_default();
                let limit = args["limit"].as_u64().unwrap_or(5).clamp(1, 20) as usize;
                let settings = settings.load_full();
                let visible = |spec: &ToolSpec| {
                    spec.name != TOOL_SEARCH && access::check(spec, &ctx.caller, &settings).is_ok()
                };
                let found: Vec<serde_json::Value> = view
                    .snapshot()
                    .search(query, limit, &visible)
                    .iter()
                    .map(hidden::model_facing)
                    .map(|s| {
                        serde_json::json!({
                            "name": s.name, "description": s.description, "input_schema": s.input_schema
                        })
                    })
                    .collect();
                Ok(serde_json::Value::Array(found))
            }
        });
        crate::tool::Tool::new(spec, handler)
    }
}

/// The name [`Engine::tool_search`] registers under.
const TOOL_SEARCH: &str = "search_tools";
