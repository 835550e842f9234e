//! The app's objects an engine alone holds, for a host language's cycle collector.
//!
//! A Python handler that holds its own engine is a reference cycle through Rust: the engine
//! holds the handler, the handler's closure holds the engine. Python's collector frees such a
//! cycle only if every object in it reports what it holds, so the engine's Python object must
//! report the app's callables inside the engine. It may report only references that are the
//! engine's alone: a collector told of one that something else also holds (a batch in flight,
//! a snapshot of the tools, a clone of the guards) could take a live object for garbage and
//! clear it.
//! So every shared pointer on the way down is checked to have no other owner, and a part that
//! is shared, or behind a lock someone holds, is left out: leaving one out only keeps it alive.

use super::Engine;
use std::any::Any;
use std::sync::Arc;

impl Engine {
    /// Calls `visit` with each app object this engine holds and nothing else holds right now:
    /// tools' handlers and their `to_model_output` and `on_success` hooks, compensations, the
    /// policy hook, the resolvers and the approval predicate, each as `&dyn Any` for a binding
    /// to downcast to its own types. Never blocks.
    ///
    /// For a binding whose language collects cycles (see the module's doc). It says something
    /// only when the caller holds the engine's one `Arc`: otherwise every part is shared with
    /// whoever holds the other.
    pub fn visit_sole_parts(&self, visit: &mut dyn FnMut(&dyn Any)) {
        // A part is the engine's alone when its own `Arc` has no other owner.
        let mut visit_arc = |part: &dyn Any, owners: usize| {
            if owners == 1 {
                visit(part);
            }
        };
        self.registry.visit_sole_handlers(&mut |handler| {
            visit_arc(handler.as_ref() as &dyn Any, Arc::strong_count(handler))
        });
        if Arc::strong_count(&self.guards) == 1 {
            if let Some(hook) = &self.guards.policy_hook {
                visit_arc(hook.as_ref() as &dyn Any, Arc::strong_count(hook));
            }
            let resolvers = &self.guards.resolvers;
            if Arc::strong_count(resolvers) == 1 {
                let current = resolvers.load_full();
                // Two owners: the `ArcSwap` and `current`.
                if Arc::strong_count(&current) == 2 {
                    for resolver in current.values() {
                        visit_arc(resolver.as_ref() as &dyn Any, Arc::strong_count(resolver));
                    }
                }
            }
        }
        if Arc::strong_count(&self.durable) == 1 {
            if let Some(predicate) = &self.durable.predicate {
                visit_arc(predicate.as_ref() as &dyn Any, Arc::strong_count(predicate));
            }
            let compensations = &self.durable.compensations;
            if Arc::strong_count(compensations) == 1
                && let Ok(compensations) = compensations.try_read()
            {
                for handler in compensations.values() {
                    visit_arc(handler.as_ref() as &dyn Any, Arc::strong_count(handler));
                }
            }
        }
    }
}
