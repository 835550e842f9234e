//! What Python's cycle collector sees of a native engine.
//!
//! A handler that holds its own engine (a closure over it, a method of an object that keeps
//! it) makes a cycle that runs through Rust: the native engine holds the handler's callable.
//! The collector frees a cycle only when each object in it reports what it holds, so the
//! native engine reports the app's callables it alone holds (`Engine::visit_sole_parts` in
//! the core). A callable anything else also holds (a call in flight, a batch, an MCP server
//! serving the engine) is not reported: reported, it could be taken for garbage while in use.
//! Not reported, it only stays alive, as every object did before. A model over a Python
//! callable reports it the same way (`model/mod.rs`), and an agent its engine, models and
//! hooks (`agent/mod.rs`).

use crate::handler::PyHandler;
use crate::seams::{PyApprovalPredicate, PyPolicyHook, PyResolver};
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use std::any::Any;
use std::sync::Arc;
use tooljig::{Engine, Handler};

/// Visits the app's callables only `engine` holds, when nothing but the visited object holds
/// `engine`. Called from `tp_traverse`: it takes no lock that may be held and touches no
/// Python object but to visit it.
pub fn traverse(engine: &Arc<Engine>, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    if Arc::strong_count(engine) != 1 {
        return Ok(());
    }
    let mut result = Ok(());
    engine.visit_sole_parts(&mut |part| {
        if result.is_ok() {
            result = visit_sole(part, 1, visit);
        }
    });
    result
}

/// Visits the callable of a Python handler when nothing else holds the handler or it.
pub fn traverse_handler(
    handler: &Arc<dyn Handler>,
    visit: &PyVisit<'_>,
) -> Result<(), PyTraverseError> {
    visit_sole(
        handler.as_ref() as &dyn Any,
        Arc::strong_count(handler),
        visit,
    )
}

/// Visits the Python callable behind `part` when `part` has one owner (`owners`) and the
/// callable none but `part`.
fn visit_sole(part: &dyn Any, owners: usize, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    match callable_of(part) {
        Some(callable) if owners == 1 && Arc::strong_count(callable) == 1 => {
            visit.call(&**callable)
        }
        _ => Ok(()),
    }
}

/// The Python callable behind a part (a handler, a hook), if it is one of this binding's.
fn callable_of(part: &dyn Any) -> Option<&Arc<Py<PyAny>>> {
    if let Some(handler) = part.downcast_ref::<PyHandler>() {
        return Some(handler.callable());
    }
    if let Some(hook) = part.downcast_ref::<PyPolicyHook>() {
        return Some(hook.callable());
    }
    if let Some(resolver) = part.downcast_ref::<PyResolver>() {
        return Some(resolver.callable());
    }
    part.downcast_ref::<PyApprovalPredicate>()
        .map(PyApprovalPredicate::callable)
}
