//! Which process this is, for the state a `fork` must not share (the runtime, whose threads a
//! child does not have; the worker pool; the loops' wake-up sockets).
//!
//! Asking the kernel for the process id is a system call, and every batch would ask twice
//! (the runtime, the worker pool). CPython runs `os.register_at_fork` hooks in the child of
//! every `os.fork` (and of C code that forks as its C API asks), the way its own `random`
//! module learns to reseed, so the child's hook counts the fork
//! (`tooljig::process::forked`), and each check is a load. Where the hook cannot be
//! registered (no fork, as on Windows), every process is the first. The core's random ids
//! need none of this: its own fork handler tells it (`tooljig::process`), in the child of any
//! `fork()`, hooked or not.

use pyo3::prelude::*;

/// This process, as the forks counted so far: it differs in every forked child.
pub(crate) fn this_process() -> u64 {
    tooljig::process::forks()
}

#[pyfunction]
fn forked() {
    tooljig::process::forked();
}

/// Registers the hook that counts forks in the child.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let os = py.import("os")?;
    if !os.hasattr("register_at_fork")? {
        return Ok(());
    }
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("after_in_child", wrap_pyfunction!(forked, m)?)?;
    os.call_method("register_at_fork", (), Some(&kwargs))?;
    Ok(())
}
