//! The official JSON-Schema-Test-Suite (required tests of draft 2020-12, and draft 7 when the
//! corpus has it) through tooljig's argument validation: each case's schema is registered as
//! a tool's input schema, its `data` is sent as a call's arguments through `Engine::run`, and
//! the envelope must give the suite's verdict (`ok` = valid; `needs` or `invalid_arguments`
//! = invalid).
//!
//! Remote `$ref`s to `http://localhost:1234/...` are served from the suite's `remotes/`
//! folder in memory through `SchemaResources`; nothing goes over the network.
//!
//! How instances reach the engine: arguments that are JSON strings are parsed as argument
//! text, and `null` means "no arguments"; so a string or null instance is sent as its JSON
//! text (`"\"foo\""`, `"null"`), which strict parsing turns back into exactly that value.
//! Every other instance is sent as a value. Schemas of any type (`true`, `false`, a schema
//! for integers) register as they are: tooljig does not require object schemas. Draft 7
//! schemas get `"$schema": "http://json-schema.org/draft-07/schema#"` when they name none,
//! because tooljig (like the suite's runners) reads a schema without `$schema` as 2020-12.

mod corpora;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use tooljig::{
    BatchOptions, Call, Caller, Engine, Envelope, ErrorCode, SchemaResources, Tool, handler_fn,
};

const DRAFTS: &[(&str, Option<&str>)] = &[
    ("draft2020-12", None),
    ("draft7", Some("http://json-schema.org/draft-07/schema#")),
];

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `remotes/`, keyed by the URI the suite gives it.
fn remotes(dir: &Path) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable remotes folder") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let rel = path.strip_prefix(dir).expect("under remotes");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(format!("http://localhost:1234/{rel}"), read_json(&path));
            }
        }
    }
    out
}

/// The instance as call arguments (see the module doc for strings and null).
fn as_arguments(data: &Value) -> Value {
    match data {
        Value::String(_) | Value::Null => Value::String(data.to_string()),
        other => other.clone(),
    }
}

#[derive(Default)]
struct Tally {
    cases: usize,
    agreed: usize,
    disagreements: Vec<String>,
}

async fn run_draft(
    root: &Path,
    draft: &str,
    meta: Option<&str>,
    resources: &SchemaResources,
) -> Tally {
    let dir = root.join(draft);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("readable draft folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let engine = Engine::new().with_schema_resources(resources.clone());
    let mut t = Tally::default();
    let mut n = 0usize;
    for file in &files {
        let file_name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let groups = read_json(file);
        for group in groups
            .as_array()
            .expect("a suite file is an array of groups")
        {
            let mut schema = group["schema"].clone();
            if let (Some(meta), Value::Object(map)) = (meta, &mut schema) {
                map.entry("$schema").or_insert_with(|| json!(meta));
            }
            let tests = group["tests"].as_array().expect("a group has tests");
            let label = format!("{draft}/{file_name}: {}", group["description"]);
            n += 1;
            let name = format!("schema_{n}");
            let noop = handler_fn(|_args, _ctx| async { Ok(Value::Null) });
            let spec = tooljig::ToolSpec::new(&name, "", schema);
            if let Err(e) = engine.register(Tool::new(spec, noop)) {
                t.cases += tests.len();
                t.disagreements
                    .push(format!("{label}: schema refused at registration: {e}"));
                continue;
            }
            let calls: Vec<Call> = tests
                .iter()
                .enumerate()
                .map(|(i, c)| Call::new(format!("t{i}"), &name, as_arguments(&c["data"])))
                .collect();
            let out = engine
                .run(calls, Caller::default(), BatchOptions::default())
                .await;
            for (case, r) in tests.iter().zip(&out.results) {
                t.cases += 1;
                let want = case["valid"].as_bool().expect("a test says valid or not");
                let got = match &r.envelope {
                    Envelope::Ok(_) => Some(true),
                    Envelope::Needs(_) => Some(false),
                    Envelope::Error(e) if e.code == ErrorCode::InvalidArguments => Some(false),
                    Envelope::Error(_) => None,
                };
                if got == Some(want) {
                    t.agreed += 1;
                } else {
                    t.disagreements.push(format!(
                        "{label} / {}: the suite says valid={want}, tooljig gave {}",
                        case["description"],
                        r.envelope.to_value()
                    ));
                }
            }
        }
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_tests_give_the_suites_verdict() {
    let Some(root) = corpora::locate("json-schema-test-suite/draft2020-12")
        .and_then(|d| d.parent().map(Path::to_path_buf))
    else {
        return;
    };
    let resources = SchemaResources::new(remotes(&root.join("remotes")));
    let mut failures = Vec::new();
    for (draft, meta) in DRAFTS {
        if !root.join(draft).is_dir() {
            println!("json-schema-test-suite {draft}: not in the corpus, skipped");
            continue;
        }
        let t = run_draft(&root, draft, *meta, &resources).await;
        println!(
            "json-schema-test-suite {draft}: {}/{} required cases agree",
            t.agreed, t.cases
        );
        assert!(t.cases > 0, "{draft}: no cases found");
        failures.extend(t.disagreements);
    }
    assert!(
        failures.is_empty(),
        "{} cases disagree with the suite:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
