//! JSON values across the boundary: `serde_json::Value` ↔ Python objects.
//!
//! Every core type is serde, so the binding moves specs, callers, options, calls and results
//! as JSON values and lets serde do the typing: fields added to the core flow through without
//! binding changes. Values are walked directly rather than printed to JSON text and parsed
//! again on the other side: one pass instead of two, and no text in between. (`pythonize`
//! would do the same through serde, but has no release for pyo3 0.30.)
//!
//! Python values that are not plain JSON (pydantic models, dataclasses, enums, `datetime`,
//! `UUID`, sets, ...) go through `pydantic_core.to_jsonable_python` once, the serializer
//! pydantic itself uses; what that cannot serialize is refused with a clear message.

use crate::keys;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};
use std::fmt::Write;

/// Deepest nesting converted. Deeper values (or a list that contains itself) are refused
/// instead of overflowing the stack.
pub const MAX_DEPTH: usize = 512;

/// Builds the Python object for a JSON value: dicts, lists, str, int, float, bool, None.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(keys::key(py, k), to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// Converts a Python object to a JSON value, the way `json.dumps` would plus pydantic's
/// serializer for richer types. Errors are `TypeError` (not serializable) or `ValueError`
/// (NaN, infinity, an int beyond 64 bits, too deep), with the path of the offending value.
pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut path = Vec::new();
    convert(obj, 0, true, &mut path)
}

fn convert(
    obj: &Bound<'_, PyAny>,
    depth: usize,
    fallback: bool,
    path: &mut Vec<Step>,
) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "value at {} is nested deeper than {MAX_DEPTH} levels (or contains itself)",
            where_(path)
        )));
    }
    // Exact types first: the common case costs one type check each.
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast_exact::<PyInt>() {
        return int(i, path);
    }
    if let Ok(f) = obj.cast_exact::<PyFloat>() {
        return float(f.value(), path);
    }
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        return dict(d, depth, fallback, path);
    }
    if let Ok(l) = obj.cast_exact::<PyList>() {
        return sequence(l.iter(), depth, fallback, path);
    }
    if let Ok(t) = obj.cast_exact::<PyTuple>() {
        return sequence(t.iter(), depth, fallback, path);
    }
    // Subclasses (str and int enums, OrderedDict, ...) serialize as their base, like json.
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        return int(i, path);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return float(f.value(), path);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return dict(d, depth, fallback, path);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return sequence(l.iter(), depth, fallback, path);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return sequence(t.iter(), depth, fallback, path);
    }
    if !fallback {
        return Err(not_json(obj, path, None));
    }
    let py = obj.py();
    let plain = jsonable(py)?
        .call1((obj,))
        .map_err(|e| not_json(obj, path, Some(e.value(py).to_string())))?;
    // What pydantic returns is plain JSON; converting it without the fallback again
    // guarantees termination.
    convert(&plain, depth, false, path)
}

fn int(i: &Bound<'_, PyInt>, path: &[Step]) -> PyResult<Value> {
    if let Ok(v) = i.extract::<i64>() {
        return Ok(Value::from(v));
    }
    if let Ok(v) = i.extract::<u64>() {
        return Ok(Value::from(v));
    }
    Err(PyValueError::new_err(format!(
        "integer at {} does not fit in 64 bits; JSON readers would lose its precision \
         (return it as a string)",
        where_(path)
    )))
}

fn float(f: f64, path: &[Step]) -> PyResult<Value> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        PyValueError::new_err(format!(
            "float at {} is {f}, which JSON cannot represent",
            where_(path)
        ))
    })
}

fn dict(
    d: &Bound<'_, PyDict>,
    depth: usize,
    fallback: bool,
    path: &mut Vec<Step>,
) -> PyResult<Value> {
    let mut map = Map::with_capacity(d.len());
    for (k, v) in d.iter() {
        // The key goes on the path while its value converts, then into the map: no copy.
        path.push(Step::Key(key(&k, path)?));
        let value = convert(&v, depth + 1, fallback, path)?;
        if let Some(Step::Key(key)) = path.pop() {
            map.insert(key, value);
        }
    }
    Ok(Value::Object(map))
}

/// Dict keys as `json.dumps` writes them: strings as they are, numbers and bools in text.
fn key(k: &Bound<'_, PyAny>, path: &[Step]) -> PyResult<String> {
    if let Ok(s) = k.cast::<PyString>() {
        return Ok(s.to_str()?.to_owned());
    }
    if let Ok(b) = k.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if k.cast::<PyInt>().is_ok() || k.cast::<PyFloat>().is_ok() {
        return Ok(k.str()?.to_str()?.to_owned());
    }
    if k.is_none() {
        return Ok("null".to_owned());
    }
    Err(PyTypeError::new_err(format!(
        "dict key {} at {} is a {}; JSON object keys must be strings",
        k.repr().map(|r| r.to_string()).unwrap_or_default(),
        where_(path),
        type_name(k)
    )))
}

fn sequence<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    depth: usize,
    fallback: bool,
    path: &mut Vec<Step>,
) -> PyResult<Value> {
    let mut out = Vec::with_capacity(items.size_hint().0);
    for (i, item) in items.enumerate() {
        path.push(Step::Index(i));
        out.push(convert(&item, depth + 1, fallback, path)?);
        path.pop();
    }
    Ok(Value::Array(out))
}

fn not_json(obj: &Bound<'_, PyAny>, path: &[Step], why: Option<String>) -> PyErr {
    let mut message = format!(
        "value at {} is a {}, which is not JSON-serializable",
        where_(path),
        type_name(obj)
    );
    if let Some(why) = why {
        message.push_str(": ");
        message.push_str(&why);
    }
    PyTypeError::new_err(message)
}

/// One step down from the top of a value being converted, named only when it is refused.
enum Step {
    Key(String),
    Index(usize),
}

fn where_(path: &[Step]) -> String {
    if path.is_empty() {
        return "the top level".to_owned();
    }
    let mut at = String::new();
    for step in path {
        match step {
            Step::Key(key) => write!(at, "/{key}"),
            Step::Index(i) => write!(at, "/{i}"),
        }
        .unwrap_or(());
    }
    at
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

fn jsonable(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TO_JSONABLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    TO_JSONABLE.import(py, "pydantic_core", "to_jsonable_python")
}

/// Converts a Python object to a serde type through its JSON value.
pub fn from_py_as<T: serde::de::DeserializeOwned>(obj: &Bound<'_, PyAny>) -> Result<T, String> {
    let value = from_py(obj).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}
