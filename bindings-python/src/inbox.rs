//! The approval inbox from Python: `engine.serve_inbox(...)` starts the command line's inbox
//! (`tooljig_cli::inbox`) on the package's runtime. With bearer tokens it runs no Python code
//! and needs no event loop; an app's auth hook runs on the caller's loop, like the MCP
//! server's.

use crate::convert;
use crate::error;
use crate::host::{BatchHost, Msg};
use crate::runtime;
use crate::seams::PyHttpAuth;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::{Caller, CancellationToken, Engine, HostData, HttpAuth};

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

/// Starts the inbox on `bind` for the operators `auth` (`(hook, is_async)`) accepts, or else
/// those `tokens` names (token → caller).
pub fn serve(
    py: Python<'_>,
    engine: Arc<Engine>,
    tokens: &Bound<'_, PyAny>,
    bind: String,
    auth: Option<(Py<PyAny>, bool)>,
) -> PyResult<PyInboxServer> {
    let (handle, root) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    let stop = root.child_token();
    let (auth, host): (Arc<dyn HttpAuth>, Option<Arc<BatchHost>>) = match auth {
        Some((hook, is_async)) => {
            let locals = TaskLocals::with_running_loop(py)
                .map_err(|_| {
                    PyRuntimeError::new_err(
                        "engine.serve_inbox(auth=...) needs a running event loop",
                    )
                })?
                .copy_context(py)?;
            let stopped = locals
                .event_loop(py)
                .call_method0(intern!(py, "create_future"))?;
            let host = BatchHost::start(py, locals, stopped, false)?;
            (Arc::new(PyHttpAuth::new(hook, is_async)), Some(host))
        }
        None => {
            let tokens: Value =
                convert::from_py_as(tokens).map_err(|e| error::invalid_input(py, "tokens", e))?;
            let tokens: HashMap<String, Caller> = serde_json::from_value(tokens)
                .map_err(|e| error::invalid_input(py, "tokens", e.to_string()))?;
            let auth = tooljig_cli::inbox::tokens(tokens)
                .map_err(|e| error::invalid_input(py, "engine.serve_inbox()", e))?;
            (auth, None)
        }
    };
    let app = tooljig_cli::inbox::router(engine, auth, host.clone().map(|h| h as HostData))
        .map_err(|e| error::invalid_input(py, "engine.serve_inbox()", e))?;
    let running = py
        .detach(|| handle.block_on(tooljig_cli::inbox::serve(app, &bind, stop.clone())))
        .map_err(|e| error::invalid_input(py, "engine.serve_inbox()", e))?;
    if let Some(host) = host {
        // The host's future resolves once the server stopped, releasing the loop's side.
        let task = running.task;
        handle.spawn(async move {
            let _ = task.await;
            host.post(Msg::Reply(Ok(Value::Null)));
        });
    }
    Ok(PyInboxServer {
        url: format!("http://{}/", running.addr),
        stop,
    })
}
