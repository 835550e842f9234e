//! Provider formats: `Provider`, `JsonProtocol` and the turn helpers, over the core's
//! `tooljig::providers`.
//!
//! Everything here is a pure function of JSON, so the binding is JSON passthrough: specs,
//! requests, turns, messages and bodies cross as dicts shaped exactly as the core serializes
//! them; results may be `CallResult` objects or their dicts. A body that is not in the
//! provider's format raises `tooljig.ProviderError`; malformed arguments raise
//! `tooljig.InvalidInputError`.

use crate::convert;
use crate::error;
use crate::results::PyCallResult;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tooljig::providers::json_protocol::{self, JsonProtocol};
use tooljig::providers::{
    Anthropic, Gemini, Message, ModelRequest, ModelTurn, OpenAiChat, OpenAiResponses, Provider,
    ProviderFormat, strict,
};
use tooljig::{CallResult, Envelope, ToolSpec};

/// Reads `obj` as a core type, naming `what` in the error.
pub fn read<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    convert::from_py_as(obj).map_err(|e| error::invalid_input(obj.py(), what, e))
}

/// A core value as Python data.
pub fn write<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    convert::to_py(py, &value)
}

/// Results given as `CallResult` objects (through their `to_dict`) or as dicts.
pub fn read_results(obj: &Bound<'_, PyAny>) -> PyResult<Vec<CallResult>> {
    let py = obj.py();
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let value = if item.hasattr(pyo3::intern!(py, "to_dict"))? {
            item.call_method0(pyo3::intern!(py, "to_dict"))?
        } else {
            item
        };
        out.push(read_result(&value)?);
    }
    Ok(out)
}

/// A whole result dict, or the short form an app writes for a result it obtained itself
/// (`{"call_id", "tool", "envelope"}`): a finished call with that envelope.
fn read_result(value: &Bound<'_, PyAny>) -> PyResult<CallResult> {
    let json = convert::from_py(value)?;
    let full = serde_json::from_value::<CallResult>(json.clone());
    let short = json
        .get("call_id")
        .and_then(Value::as_str)
        .zip(json.get("envelope"));
    match (full, short) {
        (Ok(r), _) => Ok(r),
        (Err(_), Some((id, envelope))) => {
            let envelope: Envelope = serde_json::from_value(envelope.clone()).map_err(|e| {
                error::invalid_input(value.py(), "results", format!("envelope: {e}"))
            })?;
            let tool = json.get("tool").and_then(Value::as_str).unwrap_or_default();
            Ok(CallResult::refused(id, tool, envelope))
        }
        (Err(e), None) => Err(error::invalid_input(value.py(), "results", e.to_string())),
    }
}

/// `tooljig.ProviderError`, raised with `message`.
pub fn provider_error(py: Python<'_>, message: String) -> PyErr {
    static CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    match CLASS.import(py, "tooljig.providers", "ProviderError") {
        Ok(c) => PyErr::from_type(c.clone(), message),
        Err(e) => e,
    }
}

/// The provider named `name` (`openai_chat`, `openai_responses`, `anthropic`, `gemini`).
pub fn provider_named(py: Python<'_>, name: &str) -> PyResult<Provider> {
    Provider::from_name(name).map_err(|e| error::invalid_input(py, "provider", e))
}

/// The options of a format; kept so `tools(specs, strict=...)` can build a variant.
#[derive(Clone, Copy)]
struct Options {
    provider: Provider,
    strict: bool,
    sequential_tool_calls: bool,
    openapi_schema: bool,
}

impl Options {
    fn format(self) -> Box<dyn ProviderFormat> {
        match self.provider {
            Provider::OpenAiChat => Box::new(OpenAiChat {
                strict: self.strict,
                sequential_tool_calls: self.sequential_tool_calls,
            }),
            Provider::OpenAiResponses => Box::new(OpenAiResponses {
                strict: self.strict,
                sequential_tool_calls: self.sequential_tool_calls,
            }),
            Provider::Anthropic => Box::new(Anthropic {
                sequential_tool_calls: self.sequential_tool_calls,
            }),
            Provider::Gemini => Box::new(Gemini {
                openapi_schema: self.openapi_schema,
            }),
        }
    }
}

/// One model API's wire format: tools, requests, responses, messages and results converted
/// between tooljig and the provider's own JSON.
#[pyclass(name = "Provider", module = "tooljig._native", frozen)]
pub struct PyProvider {
    options: Options,
    format: Box<dyn ProviderFormat>,
}

#[pymethods]
impl PyProvider {
    /// The format of `name` (`"openai_chat"`, `"openai_responses"`, `"anthropic"`,
    /// `"gemini"`). `strict`: OpenAI strict-mode tool schemas; `sequential_tool_calls`: ask
    /// for one call at a time; `openapi_schema`: Gemini's OpenAPI subset instead of JSON
    /// Schema.
    #[new]
    #[pyo3(signature = (name, *, strict = false, sequential_tool_calls = false, openapi_schema = false))]
    fn new(
        py: Python<'_>,
        name: &str,
        strict: bool,
        sequential_tool_calls: bool,
        openapi_schema: bool,
    ) -> PyResult<Self> {
        let options = Options {
            provider: provider_named(py, name)?,
            strict,
            sequential_tool_calls,
            openapi_schema,
        };
        Ok(PyProvider {
            options,
            format: options.format(),
        })
    }

    /// The provider's name.
    #[getter]
    fn name(&self) -> &'static str {
        self.options.provider.name()
    }

    /// Whether tools are offered in OpenAI strict mode.
    #[getter]
    fn strict(&self) -> bool {
        self.options.strict
    }

    /// The request's tool definitions for `specs` (dicts as `Engine.specs()` exports them);
    /// `strict` overrides the format's own setting.
    #[pyo3(signature = (specs, strict = None))]
    fn tools<'py>(
        &self,
        py: Python<'py>,
        specs: &Bound<'py, PyAny>,
        strict: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let specs: Vec<ToolSpec> = read(specs, "specs")?;
        let value = match strict {
            Some(s) if s != self.options.strict => Options {
                strict: s,
                ..self.options
            }
            .format()
            .tools(&specs),
            _ => self.format.tools(&specs),
        };
        convert::to_py(py, &value)
    }

    /// The whole request body for a provider-neutral request dict (`model`, `messages`,
    /// `tools`, `tool_choice`, `max_tokens`, `temperature`, `stream`, `response_schema`).
    fn request<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request: ModelRequest = read(request, "request")?;
        convert::to_py(py, &self.format.request(&request))
    }

    /// A (non-streamed) response body as a turn dict: `content`, `tool_calls` (order and
    /// ids kept), `finish_reason`, `raw_finish_reason`, `usage`.
    fn parse_response<'py>(
        &self,
        py: Python<'py>,
        body: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let body = convert::from_py(body)?;
        let turn = self
            .format
            .parse_response(&body)
            .map_err(|e| provider_error(py, e.to_string()))?;
        write(py, &turn)
    }

    /// The provider's messages (or items, or contents) for a neutral conversation.
    fn messages<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let messages: Vec<Message> = read(messages, "messages")?;
        convert::to_py(py, &Value::Array(self.format.messages(&messages)))
    }

    /// A conversation in the provider's shape as neutral messages.
    fn parse_messages<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let messages: Vec<Value> = read(messages, "messages")?;
        let parsed = self
            .format
            .parse_messages(&messages)
            .map_err(|e| provider_error(py, e.to_string()))?;
        write(py, &parsed)
    }

    /// The exact messages or content blocks to append after running these calls
    /// (`CallResult`s or their dicts).
    fn tool_results<'py>(
        &self,
        py: Python<'py>,
        results: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let results = read_results(results)?;
        convert::to_py(py, &Value::Array(self.format.tool_results(&results)))
    }

    fn __repr__(&self) -> String {
        format!("Provider({:?})", self.name())
    }
}

/// The JSON-structured tool protocol, for any model that can emit JSON.
#[pyclass(name = "JsonProtocol", module = "tooljig._native", frozen)]
pub struct PyJsonProtocol {
    inner: JsonProtocol,
}

#[pymethods]
impl PyJsonProtocol {
    /// The protocol with options (`shape`: `"per_tool"` or `"flat"`, `dependencies`,
    /// `reasoning`, `max_calls`).
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(options: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let inner = match options.filter(|o| !o.is_none()) {
            Some(o) => read(o, "JSON protocol options")?,
            None => JsonProtocol::default(),
        };
        Ok(PyJsonProtocol { inner })
    }

    /// The options, as a dict.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        write(py, &self.inner)
    }

    /// The JSON Schema the model's answer must match.
    fn response_schema<'py>(
        &self,
        py: Python<'py>,
        specs: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let specs: Vec<ToolSpec> = read(specs, "specs")?;
        convert::to_py(py, &self.inner.response_schema(&specs))
    }

    /// The system-prompt text that describes the tools and the answer's shape.
    fn prompt(&self, specs: &Bound<'_, PyAny>) -> PyResult<String> {
        let specs: Vec<ToolSpec> = read(specs, "specs")?;
        Ok(self.inner.prompt(&specs))
    }

    /// The model's JSON text (repaired if need be) as a plan dict: `calls` (call dicts with
    /// `depends_on`), `reasoning`, `repaired`.
    fn parse<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let plan = self
            .inner
            .parse(text)
            .map_err(|e| provider_error(py, format!("{}: {}", e.code.as_str(), e.message)))?;
        write(py, &plan)
    }
}

/// The calls of a turn to run, and the results of calls that must never run (arguments cut
/// off: refused as `incomplete_arguments`).
#[pyfunction]
pub fn into_batch<'py>(py: Python<'py>, turn: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let turn: ModelTurn = read(turn, "turn")?;
    let (calls, refused) = turn.into_batch();
    let refused = PyList::new(
        py,
        refused
            .into_iter()
            .map(|r| Py::new(py, PyCallResult::new(r)))
            .collect::<PyResult<Vec<_>>>()?,
    )?;
    PyTuple::new(py, [write(py, &calls)?, refused.into_any()])
}

/// The turn with the `null`s OpenAI strict mode made the model send for optional fields
/// removed, so the arguments validate against the tools' original schemas.
#[pyfunction]
pub fn drop_strict_nulls<'py>(
    py: Python<'py>,
    turn: &Bound<'py, PyAny>,
    specs: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut turn: ModelTurn = read(turn, "turn")?;
    let specs: Vec<ToolSpec> = read(specs, "specs")?;
    turn.drop_strict_nulls(&specs);
    write(py, &turn)
}

/// A JSON Schema converted for OpenAI strict mode (every property required, optional ones
/// nullable, no additional properties).
#[pyfunction]
pub fn to_strict<'py>(py: Python<'py>, schema: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let schema = convert::from_py(schema)?;
    let strict = strict::to_strict(&schema).map_err(|e| error::invalid_input(py, "schema", e))?;
    convert::to_py(py, &strict)
}

/// All results of a batch as the one message the JSON-structured protocol sends back.
#[pyfunction]
pub fn format_results(results: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(json_protocol::format_results(&read_results(results)?))
}

/// Registers this file's classes and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyProvider>()?;
    m.add_class::<PyJsonProtocol>()?;
    m.add_function(wrap_pyfunction!(into_batch, m)?)?;
    m.add_function(wrap_pyfunction!(drop_strict_nulls, m)?)?;
    m.add_function(wrap_pyfunction!(to_strict, m)?)?;
    m.add_function(wrap_pyfunction!(format_results, m)?)?;
    Ok(())
}
