//! Calls as Python hands them over (dicts, `tooljig.Call`s), read into the core's `Call`s:
//! `engine.run(...)` and a handler's `ctx.run(...)`.

use crate::convert;
use crate::error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use tooljig::Call;

/// The calls of a batch. One whose arguments have no JSON form (an int beyond 64 bits, NaN,
/// a lone surrogate, `bytes`, nesting past the limit) is kept with `arguments_error` set, so
/// it alone is refused and the rest of the batch runs; a call whose other fields are wrong
/// refuses the batch, naming it.
pub fn calls_from_py(py: Python<'_>, calls: &Bound<'_, PyAny>) -> PyResult<Vec<Call>> {
    if calls.is_instance_of::<PyString>() || calls.is_instance_of::<PyDict>() {
        return Err(error::invalid_input(
            py,
            "calls",
            "expected a list of calls".into(),
        ));
    }
    let items = calls
        .try_iter()
        .map_err(|_| error::invalid_input(py, "calls", "expected a list of calls".into()))?;
    let mut out = Vec::with_capacity(calls.len().unwrap_or(0));
    for (i, item) in items.enumerate() {
        let item = item?;
        if let Some(call) = plain_call(&item) {
            out.push(call);
            continue;
        }
        let call = match convert::from_py_as::<Call>(&item) {
            Ok(call) => call,
            Err(why) => {
                let bad = |e: String| error::invalid_input(py, &format!("calls[{i}]"), e);
                let head = without_arguments(&item).map_err(|_| bad(why.clone()))?;
                let mut call: Call = convert::from_py_as(&head).map_err(|_| bad(why.clone()))?;
                call.arguments = Value::Null;
                call.arguments_error = Some(why);
                call
            }
        };
        out.push(call);
    }
    Ok(out)
}

/// The common call, a dict of `tool` with `id` and `arguments` or not, read straight into a
/// `Call`; `None` for any other (another key, an id that is no string, arguments with no JSON
/// form), which goes through serde as the general case does, and is refused as it says.
fn plain_call(item: &Bound<'_, PyAny>) -> Option<Call> {
    let dict = item.cast_exact::<PyDict>().ok()?;
    let py = dict.py();
    let text =
        |v: Bound<'_, PyAny>| Some(v.cast_exact::<PyString>().ok()?.to_str().ok()?.to_owned());
    let tool = text(dict.get_item(intern!(py, "tool")).ok()??)?;
    let mut keys = 1;
    let id = match dict.get_item(intern!(py, "id")).ok()? {
        Some(id) => {
            keys += 1;
            text(id)?
        }
        None => String::new(),
    };
    let arguments = match dict.get_item(intern!(py, "arguments")).ok()? {
        Some(arguments) => {
            keys += 1;
            match arguments.cast_exact::<PyString>() {
                Ok(s) => Value::String(s.to_str().ok()?.to_owned()),
                Err(_) => convert::from_py(&arguments).ok()?,
            }
        }
        None => Value::Null,
    };
    (dict.len() == keys).then(|| Call::new(id, tool, arguments))
}

/// A call dict without its `arguments`.
fn without_arguments<'py>(item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let head = item.cast::<PyDict>()?.copy()?;
    if head.contains("arguments")? {
        head.del_item("arguments")?;
    }
    Ok(head)
}
