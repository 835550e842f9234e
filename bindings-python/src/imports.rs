//! Importing tool definitions written for other systems (`tooljig.import_tools`): the core's
//! importers (`tooljig::import`), their specs handed back as dicts for `Engine.register_spec`.

use crate::convert;
use crate::error;
use pyo3::prelude::*;
use tooljig::Engine;
use tooljig::import::openapi::OpenApiOptions;
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

/// Registers the operations of an OpenAPI document as tools of `engine`
/// (`Engine::register_openapi`); returns the report as a dict.
pub fn register_openapi<'py>(
    py: Python<'py>,
    engine: &Engine,
    document: &Bound<'py, PyAny>,
    options: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let doc = convert::from_py(document)?;
    let options: OpenApiOptions =
        convert::from_py_as(options).map_err(|e| error::invalid_input(py, "OpenAPI options", e))?;
    let report = engine
        .register_openapi(&doc, &options)
        .map_err(|e| error::invalid_input(py, "OpenAPI document", e.to_string()))?;
    convert::to_py(py, &serde_json::to_value(report).unwrap_or_default())
}

/// Registers this file's function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(import_tools, m)?)?;
    Ok(())
}
