//! The `Model` class: every kind of model an agent can call (a Python callable, an HTTP API,
//! a fallback chain, a script for tests) behind one Python type, holding the core's
//! `ModelClient`. Scripted models and fallback chains keep their concrete type too, for what
//! only they can report.

pub mod callable;

use crate::convert;
use crate::error;
use crate::model::callable::PyCallableModel;
use crate::providers::write;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyMapping;
use pyo3::{PyTraverseError, PyVisit};
use std::sync::Arc;
use std::time::Duration;
use tooljig::agent::http::{HttpModel, HttpModelConfig};
use tooljig::agent::{FallbackChain, ModelClient, ScriptedModel, Step, answer};

/// A model the agent can call: a Python callable, an HTTP API, a fallback chain, or a
/// script for tests.
#[pyclass(name = "Model", module = "tooljig._native", frozen)]
pub struct PyModel {
    pub(crate) inner: Arc<dyn ModelClient>,
    scripted: Option<Arc<ScriptedModel>>,
    fallback: Option<Arc<FallbackChain>>,
}

impl PyModel {
    fn plain(inner: Arc<dyn ModelClient>) -> Self {
        PyModel {
            inner,
            scripted: None,
            fallback: None,
        }
    }
}

/// A step of a script: a turn dict, a str, or `{"error": {"kind": ..., "message": ...}}`,
/// read by the core as every binding's scripts are.
fn script_step(obj: &Bound<'_, PyAny>) -> PyResult<Step> {
    let value = convert::from_py(obj)?;
    answer::step_from_value(value).map_err(|e| error::invalid_input(obj.py(), "script step", e))
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[pymethods]
impl PyModel {
    /// Reports to Python's cycle collector the callable of a model over one, when nothing
    /// else holds the model or the callable (as `collect.rs` does for an engine's), so a model
    /// whose callable holds the model is freed.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let model = (Arc::strong_count(&self.inner) == 1)
            .then(|| (self.inner.as_ref() as &dyn std::any::Any).downcast_ref::<PyCallableModel>())
            .flatten();
        match model {
            Some(model) if Arc::strong_count(&model.invoke) == 1 => visit.call(&*model.invoke),
            _ => Ok(()),
        }
    }

    /// A model over `invoke(request, emit)`, the package's wrapper of a user callable.
    #[staticmethod]
    fn callable(name: String, invoke: Py<PyAny>) -> Self {
        PyModel::plain(Arc::new(PyCallableModel {
            name,
            invoke: Arc::new(invoke),
        }))
    }

    /// A model that answers from `steps` (turn dicts or `{"error": {...}}`), in order;
    /// `streaming` streams each turn like a provider; `then_forever` answers every request
    /// after the script.
    #[staticmethod]
    #[pyo3(signature = (name, steps, *, streaming = false, then_forever = None))]
    fn scripted(
        name: String,
        steps: &Bound<'_, PyAny>,
        streaming: bool,
        then_forever: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let steps = steps
            .try_iter()?
            .map(|s| script_step(&s?))
            .collect::<PyResult<Vec<Step>>>()?;
        let mut model = ScriptedModel::new(name, steps);
        if streaming {
            model = model.streaming();
        }
        if let Some(turn) = then_forever.filter(|t| !t.is_none()) {
            let turn = answer::turn_from_value(convert::from_py(turn)?)
                .map_err(|e| error::invalid_input(turn.py(), "then_forever", e))?;
            model = model.then_forever(turn);
        }
        let model = Arc::new(model);
        Ok(PyModel {
            inner: model.clone(),
            scripted: Some(model),
            fallback: None,
        })
    }

    /// A model behind an HTTP API: `provider` is `"openai_chat"` (any Chat Completions
    /// server), `"openai_responses"`, `"anthropic"` or `"gemini"`. Unset options keep the
    /// core's defaults (key from the provider's environment variable, streaming, 3 retries
    /// with backoff from 500 ms to 20 s, 120 s request and 10 s connect timeouts). `headers`
    /// go with every request, replacing a default of the same name.
    #[staticmethod]
    #[pyo3(signature = (
        provider,
        model,
        *,
        base_url = None,
        api_key = None,
        api_key_env = None,
        stream = None,
        strict = false,
        timeout_ms = None,
        connect_timeout_ms = None,
        max_retries = None,
        initial_backoff_ms = None,
        max_backoff_ms = None,
        headers = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn http(
        py: Python<'_>,
        provider: &str,
        model: String,
        base_url: Option<String>,
        api_key: Option<String>,
        api_key_env: Option<String>,
        stream: Option<bool>,
        strict: bool,
        timeout_ms: Option<u64>,
        connect_timeout_ms: Option<u64>,
        max_retries: Option<u32>,
        initial_backoff_ms: Option<u64>,
        max_backoff_ms: Option<u64>,
        headers: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let provider = crate::providers::provider_named(py, provider)?;
        let mut header_map = serde_json::Map::new();
        if let Some(headers) = headers.filter(|h| !h.is_none()) {
            let not_a_mapping = || {
                error::invalid_input(
                    py,
                    "headers",
                    "expected a mapping of header names to values (str to str)".into(),
                )
            };
            let items = headers
                .cast::<PyMapping>()
                .map_err(|_| not_a_mapping())?
                .items()?;
            for item in items.iter() {
                let (name, value): (String, String) =
                    item.extract().map_err(|_| not_a_mapping())?;
                header_map.insert(name, value.into());
            }
        }
        let config = HttpModelConfig {
            base_url,
            api_key,
            api_key_env,
            timeout_ms,
            connect_timeout_ms,
            max_retries,
            initial_backoff_ms,
            max_backoff_ms,
            stream,
            strict,
            headers: header_map,
        };
        let m = HttpModel::from_config(provider, model, config)
            .map_err(|e| error::invalid_input(py, "headers", e.message))?;
        Ok(PyModel::plain(Arc::new(m)))
    }

    /// A chain that sends each request to the first model whose circuit breaker is closed,
    /// and on to the next on failure. `threshold` failures in a row open a breaker for
    /// `cooldown_ms`.
    #[staticmethod]
    #[pyo3(signature = (models, *, threshold = None, cooldown_ms = None))]
    fn fallback(
        py: Python<'_>,
        models: &Bound<'_, PyAny>,
        threshold: Option<u32>,
        cooldown_ms: Option<u64>,
    ) -> PyResult<Self> {
        let mut list = Vec::new();
        for m in models.try_iter()? {
            let m = m?;
            let m = m.cast::<PyModel>().map_err(|_| {
                error::invalid_input(py, "models", "every model must be a tooljig Model".into())
            })?;
            list.push(m.get().inner.clone());
        }
        if list.is_empty() {
            return Err(error::invalid_input(
                py,
                "models",
                "a fallback chain needs at least one model".into(),
            ));
        }
        let mut chain = FallbackChain::new(list);
        if let Some(t) = threshold {
            chain = chain.threshold(t);
        }
        if let Some(c) = cooldown_ms {
            chain = chain.cooldown(ms(c));
        }
        let chain = Arc::new(chain);
        Ok(PyModel {
            inner: chain.clone(),
            scripted: None,
            fallback: Some(chain),
        })
    }

    /// The model's name (`openai:gpt-4o-mini`, the callable's name, ...).
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Every request a scripted model received, in order, as dicts.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self
            .scripted
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a scripted model records requests"))?;
        write(py, &s.requests())
    }

    /// Steps of a scripted model not yet played.
    fn remaining(&self) -> PyResult<usize> {
        let s = self
            .scripted
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a scripted model has a script"))?;
        Ok(s.remaining())
    }

    /// Each circuit breaker of a fallback chain, as dicts.
    fn breakers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let f = self
            .fallback
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a fallback chain has breakers"))?;
        write(py, &f.status())
    }

    fn __repr__(&self) -> String {
        format!("Model({:?})", self.inner.name())
    }
}

/// Registers this file's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModel>()?;
    Ok(())
}
