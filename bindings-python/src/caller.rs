//! `tooljig.Caller`: who a batch runs for, as the core's serde `Caller`.

use crate::convert;
use crate::error;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use std::sync::Arc;
use tooljig::Caller;

/// Who a batch runs for: principal, tenant, roles, scopes, attributes and session.
/// Handlers receive it in their `ToolContext`; the model never sees it. Every field of the
/// core's caller is accepted as a keyword and readable as `caller["field"]`.
#[pyclass(name = "Caller", module = "tooljig", frozen, eq)]
#[derive(PartialEq)]
pub struct PyCaller {
    pub(crate) inner: Arc<Caller>,
}

impl PyCaller {
    /// Wraps a core caller.
    pub fn new(inner: Arc<Caller>) -> Self {
        PyCaller { inner }
    }

    /// Reads a caller from what `Engine.run` accepts: a `Caller`, a dict, or None.
    pub fn extract_from(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Caller> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(Caller::default());
        };
        if let Ok(c) = obj.cast::<PyCaller>() {
            return Ok(c.get().inner.as_ref().clone());
        }
        convert::from_py_as(obj).map_err(|e| error::invalid_input(obj.py(), "caller", e))
    }

    fn field(&self) -> Value {
        serde_json::to_value(self.inner.as_ref()).unwrap_or(Value::Null)
    }
}

#[pymethods]
impl PyCaller {
    /// A caller from keyword arguments: `Caller(principal="u1", scopes=["a.read"])`.
    #[new]
    #[pyo3(signature = (**fields))]
    fn py_new(py: Python<'_>, fields: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let caller: Caller = match fields {
            Some(d) => convert::from_py_as(d).map_err(|e| error::invalid_input(py, "caller", e))?,
            None => Caller::default(),
        };
        Ok(PyCaller::new(Arc::new(caller)))
    }

    /// Who is acting (a user id, a service account).
    #[getter]
    fn principal(&self) -> Option<&str> {
        self.inner.principal.as_deref()
    }

    /// The organisation or workspace the principal acts in.
    #[getter]
    fn tenant(&self) -> Option<&str> {
        self.inner.tenant.as_deref()
    }

    /// Roles the principal holds.
    #[getter]
    fn roles(&self) -> Vec<String> {
        self.inner.roles.clone()
    }

    /// Scopes granted to this caller.
    #[getter]
    fn scopes(&self) -> Vec<String> {
        self.inner.scopes.clone()
    }

    /// Anything else the app wants handlers to see (a fresh dict each time).
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &Value::Object(self.inner.attributes.clone()))
    }

    /// The conversation or session id.
    #[getter]
    fn session(&self) -> Option<&str> {
        self.inner.session.as_deref()
    }

    /// Every field as a dict, including fields newer than these typed attributes.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.field())
    }

    /// A field by name: `caller["principal"]`.
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.field().get(key) {
            Some(v) => convert::to_py(py, v),
            None => Err(PyKeyError::new_err(key.to_owned())),
        }
    }

    fn __repr__(&self) -> String {
        format!("Caller({})", self.field())
    }
}
