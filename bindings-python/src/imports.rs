//! Importing tool definitions written for other systems (`tooljig.import_tools`): the core's
//! importers (`tooljig::import`), their specs handed back as dicts for `Engine.register_spec`.

use crate::convert;
use crate::error;
use pyo3::prelude::*;
use tooljig::import::{ImportOptions, import_tools as import};

/// Imports OpenAI function specs or BFCL docs; `options` as `ImportOptions` reads them
/// (`format`, `category`, `close_objects`). Returns the specs, as `Engine.specs()` would.
#[pyfunction]
pub fn import_tools<'py>(
    py: Python<'py>,
    definitions: &Bound<'py, PyAny>,
    options: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let defs = convert::from_py(definitions)?;
    let options: ImportOptions =
        convert::from_py_as(options).map_err(|e| error::invalid_input(py, "import options", e))?;
    let specs = import(&defs, &options)
        .map_err(|e| error::invalid_input(py, "tool definitions", e.to_string()))?;
    let specs = serde_json::to_value(specs)
        .map_err(|e| error::invalid_input(py, "tool definitions", e.to_string()))?;
    convert::to_py(py, &specs)
}

/// Registers this file's function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(import_tools, m)?)?;
    Ok(())
}
