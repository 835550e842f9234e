//! A callable's arguments on their way to the loop thread that calls it (`host.rs`): its JSON
//! request and, for a handler, its context.

use crate::convert;
use pyo3::prelude::*;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use tooljig::ToolContext;

/// A callable's JSON argument on its way to the loop.
pub enum Args {
    /// As the core has it, converted on the loop thread.
    Json(Value),
    /// Converted already: posted from the loop thread while it served the batch, which
    /// converts a value the engine lends right there rather than copying it to convert later.
    Python(Py<PyAny>),
}

impl Args {
    /// `args` for a batch's callable: converted now when this thread serves the batch
    /// (`serving`: it is the loop thread, attached), else owned, for the loop or a worker to
    /// convert.
    pub fn for_batch(args: Cow<'_, Value>, serving: bool) -> Args {
        if !serving {
            return Args::Json(args.into_owned());
        }
        // A conversion that fails is left for the loop to fail again, as the call's outcome.
        Python::attach(|py| convert::to_py(py, &args).map(Bound::unbind))
            .map_or_else(|_| Args::Json(args.into_owned()), Args::Python)
    }

    /// The argument as a Python object.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        match self {
            Args::Json(value) => convert::to_py(py, &value),
            Args::Python(obj) => Ok(obj.into_bound(py)),
        }
    }
}

/// Makes the Python object a handler receives as its context (`context.rs` knows how; this
/// file only runs tasks).
pub type MakeContext = fn(Python<'_>, ToolContext) -> PyResult<Py<PyAny>>;

/// The second argument of an invoker: the attempt's context, or not.
pub enum CtxArg {
    /// None: `invoke(args)`, for app callables that take only their request (policy hook,
    /// resolvers).
    Absent,
    /// `invoke(args, None)`: the handler of `tool` declared no context, so none is made.
    Unused(Arc<str>),
    /// `invoke(args, ctx)`, the context made as `MakeContext` makes it.
    Given(ToolContext, MakeContext),
}

impl CtxArg {
    /// The tool whose handler this is, if it is one.
    pub fn tool(&self) -> Option<&Arc<str>> {
        match self {
            CtxArg::Absent => None,
            CtxArg::Unused(tool) => Some(tool),
            CtxArg::Given(ctx, _) => Some(&ctx.tool),
        }
    }

    /// The second argument, if `invoke` takes one.
    pub fn make<'py>(self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self {
            CtxArg::Absent => None,
            CtxArg::Unused(_) => Some(py.None().into_bound(py)),
            CtxArg::Given(ctx, make) => Some(make(py, ctx)?.into_bound(py)),
        })
    }
}
