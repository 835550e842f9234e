//! Errors raised to Python, mapped onto the hierarchy of `tooljig/errors.py`.
//!
//! The classes live in Python (their docstrings and constructors are Python's to own); this
//! module imports them once and maps each core error variant onto a specific one, so users
//! catch `tooljig.DuplicateToolError` rather than parse a message:
//!
//! ```text
//! TooljigError
//! ├── RegistrationError          a tool was refused at registration
//! │   ├── InvalidToolNameError     the name breaks the providers' rule
//! │   ├── DuplicateToolError       the name (or an alias) is taken
//! │   ├── InvalidSchemaError       a schema does not compile
//! │   ├── InvalidPolicyError       the policy is inconsistent or has unknown fields
//! │   └── UnsupportedTypeError     a type hint has no JSON Schema (raised in Python)
//! ├── InvalidInputError          calls, caller or options passed to a run are malformed
//! ├── ShutdownError              the interpreter is exiting; no new batch starts
//! ├── ToolError                  raised by handlers to choose an error code
//! ├── InvalidArguments           raised by a handler's own validation, with its violations
//! ├── Needs                      raised or returned by handlers for missing fields
//! └── Accepted                   returned or raised by handlers: the work goes on as a job
//! ```

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use tooljig::RegistrationError;

/// The exception classes of `tooljig.errors`, imported once.
pub struct Classes {
    /// `tooljig.errors.RegistrationError`
    pub registration: Py<PyType>,
    /// `tooljig.errors.InvalidToolNameError`
    pub invalid_name: Py<PyType>,
    /// `tooljig.errors.DuplicateToolError`
    pub duplicate: Py<PyType>,
    /// `tooljig.errors.InvalidSchemaError`
    pub invalid_schema: Py<PyType>,
    /// `tooljig.errors.InvalidPolicyError`
    pub invalid_policy: Py<PyType>,
    /// `tooljig.errors.InvalidInputError`
    pub invalid_input: Py<PyType>,
    /// `tooljig.errors.ShutdownError`
    pub shutdown: Py<PyType>,
    /// `tooljig.errors.ToolError`
    pub tool_error: Py<PyType>,
    /// `tooljig.errors.Needs`
    pub needs: Py<PyType>,
    /// `tooljig.errors.InvalidArguments`
    pub invalid_arguments: Py<PyType>,
    /// `tooljig.errors.Accepted`
    pub accepted: Py<PyType>,
}

/// The classes, importing `tooljig.errors` on first use.
pub fn classes(py: Python<'_>) -> PyResult<&Classes> {
    static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();
    CLASSES.get_or_try_init(py, || {
        let m = py.import("tooljig.errors")?;
        let get = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok(Classes {
            registration: get("RegistrationError")?,
            invalid_name: get("InvalidToolNameError")?,
            duplicate: get("DuplicateToolError")?,
            invalid_schema: get("InvalidSchemaError")?,
            invalid_policy: get("InvalidPolicyError")?,
            invalid_input: get("InvalidInputError")?,
            shutdown: get("ShutdownError")?,
            tool_error: get("ToolError")?,
            needs: get("Needs")?,
            invalid_arguments: get("InvalidArguments")?,
            accepted: get("Accepted")?,
        })
    })
}

fn raise(py: Python<'_>, class: impl FnOnce(&Classes) -> &Py<PyType>, message: String) -> PyErr {
    match classes(py) {
        Ok(c) => PyErr::from_type(class(c).bind(py).clone(), message),
        Err(e) => e,
    }
}

/// Extension trait: a core or serde failure as the right Python exception.
pub trait IntoPyErr {
    /// The Python exception for this error.
    fn into_py_err(self, py: Python<'_>) -> PyErr;
}

impl IntoPyErr for RegistrationError {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        let message = self.to_string();
        match self {
            RegistrationError::InvalidName(_) => raise(py, |c| &c.invalid_name, message),
            RegistrationError::Duplicate(_) => raise(py, |c| &c.duplicate, message),
            RegistrationError::InvalidSchema { .. } => raise(py, |c| &c.invalid_schema, message),
            RegistrationError::InvalidPolicy { .. } => raise(py, |c| &c.invalid_policy, message),
            RegistrationError::InvalidSpec { .. } => raise(py, |c| &c.registration, message),
            // Variants added to the core later still raise a RegistrationError.
            #[allow(unreachable_patterns)]
            _ => raise(py, |c| &c.registration, message),
        }
    }
}

/// A malformed spec (a missing name, an unknown key) refused at registration.
pub fn invalid_spec(py: Python<'_>, message: String) -> PyErr {
    raise(py, |c| &c.registration, message)
}

/// A policy that does not deserialize (an unknown field, a wrong type).
pub fn invalid_policy(py: Python<'_>, message: String) -> PyErr {
    raise(py, |c| &c.invalid_policy, message)
}

/// Calls, caller or options that do not deserialize.
pub fn invalid_input(py: Python<'_>, what: &str, message: String) -> PyErr {
    raise(
        py,
        |c| &c.invalid_input,
        format!("invalid {what}: {message}"),
    )
}

/// The interpreter is exiting.
pub fn shutdown(py: Python<'_>, message: String) -> PyErr {
    raise(py, |c| &c.shutdown, message)
}
