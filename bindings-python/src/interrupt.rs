//! A Ctrl-C that a handler caught, handed on to the thread that handles it.

use pyo3::prelude::*;

/// Passes a `KeyboardInterrupt` raised in a handler (on a worker thread, or on the loop) on
/// to the main thread, as if Ctrl-C had been pressed: only the main thread handles SIGINT,
/// and the interrupt is the app's, not the call's to swallow. A real signal (not just
/// `_thread.interrupt_main`) so that a main thread waiting in `select` wakes up at once.
pub(crate) fn interrupt_main(py: Python<'_>) {
    let sent = (|| -> PyResult<()> {
        let signal = py.import("signal")?;
        let main = py.import("threading")?.call_method0("main_thread")?;
        signal.call_method1(
            "pthread_kill",
            (main.getattr("ident")?, signal.getattr("SIGINT")?),
        )?;
        Ok(())
    })();
    if sent.is_err() {
        let _ = py
            .import("_thread")
            .and_then(|t| t.call_method0("interrupt_main"));
    }
}
