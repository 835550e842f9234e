//! Calls as Python hands them over (dicts, `tooljig.Call`s), read into the core's `Call`s:
//! `engine.run(...)` and a handler's `ctx.run(...)`.

use crate::convert;
use crate::error;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use tooljig::Call;

/// The calls of a batch. One whose arguments have no JSON form (an int beyond 64 bits, NaN,
/// a lone surrogate, `bytes`, nesting past the limit) is kept with `arguments_error` set, so
/// it alone is refused and the rest of the batch runs; a call whose other fields are wrong
/// refuses the batch, naming it.
pub fn calls_from_py(py: Python<'_>, calls: &Bound<'_, PyAny>) -> PyResult<Vec<Call>> {
    if let Ok(all) = convert::from_py_as::<Vec<Call>>(calls) {
        return Ok(all);
    }
    let items = calls
        .try_iter()
        .map_err(|_| error::invalid_input(py, "calls", "expected a list of calls".into()))?;
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
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

/// A call dict without its `arguments`.
fn without_arguments<'py>(item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let head = item.cast::<PyDict>()?.copy()?;
    if head.contains("arguments")? {
        head.del_item("arguments")?;
    }
    Ok(head)
}
