//! The Rust side of the cross-language approval test (bindings-node/tests/cross-language.test.mjs):
//! `transfer_worker resume URL RUN_ID` builds the app (a high-risk `transfer` that needs
//! approval; state store and audit log at `URL`, sealed with the key `TOOLJIG_SEAL_KEY` names,
//! e.g. `hex:...`), resumes the run and prints its results as JSON.

use serde_json::{Value, json};
use tooljig::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [role, url, run] = &args[..] else {
        eprintln!("usage: transfer_worker resume URL RUN_ID");
        std::process::exit(2);
    };
    assert_eq!(role, "resume", "the one role");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(async {
        let engine = EngineOptions::from_value(json!({
            "state_store": url,
            "audit": url,
            "seal_key": std::env::var("TOOLJIG_SEAL_KEY").expect("TOOLJIG_SEAL_KEY names the key"),
            "approval_rules": {"min_risk": "high"},
        }))
        .and_then(EngineOptions::build)
        .unwrap();
        let schema = json!({"type": "object", "properties": {"amount": {"type": "integer"}}});
        engine
            .register(
                Tool::from_fn(
                    "transfer",
                    "Moves money.",
                    schema,
                    |a: Value, _| async move { Ok(json!({"moved": a["amount"], "by": "rust"})) },
                )
                .policy(Policy::default().risk(Risk::High)),
            )
            .unwrap();
        engine.resume(run).await.unwrap()
    });
    let results: Vec<Value> = out
        .results
        .iter()
        .map(|r| json!({"call": r.call_id, "envelope": r.envelope.to_value()}))
        .collect();
    println!("{}", Value::Array(results));
}
