//! What a Python handler's return value or exception means for the core.
//!
//! - a value → data (converted to JSON; a value that is not JSON-serializable is an
//!   unexpected failure, with the reason in the detail);
//! - `Needs(...)` raised or returned → the `needs` outcome;
//! - `Accepted(job)` returned or raised → the call waits for the background job (`pending_job`);
//! - `ToolError(code, message, retryable, **details)` raised or returned → that error, shown
//!   to the model as is;
//! - `InvalidArguments((path, message), ...)` raised → the core's `invalid_arguments` error;
//! - any other exception → an unexpected failure: the model sees a sanitized message, the
//!   traceback goes to `CallResult.detail` for the app.

use crate::convert;
use crate::error::classes;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::{Map, Value};
use std::str::FromStr;
use tooljig::{ErrorCode, HandlerError, HandlerResult, ToolError, Violation};

/// What a handler returned, read as the core's outcome.
pub fn from_value(obj: &Bound<'_, PyAny>) -> HandlerResult {
    let py = obj.py();
    // A plain JSON value (the common case) is none of the classes below.
    let plain = obj.is_none()
        || obj.is_exact_instance_of::<PyDict>()
        || obj.is_exact_instance_of::<PyList>()
        || obj.is_exact_instance_of::<PyString>();
    if !plain && let Ok(c) = classes(py) {
        if obj.is_instance(c.needs.bind(py)).unwrap_or(false) {
            return Err(needs(obj));
        }
        if obj.is_instance(c.tool_error.bind(py)).unwrap_or(false) {
            return Err(tool_error(obj));
        }
        if obj.is_instance(c.accepted.bind(py)).unwrap_or(false) {
            return Err(accepted(obj));
        }
    }
    convert::from_py(obj).map_err(|e| HandlerError::Unexpected {
        detail: format!(
            "the tool returned a value that is not JSON-serializable: {}",
            e.value(py)
        ),
    })
}

/// What a handler raised, read as the core's outcome.
pub fn from_error(py: Python<'_>, err: &PyErr) -> HandlerError {
    let exc = err.value(py);
    if let Ok(c) = classes(py) {
        if exc.is_instance(c.needs.bind(py)).unwrap_or(false) {
            return needs(exc);
        }
        if exc.is_instance(c.tool_error.bind(py)).unwrap_or(false) {
            return tool_error(exc);
        }
        if exc.is_instance(c.accepted.bind(py)).unwrap_or(false) {
            return accepted(exc);
        }
        if exc
            .is_instance(c.invalid_arguments.bind(py))
            .unwrap_or(false)
        {
            return invalid_arguments(exc);
        }
    }
    HandlerError::Unexpected {
        detail: traceback(py, err),
    }
}

/// The full traceback of an exception, as Python prints it.
pub fn traceback(py: Python<'_>, err: &PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|tb| {
            // Explicitly: on 3.11 a fetched exception's `__traceback__` may not be set yet.
            let trace = err.traceback(py);
            tb.call_method1("format_exception", (err.get_type(py), err.value(py), trace))
        })
        .and_then(|lines| PyString::new(py, "").call_method1("join", (lines,)))
        .and_then(|text| text.extract::<String>());
    match formatted {
        Ok(text) => text.trim_end().to_owned(),
        Err(_) => err.to_string(),
    }
}

fn invalid_arguments(obj: &Bound<'_, PyAny>) -> HandlerError {
    let read = || -> PyResult<Vec<Violation>> {
        let pairs: Vec<(Bound<'_, PyAny>, String)> = obj.getattr("violations")?.extract()?;
        pairs
            .into_iter()
            .map(|(path, message)| {
                let Value::Array(path) = convert::from_py(&path)? else {
                    return Ok(Violation::at_path(&[], message));
                };
                Ok(Violation::at_path(&path, message))
            })
            .collect()
    };
    match read() {
        Ok(violations) => HandlerError::invalid_arguments(&violations),
        Err(e) => HandlerError::unexpected(format!(
            "an InvalidArguments without readable violations: {e}"
        )),
    }
}

fn needs(obj: &Bound<'_, PyAny>) -> HandlerError {
    match obj
        .getattr("fields")
        .and_then(|f| f.extract::<Vec<String>>())
    {
        Ok(fields) => HandlerError::Needs(fields),
        Err(e) => HandlerError::unexpected(format!("a Needs without readable fields: {e}")),
    }
}

fn accepted(obj: &Bound<'_, PyAny>) -> HandlerError {
    match obj.getattr("job").and_then(|j| j.extract::<String>()) {
        Ok(job) => HandlerError::Accepted { job },
        Err(e) => HandlerError::unexpected(format!("an Accepted without a readable job: {e}")),
    }
}

fn tool_error(obj: &Bound<'_, PyAny>) -> HandlerError {
    match read_tool_error(obj) {
        Ok(e) => HandlerError::Tool(e),
        Err(why) => HandlerError::unexpected(format!("a malformed ToolError: {why}")),
    }
}

/// Reads a `tooljig.ToolError` instance as the core's error.
pub fn read_tool_error(obj: &Bound<'_, PyAny>) -> Result<ToolError, String> {
    let text = |name: &str| -> Result<String, String> {
        obj.getattr(name)
            .and_then(|v| v.str())
            .map(|s| s.to_string())
            .map_err(|e| e.to_string())
    };
    let code = ErrorCode::from_str(&text("code")?).map_err(|e| e.to_string())?;
    let mut err = ToolError::new(code, text("message")?);
    let retryable = obj.getattr("retryable").map_err(|e| e.to_string())?;
    if !retryable.is_none() {
        err = err.retryable(retryable.is_truthy().map_err(|e| e.to_string())?);
    }
    let details = obj.getattr("details").map_err(|e| e.to_string())?;
    if let Ok(d) = details.cast::<PyDict>()
        && !d.is_empty()
    {
        match convert::from_py(d).map_err(|e| e.to_string())? {
            Value::Object(map) => err.details = without_reserved(map),
            _ => return Err("details must be a dict".into()),
        }
    }
    Ok(err)
}

/// The core's refusal as a `tooljig.ToolError` instance, to raise: its `code`, `message`,
/// `retryable` and `details` (e.g. the `reason` a durable-run refusal names).
pub fn to_py_error<'py>(py: Python<'py>, e: &ToolError) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(py);
    for (k, v) in &e.details {
        // Keys that would collide with the constructor's own parameters are not details.
        if !matches!(k.as_str(), "code" | "message" | "retryable") {
            kwargs.set_item(k, convert::to_py(py, v)?)?;
        }
    }
    kwargs.set_item("retryable", e.retryable)?;
    classes(py)?
        .tool_error
        .bind(py)
        .call((e.code.as_str(), e.message.as_str()), Some(&kwargs))
}

/// Details may not shadow the envelope's own keys.
fn without_reserved(mut map: Map<String, Value>) -> Map<String, Value> {
    for key in ["code", "message", "retryable"] {
        map.remove(key);
    }
    map
}
