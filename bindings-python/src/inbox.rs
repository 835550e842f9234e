//! The approval inbox from Python: `engine.serve_inbox(...)` starts the command line's inbox
//! (`tooljig_cli::inbox`) on the package's runtime. It runs no Python code, so it needs no
//! event loop.

use crate::convert;
use crate::error;
use crate::runtime;
use pyo3::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::{Caller, CancellationToken, Engine};

/// A running inbox.
#[pyclass(name = "InboxServer", module = "tooljig._native", frozen)]
pub struct PyInboxServer {
    url: String,
    stop: CancellationToken,
}

#[pymethods]
impl PyInboxServer {
    /// The inbox's URL.
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops the server.
    fn stop(&self) {
        self.stop.cancel();
    }
}

/// Starts the inbox on `bind` for the operators `tokens` names (token → caller).
pub fn serve(
    py: Python<'_>,
    engine: Arc<Engine>,
    tokens: &Bound<'_, PyAny>,
    bind: String,
) -> PyResult<PyInboxServer> {
    let tokens: Value =
        convert::from_py_as(tokens).map_err(|e| error::invalid_input(py, "tokens", e))?;
    let tokens: HashMap<String, Caller> = serde_json::from_value(tokens)
        .map_err(|e| error::invalid_input(py, "tokens", e.to_string()))?;
    let (handle, root) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    let stop = root.child_token();
    let running = py
        .detach(|| {
            handle.block_on(tooljig_cli::inbox::serve(
                engine,
                tokens,
                &bind,
                stop.clone(),
            ))
        })
        .map_err(|e| error::invalid_input(py, "engine.serve_inbox()", e))?;
    Ok(PyInboxServer {
        url: format!("http://{}/", running.addr),
        stop,
    })
}
