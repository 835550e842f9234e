//! Registration mistakes: raised when a tool is registered, never at call time, each with a
//! stable code the bindings raise it under.

/// A registration mistake, raised at registration and never at call time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// The name breaks the providers' rule.
    #[error("invalid tool name: {0}")]
    InvalidName(String),
    /// A tool with that name (or alias) is already registered.
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    /// The input or output schema does not compile.
    #[error("tool {tool:?}: {which} {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `input schema` or `output schema`.
        which: &'static str,
        /// What the compiler said.
        message: String,
    },
    /// The policy is inconsistent (e.g. zero attempts) or does not read (an unknown field,
    /// a wrong type).
    #[error("tool {tool:?}: invalid policy: {message}")]
    InvalidPolicy {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
    /// The spec itself does not read (not an object, a missing name, an unknown key).
    #[error("tool {tool:?}: invalid tool spec: {message}")]
    InvalidSpec {
        /// The tool, or `?` when the spec names none.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

impl RegistrationError {
    /// The stable code of the mistake: `invalid_name`, `duplicate_tool`, `invalid_schema`,
    /// `invalid_policy` or `invalid_spec`.
    pub fn code(&self) -> &'static str {
        match self {
            RegistrationError::InvalidName(_) => "invalid_name",
            RegistrationError::Duplicate(_) => "duplicate_tool",
            RegistrationError::InvalidSchema { .. } => "invalid_schema",
            RegistrationError::InvalidPolicy { .. } => "invalid_policy",
            RegistrationError::InvalidSpec { .. } => "invalid_spec",
        }
    }
}
