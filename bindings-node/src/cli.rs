//! The package's `tooljig` bin (`bin/tooljig.mjs`): the same command line as the Rust binary.

use napi_derive::napi;

/// Runs the `tooljig` command line with `argv` (program name first); returns its exit code.
/// Blocks the calling thread until the command ends, as a command line does.
#[napi]
pub fn cli(argv: Vec<String>) -> i32 {
    tooljig_cli::run(argv)
}
