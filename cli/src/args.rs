//! The command line's grammar (clap): the global options and every subcommand.

use clap::{Parser, Subcommand};

/// The operator's side of tooljig: approvals, runs, the audit log.
#[derive(Parser)]
#[command(name = "tooljig", version, about)]
pub struct Cli {
    /// The state store (`sqlite://PATH`, `postgres://...`, `redis://...`).
    #[arg(long, env = "TOOLJIG_STORE", global = true)]
    pub store: Option<String>,
    /// The audit log (`sqlite://PATH`, `jsonl://PATH`, `postgres://...`).
    #[arg(long, env = "TOOLJIG_AUDIT", global = true)]
    pub audit: Option<String>,
    /// The app's seal key (`env:NAME`, `file:PATH`, `hex:HEX`), when it seals decisions and
    /// the audit chain.
    #[arg(long, env = "TOOLJIG_SEAL_KEY", global = true, hide_env_values = true)]
    pub seal_key: Option<String>,
    /// JSON for scripts instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Who decides: the approver's identity, never taken from the request itself.
#[derive(clap::Args, Clone)]
pub struct Approver {
    /// The approver's principal.
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub principal: String,
    /// The approver's tenant.
    #[arg(long)]
    pub tenant: Option<String>,
    /// The approver's roles (comma-separated), for requests that name approver roles.
    #[arg(long, value_delimiter = ',')]
    pub roles: Vec<String>,
}

/// How an operator's request to the app's workers is asked.
#[derive(clap::Args, Clone)]
pub struct Ask {
    /// Who asks (kept with the request).
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub principal: Option<String>,
    /// How long to wait for a worker's answer, in ms. A request no worker took by then is
    /// withdrawn; one a worker holds goes on.
    #[arg(long, default_value_t = 30_000)]
    pub wait_ms: u64,
}

#[derive(Subcommand)]
pub enum Command {
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
    /// Approves a pending request with other arguments, checked against the tool's schema.
    Edit {
        /// The approval id.
        id: String,
        /// The arguments to run with, as JSON.
        #[arg(long)]
        arguments: String,
        /// The arguments hash `pending` showed.
        #[arg(long)]
        hash: Option<String>,
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
    /// Resumes a run. The command has no handlers: an app worker serving operator requests
    /// (`serve_operator_requests`) carries it out and answers.
    Resume {
        /// The run id.
        id: String,
        #[command(flatten)]
        ask: Ask,
    },
    /// Rolls a run back (its completed calls, latest first, or only `--call`), through the
    /// app's compensations: an app worker serving operator requests carries it out.
    Rollback {
        /// The run id.
        id: String,
        /// Only this call.
        #[arg(long = "call", value_name = "CALL_ID")]
        call_id: Option<String>,
        #[command(flatten)]
        ask: Ask,
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
pub enum AuditCommand {
    /// Checks the hash chain; names the first broken link.
    Verify,
}

#[cfg(test)]
mod tests {
    //! Every `tooljig ...` line of the `sh` blocks users read parses with this grammar
    //! (docs/CONTRIBUTING.md): a flag renamed here fails until the docs follow.

    use super::Cli;
    use clap::Parser;
    use std::path::{Path, PathBuf};

    fn docs() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        docs.extend(
            [
                "README.md",
                "bindings-python/README.md",
                "bindings-node/README.md",
            ]
            .map(|d| root.join(d)),
        );
        docs
    }

    /// The command lines of a doc's `sh` blocks, `\` continuations joined, with their line.
    fn command_lines(text: &str) -> Vec<(usize, String)> {
        let (mut out, mut block, mut pending) = (Vec::new(), None, None::<(usize, String)>);
        for (n, line) in text.lines().enumerate() {
            let fence = line.trim_start().strip_prefix("```");
            match (block, fence) {
                (None, Some(info)) => block = Some(matches!(info.trim(), "sh" | "bash" | "shell")),
                (Some(_), Some(_)) => block = None,
                (Some(true), None) => {
                    let (at, mut joined) = pending.take().unwrap_or((n + 1, String::new()));
                    match line.trim_end().strip_suffix('\\') {
                        Some(part) => {
                            joined.push_str(part);
                            pending = Some((at, joined));
                        }
                        None => {
                            joined.push_str(line);
                            out.push((at, joined));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn every_tooljig_command_in_the_docs_parses() {
        let mut parsed = 0;
        for doc in docs() {
            let text = std::fs::read_to_string(&doc).unwrap();
            for (line, command) in command_lines(&text) {
                let words = shlex::split(&command).unwrap_or_default();
                if words.first().map(String::as_str) != Some("tooljig") {
                    continue;
                }
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{}:{line}: `{command}` does not parse:\n{e}", doc.display());
                }
                parsed += 1;
            }
        }
        assert!(
            parsed >= 10,
            "only {parsed} tooljig commands found in the docs"
        );
    }
}
