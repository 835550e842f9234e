//! `AgentState`: a conversation run's state shared between Python and the run driving it.
//! A run works on a copy and writes it back when it returns, so a run cancelled midway leaves
//! the state as it was; `busy` keeps two runs of one state from racing.

use crate::convert;
use crate::error;
use crate::host::lock;
use crate::providers::read;
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tooljig::agent::AgentState;

/// The state and whether a run of it is in progress.
pub(crate) struct StateCell {
    pub(crate) state: Mutex<AgentState>,
    pub(crate) busy: AtomicBool,
}

/// A conversation run's state: serializable, so a suspended run can be stored and resumed.
#[pyclass(name = "AgentState", module = "tooljig._native", frozen)]
pub struct PyAgentState {
    pub(crate) cell: Arc<StateCell>,
}

impl PyAgentState {
    fn wrap(state: AgentState) -> Self {
        PyAgentState {
            cell: Arc::new(StateCell {
                state: Mutex::new(state),
                busy: AtomicBool::new(false),
            }),
        }
    }

    fn value(&self) -> Value {
        serde_json::to_value(&*lock(&self.cell.state)).unwrap_or(Value::Null)
    }

    fn field<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, self.value().get(key).unwrap_or(&Value::Null))
    }
}

#[pymethods]
impl PyAgentState {
    /// A conversation starting with the user's `message`, or continuing `messages`
    /// (neutral message dicts), or empty.
    #[new]
    #[pyo3(signature = (message = None, *, messages = None))]
    fn new(message: Option<String>, messages: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut state = match messages.filter(|m| !m.is_none()) {
            Some(m) => AgentState::from_messages(read(m, "messages")?),
            None => AgentState::from_messages(Vec::new()),
        };
        if let Some(text) = message {
            state.messages.push(tooljig::providers::Message::user(text));
        }
        Ok(PyAgentState::wrap(state))
    }

    /// The state as JSON text, to store a suspended run.
    fn to_json(&self) -> String {
        lock(&self.cell.state).to_json()
    }

    /// A state stored with `to_json`.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        AgentState::from_json(text)
            .map(PyAgentState::wrap)
            .map_err(|e| error::invalid_input(py, "agent state", e.to_string()))
    }

    /// The whole state as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.value())
    }

    /// The run's id.
    #[getter]
    fn run_id(&self) -> String {
        lock(&self.cell.state).run_id.clone()
    }

    /// The conversation, as neutral message dicts.
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "messages")
    }

    /// Where the run stands, as a dict (`{"status": "finished", "reason": "answered"}`).
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "status")
    }

    /// The run's counters, as a dict.
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.field(py, "counters")
    }

    /// The last answer or clarifying question.
    #[getter]
    fn answer(&self) -> String {
        lock(&self.cell.state).answer.clone()
    }

    /// Whether a run of this state is in progress.
    #[getter]
    fn running(&self) -> bool {
        self.cell.busy.load(Ordering::SeqCst)
    }
}

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAgentState>()?;
    Ok(())
}
