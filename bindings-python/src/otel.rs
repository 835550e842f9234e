//! `tooljig.export_traces`: the core's OTLP export of batch and call spans (`tooljig::otel`).

use crate::convert;
use crate::error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tooljig::otel::{OtlpExport, OtlpOptions, export};

/// Spans being exported to an OTLP collector.
#[pyclass(name = "TraceExport", module = "tooljig", frozen)]
pub struct PyTraceExport(OtlpExport);

#[pymethods]
impl PyTraceExport {
    /// Sends every span ended so far; blocks until the collector has them.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.flush())
            .map_err(|e| PyRuntimeError::new_err(format!("the spans were not exported: {e}")))
    }

    /// Flushes and stops exporting.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.shutdown())
            .map_err(|e| PyRuntimeError::new_err(format!("the export did not stop cleanly: {e}")))
    }
}

/// Starts exporting spans over OTLP (`options` as `OtlpOptions` reads them).
#[pyfunction]
pub fn export_traces(py: Python<'_>, options: &Bound<'_, PyAny>) -> PyResult<PyTraceExport> {
    let options: OtlpOptions =
        convert::from_py_as(options).map_err(|e| error::invalid_input(py, "trace export", e))?;
    export(&options)
        .map(PyTraceExport)
        .map_err(|e| error::invalid_input(py, "trace export", e))
}

/// Registers this file's class and function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTraceExport>()?;
    m.add_function(wrap_pyfunction!(export_traces, m)?)?;
    Ok(())
}
