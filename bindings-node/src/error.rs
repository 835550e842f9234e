//! Registration mistakes, as problems the JavaScript layer throws as `RegistrationError`s.
//!
//! A problem is returned as data rather than thrown from Rust so the JS layer can throw its
//! own `Error` subclass with a stable `code` (napi errors would carry a napi status there).

use napi_derive::napi;
use tooljig::RegistrationError;

/// Why a registration was refused.
#[napi(object)]
pub struct RegistrationProblem {
    /// A stable code: `invalid_name`, `duplicate_tool`, `invalid_schema`, `invalid_policy` or
    /// `invalid_spec`.
    pub code: String,
    /// What is wrong, naming the tool.
    pub message: String,
}

impl RegistrationProblem {
    /// A problem with a code and a message.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        RegistrationProblem {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl From<RegistrationError> for RegistrationProblem {
    fn from(e: RegistrationError) -> Self {
        RegistrationProblem::new(e.code(), e.to_string())
    }
}
