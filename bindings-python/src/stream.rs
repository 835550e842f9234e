//! Streaming: `StreamParser` (a provider's server-sent events in, tooljig's stream events
//! out) and `UiMessageStream` (stream events out as the Vercel AI SDK UI message stream),
//! over the core's `tooljig::stream`.
//!
//! Events cross as dicts tagged by `type` (`text_delta`, `tool_input_start`,
//! `tool_input_delta`, `tool_input_available`, `tool_input_incomplete`, ...), exactly as the
//! core serializes them. Both classes hold incremental state behind a mutex, so they may be
//! shared between threads.

use crate::convert;
use crate::providers::{self, provider_error, read, write};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use std::sync::{Mutex, MutexGuard};
use tooljig::providers::Provider;
use tooljig::stream::{self, StreamEvent, StreamParser, ui_message_stream::UiMessageStream};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stream data as bytes: `bytes`, `bytearray`, `memoryview` or `str` (UTF-8).
fn data_bytes(data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    data.extract::<Vec<u8>>()
}

/// Parses one provider's server-sent-event stream incrementally.
#[pyclass(name = "StreamParser", module = "tooljig._native", frozen)]
pub struct PyStreamParser {
    provider: Provider,
    inner: Mutex<Option<StreamParser>>,
}

#[pymethods]
impl PyStreamParser {
    /// A parser for `provider`'s stream (`"openai_chat"`, `"openai_responses"`,
    /// `"anthropic"`, `"gemini"`).
    #[new]
    fn new(py: Python<'_>, provider: &str) -> PyResult<Self> {
        let provider = providers::provider_named(py, provider)?;
        Ok(PyStreamParser {
            provider,
            inner: Mutex::new(Some(StreamParser::new(provider))),
        })
    }

    /// The provider whose stream this parses.
    #[getter]
    fn provider(&self) -> &'static str {
        self.provider.name()
    }

    /// Feeds bytes as they arrive (split anywhere); returns the events they complete.
    fn push<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let bytes = data_bytes(data)?;
        let mut guard = lock(&self.inner);
        let parser = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("this stream parser was finished"))?;
        let events = parser
            .push(&bytes)
            .map_err(|e| provider_error(py, e.to_string()))?;
        write(py, &events)
    }

    /// Ends the stream: `(last_events, turn)`. Calls whose arguments were cut off are
    /// reported as `tool_input_incomplete` and marked `incomplete` in the turn.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let parser = lock(&self.inner)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this stream parser was finished"))?;
        let (events, turn) = parser
            .finish()
            .map_err(|e| provider_error(py, e.to_string()))?;
        PyTuple::new(py, [write(py, &events)?, write(py, &turn)?])
    }
}

/// Parses a whole recorded stream at once: `(events, turn)`.
#[pyfunction]
pub fn parse_stream<'py>(
    py: Python<'py>,
    provider: &str,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let provider = providers::provider_named(py, provider)?;
    let bytes = data_bytes(data)?;
    let (events, turn) =
        stream::parse_stream(provider, &bytes).map_err(|e| provider_error(py, e.to_string()))?;
    PyTuple::new(py, [write(py, &events)?, write(py, &turn)?])
}

/// Writes one assistant message's Vercel AI SDK UI message stream.
#[pyclass(name = "UiMessageStream", module = "tooljig._native", frozen)]
pub struct PyUiMessageStream {
    inner: Mutex<UiMessageStream>,
}

#[pymethods]
impl PyUiMessageStream {
    /// A writer for the assistant message `message_id`.
    #[new]
    fn new(message_id: &str) -> Self {
        PyUiMessageStream {
            inner: Mutex::new(UiMessageStream::new(message_id)),
        }
    }

    /// The UI chunks (dicts) for one stream event.
    fn chunks<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let event: StreamEvent = read(event, "stream event")?;
        let chunks = lock(&self.inner).chunks(&event);
        convert::to_py(py, &serde_json::Value::Array(chunks))
    }

    /// The SSE frames (`data: {...}\n\n`) for one stream event.
    fn encode(&self, event: &Bound<'_, PyAny>) -> PyResult<String> {
        let event: StreamEvent = read(event, "stream event")?;
        Ok(lock(&self.inner).encode(&event))
    }

    /// Closes what is open and ends the stream with `data: [DONE]`.
    fn done(&self) -> String {
        lock(&self.inner).done()
    }
}

/// A whole run's events as one UI message stream body.
#[pyfunction]
pub fn to_ui_message_stream(message_id: &str, events: &Bound<'_, PyAny>) -> PyResult<String> {
    let events: Vec<StreamEvent> = read(events, "stream events")?;
    Ok(stream::ui_message_stream::to_ui_message_stream(
        message_id, &events,
    ))
}

/// Registers this file's classes, functions and `UI_MESSAGE_STREAM_HEADERS`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStreamParser>()?;
    m.add_class::<PyUiMessageStream>()?;
    m.add_function(wrap_pyfunction!(parse_stream, m)?)?;
    m.add_function(wrap_pyfunction!(to_ui_message_stream, m)?)?;
    let headers: Vec<(&str, &str)> = stream::ui_message_stream::HEADERS.to_vec();
    m.add("UI_MESSAGE_STREAM_HEADERS", headers)?;
    Ok(())
}
