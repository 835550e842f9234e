//! A callable's JSON argument on its way to the loop thread that calls it (`host.rs`).

use crate::convert;
use pyo3::prelude::*;
use serde_json::Value;
use std::borrow::Cow;

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
