//! MCP from Python: serving an engine's tools (stdio, Streamable HTTP) and registering an MCP
//! server's tools into an engine. Behaviour is the core's (`tooljig::mcp`); this file gives
//! each long-lived thing a [`BatchHost`] on the caller's event loop, so async handlers and the
//! auth hook run there, and resolves a future when it ends. The Pythonic layer is
//! `python/tooljig/mcp.py`.

use crate::convert;
use crate::error;
use crate::host::CancelOnCancelled;
use crate::host::{BatchHost, Msg};
use crate::runtime;
use crate::seams::PyHttpAuth;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tooljig::mcp::{McpClient, McpClientOptions, McpServeOptions, McpServer, McpTarget};
use tooljig::{Engine, ErrorCode, ToolError};

/// A host on the running loop whose future resolves when `work` ends (with its JSON, or
/// raising its refusal as `tooljig.ToolError`).
fn on_loop<'py, F>(
    py: Python<'py>,
    what: &str,
    work: impl FnOnce(Arc<BatchHost>, CancellationToken) -> F,
) -> PyResult<(Bound<'py, PyAny>, Handle)>
where
    F: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    let locals = TaskLocals::with_running_loop(py)
        .map_err(|_| PyRuntimeError::new_err(format!("{what} needs a running event loop")))?
        .copy_context(py)?;
    let (handle, cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    let future = locals
        .event_loop(py)
        .call_method0(intern!(py, "create_future"))?;
    future.call_method1("add_done_callback", (CancelOnCancelled(cancel.clone()),))?;
    let host = BatchHost::start(py, locals, future.clone(), false)?;
    let work = work(host.clone(), cancel);
    handle.spawn(async move {
        let out = work.await;
        host.post(Msg::Reply(out));
    });
    Ok((future, handle))
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::Unavailable, message)
}

/// A running Streamable HTTP server.
#[pyclass(name = "McpServer", module = "tooljig._native", frozen)]
pub struct PyMcpServer {
    url: String,
    stop: CancellationToken,
    stopped: Py<PyAny>,
}

#[pymethods]
impl PyMcpServer {
    /// The endpoint's URL.
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops the server; returns the future that resolves once it stopped.
    fn stop(&self, py: Python<'_>) -> Py<PyAny> {
        self.stop.cancel();
        self.stopped.clone_ref(py)
    }

    /// The future that resolves once the server stopped.
    fn stopped(&self, py: Python<'_>) -> Py<PyAny> {
        self.stopped.clone_ref(py)
    }
}

fn server(
    py: Python<'_>,
    engine: Arc<Engine>,
    options: &Bound<'_, PyAny>,
    auth: Option<(Py<PyAny>, bool)>,
    host: Arc<BatchHost>,
) -> PyResult<McpServer> {
    let options: Value = convert::from_py_as(options)
        .map_err(|e| error::invalid_input(py, "MCP server options", e))?;
    let options = McpServeOptions::from_value(options)
        .map_err(|e| error::invalid_input(py, "MCP server options", e))?;
    let mut server = McpServer::new(engine, options).with_host(host);
    if let Some((hook, is_async)) = auth {
        server = server.with_auth(Arc::new(PyHttpAuth::new(hook, is_async)));
    }
    Ok(server)
}

/// Starts serving over Streamable HTTP; returns the server once it listens (binding is
/// immediate, so this does not block the loop).
pub fn serve_http(
    py: Python<'_>,
    engine: Arc<Engine>,
    options: &Bound<'_, PyAny>,
    auth: Option<(Py<PyAny>, bool)>,
) -> PyResult<PyMcpServer> {
    let locals = TaskLocals::with_running_loop(py)
        .map_err(|_| PyRuntimeError::new_err("engine.serve_mcp() needs a running event loop"))?
        .copy_context(py)?;
    let (handle, cancel) = runtime::for_batch().map_err(|e| error::shutdown(py, e))?;
    let stopped = locals
        .event_loop(py)
        .call_method0(intern!(py, "create_future"))?;
    let host = BatchHost::start(py, locals, stopped.clone(), false)?;
    let server = server(py, engine, options, auth, host.clone())?;
    let running = py
        .detach(|| handle.block_on(server.serve_http()))
        .map_err(|e| error::invalid_input(py, "engine.serve_mcp()", e.0))?;
    let url = running.url().to_string();
    let stop = running.stopper();
    let until = stop.clone();
    handle.spawn(async move {
        tokio::select! {
            _ = until.cancelled() => {}
            _ = cancel.cancelled() => {}
        }
        running.stop().await;
        host.post(Msg::Reply(Ok(Value::Null)));
    });
    Ok(PyMcpServer {
        url,
        stop,
        stopped: stopped.unbind(),
    })
}

/// Serves the client that started this process over stdin and stdout; the future resolves
/// when it disconnects.
pub fn serve_stdio<'py>(
    py: Python<'py>,
    engine: Arc<Engine>,
    options: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = options.clone().unbind();
    let (future, _) = on_loop(py, "engine.serve_mcp_stdio()", |host, cancel| {
        let made = Python::attach(|py| server(py, engine, options.bind(py), None, host));
        async move {
            let server = made.map_err(|e| refused(e.to_string()))?;
            tokio::select! {
                served = server.serve_stdio() => served.map_err(|e| refused(e.0))?,
                _ = cancel.cancelled() => {}
            }
            Ok(Value::Null)
        }
    })?;
    Ok(future)
}

/// A connection to an MCP server whose tools an engine runs.
#[pyclass(name = "McpClient", module = "tooljig._native", frozen)]
pub struct PyMcpClient {
    client: Arc<Mutex<Option<Arc<McpClient>>>>,
}

impl PyMcpClient {
    fn client(&self) -> Result<Arc<McpClient>, ToolError> {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| refused("the MCP client is not connected"))
    }
}

#[pymethods]
impl PyMcpClient {
    /// Connects again (after the server died); resolves when initialized.
    fn reconnect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.client();
        let (future, _) = on_loop(py, "client.reconnect()", |_, _| async move {
            client?.reconnect().await.map_err(|e| refused(e.0))?;
            Ok(Value::Null)
        })?;
        Ok(future)
    }

    /// Closes the connection; its tools answer `unavailable` until reconnected.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.client();
        let (future, _) = on_loop(py, "client.close()", |_, _| async move {
            client?.close().await;
            Ok(Value::Null)
        })?;
        Ok(future)
    }
}

/// Connects to an MCP server and registers its tools into `engine`: returns the client and
/// the future of the registered names.
pub fn connect<'py>(
    py: Python<'py>,
    engine: Arc<Engine>,
    target: &Bound<'py, PyAny>,
    options: &Bound<'py, PyAny>,
) -> PyResult<(PyMcpClient, Bound<'py, PyAny>)> {
    let target: Value =
        convert::from_py_as(target).map_err(|e| error::invalid_input(py, "MCP server", e))?;
    let target =
        McpTarget::from_value(target).map_err(|e| error::invalid_input(py, "MCP server", e.0))?;
    let options: Value = convert::from_py_as(options)
        .map_err(|e| error::invalid_input(py, "MCP client options", e))?;
    let options = McpClientOptions::from_value(options)
        .map_err(|e| error::invalid_input(py, "MCP client options", e))?;
    let slot: Arc<Mutex<Option<Arc<McpClient>>>> = Arc::default();
    let filled = slot.clone();
    let (future, _) = on_loop(py, "engine.connect_mcp()", |_, _| async move {
        let client = McpClient::connect(target, options)
            .await
            .map_err(|e| refused(e.0))?;
        *filled.lock().unwrap_or_else(|p| p.into_inner()) = Some(client.clone());
        let names = client.register(&engine).await.map_err(|e| {
            ToolError::new(ErrorCode::InvalidRequest, e.0).with("reason", "registration")
        })?;
        Ok(Value::from(names))
    })?;
    Ok((PyMcpClient { client: slot }, future))
}
