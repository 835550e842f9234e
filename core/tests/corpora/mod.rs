//! Where the corpora written by others live, shared by the corpus tests.
//!
//! The root is `$TOOLJIG_CORPORA`, else `<repo>/../shared/corpora`. A missing corpus skips
//! its test with a printed reason, except under `CI=true`, where it fails: CI must judge
//! tooljig against the corpora, never silently skip them.

use std::path::PathBuf;

/// The corpora root, whether it exists or not.
pub fn root() -> PathBuf {
    match std::env::var_os("TOOLJIG_CORPORA") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"),
    }
}

/// The folder or file `rel` under the corpora root; `None` (after printing why) when it is
/// missing outside CI. Panics under `CI=true` when it is missing.
pub fn locate(rel: &str) -> Option<PathBuf> {
    let path = root().join(rel);
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "corpus {} not found (set TOOLJIG_CORPORA to the corpora folder)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; CI=true requires every corpus");
    }
    eprintln!("SKIPPED: {why}");
    None
}
