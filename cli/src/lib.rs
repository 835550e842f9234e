//! `tooljig`: the operator's command line over a state store and an audit log given as URLs
//! (`sqlite://PATH`, `postgres://...`, `redis://...`; `jsonl://PATH` for an audit log).
//!
//! Every command prints a table, or JSON with `--json` (one document; JSON Lines for
//! `audit`). A failure is one line on stderr and exit code 1 (2 for a usage mistake).
//! See `docs/operators.md`. The binary is `src/main.rs`; the Python and Node packages call
//! [`run`] from their own `tooljig` commands, so every user has the same one.

mod commands;
pub mod inbox;
mod output;
mod stats;

use clap::{Parser, Subcommand};
use std::ffi::OsString;

/// The operator's side of tooljig: approvals, runs, the audit log.
#[derive(Parser)]
#[command(name = "tooljig", version, about)]
struct Cli {
    /// The state store (`sqlite://PATH`, `postgres://...`, `redis://...`).
    #[arg(long, env = "TOOLJIG_STORE", global = true)]
    store: Option<String>,
    /// The audit log (`sqlite://PATH`, `jsonl://PATH`, `postgres://...`).
    #[arg(long, env = "TOOLJIG_AUDIT", global = true)]
    audit: Option<String>,
    /// The app's seal key (`env:NAME`, `file:PATH`, `hex:HEX`), when it seals decisions and
    /// the audit chain.
    #[arg(long, env = "TOOLJIG_SEAL_KEY", global = true, hide_env_values = true)]
    seal_key: Option<String>,
    /// JSON for scripts instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// Who decides: the approver's identity, never taken from the request itself.
#[derive(clap::Args, Clone)]
struct Approver {
    /// The approver's principal.
    #[arg(long = "as", value_name = "PRINCIPAL")]
    principal: String,
    /// The approver's tenant.
    #[arg(long)]
    tenant: Option<String>,
    /// The approver's roles (comma-separated), for requests that name approver roles.
    #[arg(long, value_delimiter = ',')]
    roles: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Pending approval requests, oldest first.
    Pending {
        /// Only this tenant's.
        #[arg(long)]
        tenant: Option<String>,
        /// Only this tool's.
        #[arg(long)]
        tool: Option<String>,
    },
    /// Approves a pending request as asked.
    Approve {
        /// The approval id.
        id: String,
        /// The arguments hash `pending` showed: the decision holds only for those arguments.
        #[arg(long)]
        hash: Option<String>,
        #[command(flatten)]
        approver: Approver,
    },
    /// Rejects a pending request; the model sees the message.
    Reject {
        /// The approval id.
        id: String,
        /// The arguments hash `pending` showed.
        #[arg(long)]
        hash: Option<String>,
        /// Why, for the model.
        #[arg(long)]
        message: Option<String>,
        #[command(flatten)]
        approver: Approver,
    },
    /// Stored runs, newest first.
    Runs {
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One run: its calls, results and step log.
    Run {
        /// The run id.
        id: String,
    },
    /// Serves the approval inbox in the browser until interrupted.
    Serve {
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8700")]
        bind: String,
        /// An operator's token and who it stands for: `TOKEN=PRINCIPAL[:ROLE,ROLE]`
        /// (repeat for each operator).
        #[arg(long = "token", value_name = "TOKEN=PRINCIPAL", required = true)]
        tokens: Vec<String>,
    },
    /// Calls per tool from the audit log: outcomes, error codes, durations.
    Stats {
        /// From this time on, in ms since the Unix epoch.
        #[arg(long)]
        since: Option<u64>,
    },
    /// The audit log, or `audit verify`.
    Audit {
        #[command(subcommand)]
        verify: Option<AuditCommand>,
        /// Only this principal's calls.
        #[arg(long)]
        principal: Option<String>,
        /// Only this tool's calls.
        #[arg(long)]
        tool: Option<String>,
        /// Only this outcome (`ok`, `error`, `needs`, `pending`, ...).
        #[arg(long)]
        outcome: Option<String>,
        /// From this time on, in ms since the Unix epoch.
        #[arg(long)]
        since: Option<u64>,
        /// Before this time, in ms since the Unix epoch.
        #[arg(long)]
        until: Option<u64>,
        /// At most this many records (the newest).
        #[arg(long)]
        limit: Option<usize>,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Checks the hash chain; names the first broken link.
    Verify,
}

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
