//! Where `cargo test --all-targets` put an example's binary, for tests that start it.
//!
//! Built for tests, an example keeps its hash in its name (`examples/mcp_server-0123abcd`);
//! built with `cargo build --example`, it has none. The newest match is the one this build made.

use std::path::PathBuf;

/// The binary of example `name`; panics saying how to build it when there is none.
pub fn path(name: &str) -> PathBuf {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("examples")))
        .expect("the test binary lives in target/<profile>/deps");
    let hashed = format!("{name}-");
    let newest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            let file = e.file_name();
            let file = file.to_string_lossy();
            let stem_ok = file == name
                || (file.starts_with(&hashed) && !file.contains('.') && file.len() > hashed.len());
            stem_ok && e.metadata().is_ok_and(|m| m.is_file())
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    match newest {
        Some(entry) => entry.path(),
        None => panic!(
            "no {name} binary in {}: run the tests with `cargo test --all-targets` (or \
             `cargo build --example {name}` first)",
            dir.display()
        ),
    }
}
