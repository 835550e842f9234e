//! Helper processes: this test binary run again for one ignored `role` test, with the
//! environment telling it what to play. Each prints one marked line the test reads back.

#![allow(dead_code)] // each test uses what it needs

use std::process::{Child, Command, Stdio};

/// Starts the helper `role` (an ignored test of this binary) with `env`.
pub fn spawn(role: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(["--exact", role, "--ignored", "--nocapture"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the helper starts")
}

/// Waits for a helper; the rest of its line marked `mark` (its answer). Panics with the
/// helper's stderr when it failed or said nothing.
pub fn answer(child: Child, mark: &str) -> String {
    let out = child.wait_with_output().expect("the helper ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the helper failed: {stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(mark))
        .unwrap_or_else(|| panic!("the helper said no {mark:?}: {stderr}"))
        .to_string()
}
