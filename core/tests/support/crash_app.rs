//! The app of the crash scenario (`tests/crash/scenario.json`), built in Rust: what the Rust
//! worker (`crash_worker.rs`) and `durable_crash.rs` run, and what `worker.py` and
//! `worker.mjs` build in Python and Node.

use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use tooljig::store::Namespace;
use tooljig::*;

/// The scenario, read from the repository.
pub fn scenario() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/crash/scenario.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("the scenario is JSON")
}

/// Where the round's state and audit live: the state store at the URL in `dir/backend.url`
/// (a PostgreSQL schema or a Redis prefix of the round's own) and the audit log there too
/// when it is PostgreSQL; SQLite files in `dir` otherwise.
pub fn backend(dir: &Path) -> (Value, Value) {
    let sqlite = |name: &str| json!({"sqlite": dir.join(name)});
    match std::fs::read_to_string(dir.join("backend.url")) {
        Ok(url) if url.starts_with("postgres") => (json!(url.trim()), json!(url.trim())),
        Ok(url) => (json!(url.trim()), sqlite("audit.db")),
        Err(_) => (sqlite("state.db"), sqlite("audit.db")),
    }
}

/// The app, as every process builds it: state and audit where [`backend`] says, one tool
/// per effect class, each making its effect durable before a pause a kill may cut.
pub fn app(dir: &Path) -> Engine {
    let s = scenario();
    let (state, audit) = backend(dir);
    let engine = EngineOptions::from_value(json!({
        "state_store": state, "audit": audit, "run_lease_ms": s["lease_ms"],
    }))
    .and_then(EngineOptions::build)
    .unwrap();
    for t in s["tools"].as_array().unwrap() {
        let class: EffectClass = serde_json::from_value(t["effect_class"].clone()).unwrap();
        let effects = dir.join("effects.txt");
        let handler = move |args: Value, ctx: ToolContext| {
            let effects = effects.clone();
            async move {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&effects)
                    .map_err(HandlerError::unexpected)?;
                // One write, so a kill never leaves half a line.
                let line = format!("{} {}\n", ctx.call_id, ctx.idempotency_key());
                f.write_all(line.as_bytes())
                    .map_err(HandlerError::unexpected)?;
                f.sync_all().map_err(HandlerError::unexpected)?;
                let pause = args["pause_ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(pause)).await;
                Ok(json!({"did": ctx.call_id.to_string()}))
            }
        };
        let name = t["name"].as_str().unwrap();
        engine
            .register(
                Tool::from_fn(name, "An effect.", json!({"type": "object"}), handler)
                    .policy(Policy::default().effect_class(class)),
            )
            .unwrap();
    }
    engine
}

/// The scenario's calls, repeated as many times as `dir/copies` says (once without it):
/// copy `k` of call `c3` is `c3_k`, and depends on copy `k` of what `c3` depends on. The
/// scenario has a multiple of three calls, so call `i` of the whole run still uses tool
/// `i % 3`.
pub fn calls(dir: &Path) -> Vec<Call> {
    let one: Vec<Call> =
        serde_json::from_value(scenario()["calls"].clone()).expect("the calls read");
    let copies: usize = std::fs::read_to_string(dir.join("copies"))
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1);
    let mut out = Vec::with_capacity(one.len() * copies);
    for k in 0..copies {
        let rename = |id: &str| match k {
            0 => id.to_string(),
            _ => format!("{id}_{k}"),
        };
        for c in &one {
            let mut c = c.clone();
            c.id = rename(&c.id);
            c.depends_on = c.depends_on.iter().map(|d| rename(d)).collect();
            out.push(c);
        }
    }
    out
}

/// Plays `role` (`start`, or `resume` of `run`) to the end of its pass and writes
/// `final.json`; calls `ready` once the engine is built.
pub fn play(role: &str, dir: &Path, run: Option<&str>, ready: impl FnOnce()) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let engine = app(dir);
        ready();
        let principal = scenario()["principal"].as_str().unwrap().to_string();
        let out = match role {
            "start" => {
                engine
                    .run(
                        calls(dir),
                        Caller::principal(principal),
                        BatchOptions::default(),
                    )
                    .await
            }
            _ => engine
                .resume(run.expect("a run id to resume"))
                .await
                .unwrap_or_else(|e| panic!("resume refused: {e}")),
        };
        let results: Vec<Value> = out
            .results
            .iter()
            .map(|r| json!({"call": r.call_id, "envelope": r.envelope.to_value()}))
            .collect();
        // Written aside and renamed: a kill mid-write never leaves a half file that reads as
        // finished.
        std::fs::write(
            dir.join("final.json.tmp"),
            Value::Array(results).to_string(),
        )
        .unwrap();
        std::fs::rename(dir.join("final.json.tmp"), dir.join("final.json")).unwrap();
    });
}

/// Whether the round's audit chain verifies.
pub fn audit_intact(dir: &Path) -> bool {
    let sink = AuditSpec::parse(&backend(dir).1).unwrap().open().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(sink.verify()).unwrap().is_intact()
}

/// The run the store in `dir` holds, if a first pass got as far as writing it.
pub fn stored_run(dir: &Path) -> Option<String> {
    let store = StoreSpec::parse(&backend(dir).0).unwrap().open().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runs = rt.block_on(store.list(Namespace::Run, "", 10)).unwrap();
    assert!(runs.len() <= 1, "one scenario, one run");
    runs.into_iter().next().map(|(id, _)| id)
}
