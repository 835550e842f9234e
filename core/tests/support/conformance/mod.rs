//! The Rust runner of the language-neutral conformance vectors (`tests/conformance/`).
//!
//! Each `*.json` file under the folder (recursively) is one vector: tools with scripted
//! handlers, a caller, a batch of calls and what must come out. The format is documented in
//! `tests/conformance/README.md`; [`vector`] mirrors it and refuses keys it does not know,
//! so a vector written for a newer format fails here instead of passing unchecked.

pub mod compare;
pub mod durable;
pub mod guards;
pub mod model;
pub mod script;
pub mod vector;

use script::{Invocations, ScriptedHandler};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tooljig::{Engine, Tool};
use vector::Vector;

/// The environment variable that points the runner at another folder.
pub const DIR_ENV: &str = "TOOLJIG_CONFORMANCE_DIR";

/// Longest a vector may run before the runner gives up on it.
const VECTOR_TIMEOUT: Duration = Duration::from_secs(60);

/// The folder to run: `$TOOLJIG_CONFORMANCE_DIR`, else the repository's `tests/conformance`.
pub fn default_dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance"),
    }
}

/// Every `*.json` file under `dir`, sorted.
pub fn discover(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What became of one vector file.
#[derive(Debug)]
pub struct Outcome {
    /// The file, relative to the folder run.
    pub file: PathBuf,
    /// The vector's `name`, when it parsed.
    pub name: Option<String>,
    /// Everything that did not match; empty when the vector passed.
    pub problems: Vec<String>,
}

/// How many vectors run at once. Each has its own runtime on its own thread, so one vector's
/// CPU-heavy step cannot stall another's timers and break its timing facts.
const PARALLEL_VECTORS: usize = 8;

/// Runs every vector under `dir`, several at a time, and returns one outcome per file, in
/// file order.
pub fn run_dir(dir: &Path) -> Result<Vec<Outcome>, String> {
    let files = discover(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if files.is_empty() {
        return Err(format!("no *.json vectors under {}", dir.display()));
    }
    let queue = std::sync::Mutex::new(files.iter().enumerate().collect::<Vec<_>>());
    let done = std::sync::Mutex::new(Vec::with_capacity(files.len()));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..PARALLEL_VECTORS.min(files.len()))
            .map(|_| {
                scope.spawn(|| -> Result<(), String> {
                    let rt = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    loop {
                        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop();
                        let Some((index, path)) = next else {
                            return Ok(());
                        };
                        let (name, problems) = rt.block_on(run_file(path));
                        let file = path.strip_prefix(dir).unwrap_or(path).to_path_buf();
                        let outcome = Outcome {
                            file,
                            name,
                            problems,
                        };
                        done.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((index, outcome));
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| "a vector runner thread panicked".to_string())?
        })
    })?;
    let mut outcomes = done.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|(index, _)| *index);
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

/// Reads, runs and checks one file: the vector's name and its problems.
pub async fn run_file(path: &Path) -> (Option<String>, Vec<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return (None, vec![format!("cannot read the file: {e}")]),
    };
    let vector: Vector = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            return (
                None,
                vec![format!(
                    "not a vector this runner understands: {e} \
                     (extend core/tests/support/conformance/vector.rs for new keys)"
                )],
            );
        }
    };
    let name = vector.name.clone();
    let problems = match tokio::time::timeout(VECTOR_TIMEOUT, run_vector(vector)).await {
        Ok(p) => p,
        Err(_) => vec![format!(
            "the vector did not finish within {} s",
            VECTOR_TIMEOUT.as_secs()
        )],
    };
    (Some(name), problems)
}

/// Registers the vector's tools, runs its batch and compares; returns what did not match.
pub async fn run_vector(v: Vector) -> Vec<String> {
    let mut problems = Vec::new();
    let mut engine = Engine::new();
    if let Some(limits) = &v.engine.limits {
        engine = engine.with_limits(limits.to_limits());
    }
    let invocations = Invocations::default();
    let mut registration = Ok(());
    for entry in v.tools {
        let tool = match entry.script.flatten() {
            Some(script) => {
                if let Err(e) = script.check() {
                    problems.push(format!("tool {:?}: {e}", entry.spec.name));
                    return problems;
                }
                let counter = invocations.counter(&entry.spec.name);
                Tool::new(entry.spec, Arc::new(ScriptedHandler::new(script, counter)))
            }
            None => Tool::external(entry.spec),
        };
        registration = engine.register(tool);
        if registration.is_err() {
            break;
        }
    }
    match (registration, &v.expect.registration_error) {
        (Err(e), Some(want)) => {
            if !e.to_string().contains(want.as_str()) {
                problems.push(format!(
                    "registration failed with {:?}, which does not contain {want:?}",
                    e.to_string()
                ));
            }
            return problems;
        }
        (Ok(()), Some(want)) => {
            problems.push(format!(
                "registration should have failed with {want:?}, but every tool registered"
            ));
            return problems;
        }
        (Err(e), None) => {
            problems.push(format!("registration failed: {e}"));
            return problems;
        }
        (Ok(()), None) => {}
    }
    let (engine, audit) = guards::configure(engine, &v.engine);
    let engine = durable::configure(
        engine,
        v.engine.approval_rules.as_ref(),
        v.engine.approval_predicate.as_ref(),
        v.engine.external_expiry_ms,
    );
    let caller = v.caller.clone();
    guards::check_visibility(
        &engine,
        &caller,
        v.expect.visible.as_ref(),
        v.expect.model_schemas.as_ref(),
        &mut problems,
    );
    if let Some(run) = v.agent {
        if !v.calls.is_empty() || v.model_turn.is_some() {
            problems.push("a vector with `agent` has no `calls` or `model_turn`".into());
            return problems;
        }
        model::run_agent(engine, caller, run, &mut problems).await;
        return problems;
    }
    let calls = match (&v.model_turn, v.calls.is_empty()) {
        (Some(turn), true) => match turn.calls() {
            Ok(calls) => calls,
            Err(e) => {
                problems.push(e);
                return problems;
            }
        },
        (Some(_), false) => {
            problems.push("a vector has `calls` or `model_turn`, not both".into());
            return problems;
        }
        (None, _) => v.calls,
    };
    let out = engine.run(calls, v.caller, v.options).await;
    if let Some(want) = &v.expect.tool_results {
        model::check_tool_results(want, &out, &mut problems);
    }
    guards::check_audit(
        &audit,
        0,
        &out.results,
        v.expect.audit.as_ref(),
        &mut problems,
    )
    .await;
    guards::run_steps(&engine, &audit, &caller, v.then, &mut problems).await;
    if let Some(want) = &v.expect.rollback {
        durable::check_rollback(
            want,
            out.rollback.as_ref(),
            "expect.rollback",
            &mut problems,
        );
    }
    durable::run_steps(&engine, &caller, &out, v.steps, &mut problems).await;
    if let Some(expected) = &v.expect.results {
        compare::results(expected, &out.results, &mut problems);
    }
    compare::timing(&v.expect, &out, &mut problems);
    for (tool, want) in v.expect.invocations.iter().flatten() {
        let got = invocations.get(tool);
        if got != *want {
            problems.push(format!(
                "tool {tool:?}: its handler was invoked {got} times, expected {want}"
            ));
        }
    }
    problems
}

/// `Ok(passed)` when every outcome passed, else a report naming each failing file.
pub fn report(outcomes: &[Outcome]) -> Result<usize, String> {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.problems.is_empty()).collect();
    if failed.is_empty() {
        return Ok(outcomes.len());
    }
    let mut text = format!(
        "{} of {} conformance vectors failed:\n",
        failed.len(),
        outcomes.len()
    );
    for o in failed {
        text.push_str(&format!(
            "\n✗ {} ({})\n",
            o.file.display(),
            o.name.as_deref().unwrap_or("unparsed")
        ));
        for p in &o.problems {
            text.push_str(&format!("  - {p}\n"));
        }
    }
    Err(text)
}
