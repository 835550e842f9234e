//! `tooljig`: the operator's command line over a state store and an audit log given as URLs
//! (`sqlite://PATH`, `postgres://...`, `redis://...`; `jsonl://PATH` for an audit log).
//!
//! Every command prints a table, or JSON with `--json` (one document; JSON Lines for
//! `audit`). A failure is one line on stderr and exit code 1 (2 for a usage mistake).
//! See `docs/operators.md`. The binary is `src/main.rs`; the Python and Node packages call
//! [`run`] from their own `tooljig` commands, so every user has the same one.

mod args;
mod commands;
pub mod inbox;
mod operator;
mod output;
mod stats;

use args::Cli;
use clap::Parser;
use std::ffi::OsString;

/// Runs the command line `args` (the program name first) and returns its exit code: 0, 1 for
/// a failure (one line on stderr), 2 for a usage mistake. Call it from a thread that is not
/// running an async runtime: it blocks on one of its own.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start: {e}")),
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => 0,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> i32 {
    let line = message.lines().next().unwrap_or("failed");
    eprintln!("tooljig: error: {line}");
    1
}
