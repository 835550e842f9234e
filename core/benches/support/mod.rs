//! What the benches share: the runtime they measure in, and names of their own on a server.

#![allow(dead_code)] // each bench uses what it needs

pub mod engines;
pub mod servers;

/// A runtime with two workers: the machine the figures are for has two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A number no other run of a bench has used (ns since the epoch), for names and arguments.
pub fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
