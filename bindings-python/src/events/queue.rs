//! The events a batch or an agent run streams to the event loop, and the one `next_events()`
//! future that may be waiting for them. Both live behind their owner's lock; the events are
//! converted to Python objects after it is released.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::collections::VecDeque;

/// Events not yet taken, the pending `next_events()` future, and whether the stream ended.
pub(crate) struct EventQueue<E> {
    /// `None` when the caller did not ask for events: nothing is kept.
    events: Option<VecDeque<E>>,
    waiter: Option<Py<PyAny>>,
    done: bool,
}

impl<E> EventQueue<E> {
    /// A queue that keeps events only when `streams`.
    pub(crate) fn new(streams: bool) -> Self {
        EventQueue {
            events: streams.then(VecDeque::new),
            waiter: None,
            done: false,
        }
    }

    /// Keeps an event, when the caller streams them.
    pub(crate) fn push(&mut self, event: E) {
        if let Some(q) = self.events.as_mut() {
            q.push_back(event);
        }
    }

    /// Marks the end of the stream: `next_events()` then gets what is left, and after that
    /// empty lists.
    pub(crate) fn finish(&mut self) {
        self.done = true;
    }

    /// The waiting future and the events to resolve it with, when one waits and there is
    /// something to give it (events, or the end).
    pub(crate) fn ready(&mut self) -> Option<(Py<PyAny>, Vec<E>)> {
        if !(self.buffered() || self.done) {
            return None;
        }
        let waiter = self.waiter.take()?;
        Some((waiter, self.drain()))
    }

    /// `next_events()` with its new `future`: the events to resolve it with at once, or
    /// `None` when it must wait for the next one (it is kept as the waiter). `what` names the
    /// stream in errors ("batch", "run").
    pub(crate) fn next(
        &mut self,
        future: &Bound<'_, PyAny>,
        what: &str,
    ) -> PyResult<Option<Vec<E>>> {
        if self.events.is_none() {
            return Err(PyRuntimeError::new_err(format!(
                "this {what} was not started with events"
            )));
        }
        if self.waiter.is_some() {
            return Err(PyRuntimeError::new_err(format!(
                "next_events() is already awaited for this {what}"
            )));
        }
        if self.buffered() || self.done {
            return Ok(Some(self.drain()));
        }
        self.waiter = Some(future.clone().unbind());
        Ok(None)
    }

    fn buffered(&self) -> bool {
        self.events.as_ref().is_some_and(|q| !q.is_empty())
    }

    fn drain(&mut self) -> Vec<E> {
        self.events
            .as_mut()
            .map(|q| q.drain(..).collect())
            .unwrap_or_default()
    }
}
