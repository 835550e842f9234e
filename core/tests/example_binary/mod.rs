//! An example's binary, for tests that start it as a process.
//!
//! `cargo test --all-targets` builds examples with the test harness (a binary that lists zero
//! tests), so the runnable binary is the one `cargo build --example NAME` makes, at
//! `target/<profile>/examples/NAME`. `scripts/test.sh` builds the examples first; a test run
//! alone builds the one it needs here.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// The runnable binary of example `name`, built now when missing.
pub fn path(name: &str) -> PathBuf {
    // One build at a time: tests of one binary run in parallel, and a second `cargo build`
    // of the same example, started while the first still builds, failed in CI.
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("examples")))
        .expect("the test binary lives in target/<profile>/deps");
    let binary = dir.join(name);
    if !binary.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "tooljig", "--example", name])
            .args(["--no-default-features", "--features", &features()])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status();
        assert!(
            built.is_ok_and(|s| s.success()) && binary.exists(),
            "cannot build {}: run `cargo build -p tooljig --example {name}` first",
            binary.display()
        );
    }
    binary
}

/// The crate's features this test was built with, for the example: the same build, not a
/// second one of the library with other features.
fn features() -> String {
    let on = [
        ("bundled-sqlite", cfg!(feature = "bundled-sqlite")),
        ("http", cfg!(feature = "http")),
        ("postgres", cfg!(feature = "postgres")),
        ("redis", cfg!(feature = "redis")),
        ("otel", cfg!(feature = "otel")),
        ("mcp", cfg!(feature = "mcp")),
    ];
    let names: Vec<&str> = on
        .iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| *name)
        .collect();
    names.join(",")
}
