//! `tooljig._native`: the Python binding of tooljig's core.
//!
//! A thin mirror: every behaviour lives in the core; this crate moves JSON values across
//! (`convert.rs`), implements the core's `Handler` and `ModelClient` seams over Python
//! callables (`handler.rs`, `outcome.rs`, `model/callable.rs`), runs sync callables on worker
//! threads (`workers.rs`) and async ones on the caller's event loop (`host.rs`), owns the
//! tokio runtime and its shutdown at exit (`runtime.rs`), and wraps the core's types
//! (`engine.rs`, `batch.rs`, `results.rs`, `events.rs`, `caller.rs`, `context.rs`; the agent
//! loop: `model/`, `agent/`), mapping errors in
//! `error.rs`. The Pythonic layer (decorator, schemas from type hints, `run`, `run_sync`,
//! `stream`) is `python/tooljig/`.

pub mod agent;
pub mod args;
pub mod awaitable;
pub mod batch;
pub mod caller;
pub mod calls;
pub mod collect;
pub mod context;
pub mod convert;
pub mod driven;
pub mod durable;
pub mod engine;
pub mod error;
pub mod events;
pub mod fork;
pub mod guarded;
pub mod handler;
pub mod host;
pub mod imports;
pub mod inbox;
pub mod interrupt;
pub mod keys;
#[cfg(unix)]
pub mod loop_waker;
pub mod mcp;
pub mod model;
pub mod otel;
pub mod outcome;
pub mod providers;
pub mod results;
pub mod runtime;
pub mod seams;
pub mod stream;
pub mod task;
pub mod watchdog;
pub mod workers;

use pyo3::prelude::*;

/// The extension's Rust allocations go to mimalloc. Calls allocate on one worker thread and
/// free on another (results, audit records, cache entries); glibc's allocator serializes that
/// on its arena locks, and made building audit records cost 1.6x more (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stops tooljig before the interpreter finalizes: cancels running batches, waits until no
/// worker thread is inside Python, and stops the runtime. The package registers it with
/// `atexit`; calling it again does nothing. No batch can start afterwards.
#[pyfunction]
fn shutdown(py: Python<'_>) {
    py.detach(|| runtime::shutdown(workers::wait_detached));
}

/// Runs the `tooljig` command line with `argv` (program name first); returns its exit code.
/// The interpreter lock is released meanwhile.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| tooljig_cli::run(argv))
}

/// Every error code an envelope can carry, in the core's order.
fn error_codes() -> Vec<&'static str> {
    tooljig::ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<engine::PyEngine>()?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_class::<mcp::PyMcpServer>()?;
    m.add_class::<inbox::PyInboxServer>()?;
    m.add_class::<mcp::PyMcpClient>()?;
    m.add_class::<batch::PyBatch>()?;
    m.add_class::<results::PyCallResult>()?;
    m.add_class::<results::PyBatchResult>()?;
    m.add_class::<events::PyEvent>()?;
    m.add_class::<caller::PyCaller>()?;
    m.add_class::<context::PyToolContext>()?;
    m.add_function(wrap_pyfunction!(shutdown, m)?)?;
    agent::register(m)?;
    agent::state::register(m)?;
    agent::run::register(m)?;
    model::register(m)?;
    model::callable::register(m)?;
    providers::register(m)?;
    imports::register(m)?;
    otel::register(m)?;
    stream::register(m)?;
    fork::register(m)?;
    m.add("ERROR_CODES", error_codes())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
