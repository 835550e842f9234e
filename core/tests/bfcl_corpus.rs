//! BFCL static categories through `import::bfcl` and `Engine::run`: every function doc
//! imports and compiles, every ground-truth call validates, and mutated calls are refused
//! with the right code.
//!
//! Ground truth (`possible_answer/`) lists acceptable values per parameter, `""` meaning
//! "may be omitted"; dict values list acceptable values per key the same way. A call is
//! built from the first acceptable value of each parameter that is not `""`, recursively;
//! parameters whose only acceptable value is `""` are left out.

mod corpora;

use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::Path;
use tooljig::import::bfcl::{BfclOptions, Language, from_bfcl_entry};
use tooljig::{
    BatchOptions, Call, Caller, Engine, Envelope, ErrorCode, Tool, ToolSpec, handler_fn,
};

/// Ground-truth calls that contradict their own function doc, excluded by (entry id, call
/// index) with the reason; every other refusal fails the test.
const KNOWN_QUIRKS: &[(&str, usize, &str)] = &[
    (
        "parallel_multiple_21",
        1,
        "x and y are declared as arrays of floats, but the ground truth passes Python expressions as strings (\"data['sales']\")",
    ),
    (
        "parallel_multiple_94",
        0,
        "sort_list declares integer elements, but the ground truth sorts strings (\"apple\", ...)",
    ),
];

/// When a ground-truth call is refused for optional values (their options also allow
/// omission, `""`), the call without them and the values that were to blame.
async fn omissible_culprits(
    engine: &Engine,
    call: &Call,
    params: &Value,
) -> Option<(Call, String)> {
    let optional: Vec<&String> = params
        .as_object()?
        .iter()
        .filter(|(k, opts)| {
            opts.as_array().is_some_and(|o| o.iter().any(|v| v == ""))
                && call.arguments.get(k.as_str()).is_some()
        })
        .map(|(k, _)| k)
        .collect();
    let without = |drop: &[&String]| {
        let mut args = call.arguments.as_object().cloned().unwrap_or_default();
        for k in drop {
            args.remove(k.as_str());
        }
        Call::new(call.id.clone(), call.tool.clone(), Value::Object(args))
    };
    let passes = |c: Call| async move {
        engine
            .run(vec![c], Caller::default(), BatchOptions::default())
            .await
            .results[0]
            .envelope
            .is_ok()
    };
    if optional.is_empty() || !passes(without(&optional)).await {
        return None;
    }
    let mut culprits = Vec::new();
    for k in &optional {
        if passes(without(&[k])).await {
            culprits.push(format!("{k}={}", call.arguments[k.as_str()]));
        }
    }
    if culprits.is_empty() {
        culprits = optional
            .iter()
            .map(|k| format!("{k}={}", call.arguments[k.as_str()]))
            .collect();
    }
    Some((without(&optional), culprits.join(", ")))
}

/// What a mutated call must be refused with.
enum Expect {
    /// A required field was dropped: the `needs` envelope names it.
    Needs(String),
    /// A value of the wrong type: `invalid_arguments` pointing at it.
    WrongType(String),
    /// A parameter the closed schema does not declare: `invalid_arguments` naming it.
    Extra,
    /// A name no tool has: `unknown_tool`.
    UnknownTool,
}

#[derive(Default)]
struct Tally {
    entries: usize,
    docs: usize,
    calls: usize,
    batches: usize,
    needs: usize,
    wrong_type: usize,
    unknown: usize,
    extra: usize,
    quirks: Vec<String>,
    failures: Vec<String>,
}

fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The first acceptable value that is not the "may be omitted" marker, with dict values
/// resolved the same way; `None` when omitting is the only choice.
fn pick(options: &Value) -> Option<Value> {
    match options {
        Value::Array(opts) => opts.iter().find(|o| *o != "").map(resolve),
        // Not a list of options: a dataset quirk; take the value as written.
        other => Some(resolve(other)),
    }
}

/// A chosen value: dicts hold per-key option lists, arrays may hold such dicts.
fn resolve(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, opts)| pick(opts).map(|v| (k.clone(), v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| if v.is_object() { resolve(v) } else { v.clone() })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn arguments(params: &Value) -> Map<String, Value> {
    params
        .as_object()
        .map(|p| {
            p.iter()
                .filter_map(|(k, opts)| pick(opts).map(|v| (k.clone(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// A value of another JSON type than the schema allows, or `None` when any type goes.
fn wrong_value(schema: &Value) -> Option<Value> {
    let ty = schema.get("type")?.as_str()?;
    Some(match ty {
        "string" => json!(12345),
        "integer" | "number" => json!("not a number"),
        "boolean" => json!("not a boolean"),
        "array" => json!("not a list"),
        "object" => json!(17),
        _ => return None,
    })
}

fn engine_for(specs: &[ToolSpec]) -> Result<Engine, String> {
    let engine = Engine::new();
    for spec in specs {
        let noop = handler_fn(|_args, _ctx| async { Ok(Value::Null) });
        engine
            .register(Tool::new(spec.clone(), noop))
            .map_err(|e| e.to_string())?;
    }
    Ok(engine)
}

fn describe(env: &Envelope) -> String {
    env.to_value().to_string()
}

async fn check_entry(
    entry: &Value,
    truth: Option<&Value>,
    options: &BfclOptions,
    where_: &str,
    t: &mut Tally,
) {
    t.entries += 1;
    let specs = match from_bfcl_entry(entry, options) {
        Ok(s) => s,
        Err(e) => {
            t.failures.push(format!("{where_}: import failed: {e}"));
            return;
        }
    };
    t.docs += specs.len();
    let engine = match engine_for(&specs) {
        Ok(e) => e,
        Err(e) => {
            t.failures
                .push(format!("{where_}: registration failed: {e}"));
            return;
        }
    };
    let Some(truth) = truth else { return };
    let Some(expected) = truth.get("ground_truth").and_then(Value::as_array) else {
        t.failures.push(format!("{where_}: no ground_truth list"));
        return;
    };
    let mut calls = Vec::new();
    for (i, gt) in expected.iter().enumerate() {
        let Some((name, params)) = gt.as_object().and_then(|m| m.iter().next()) else {
            t.failures.push(format!(
                "{where_}: ground truth #{i} is not {{name: params}}"
            ));
            return;
        };
        calls.push(Call::new(
            format!("gt{i}"),
            name.clone(),
            Value::Object(arguments(params)),
        ));
    }

    // The ground truth, as one batch (several calls in the parallel categories).
    t.batches += 1;
    let out = engine
        .run(calls.clone(), Caller::default(), BatchOptions::default())
        .await;
    let mut passing = Vec::new();
    for (i, (call, r)) in calls.iter().zip(&out.results).enumerate() {
        t.calls += 1;
        let id = truth["id"].as_str().unwrap_or_default();
        if let Some((_, _, why)) = KNOWN_QUIRKS.iter().find(|(q, n, _)| *q == id && *n == i) {
            t.quirks
                .push(format!("{where_}: call #{i} {}: {why}", call.tool));
            continue;
        }
        if r.envelope.is_ok() {
            passing.push(call.clone());
            continue;
        }
        let params = &expected[i]
            .as_object()
            .and_then(|m| m.values().next())
            .cloned()
            .unwrap_or_default();
        match omissible_culprits(&engine, call, params).await {
            Some((fixed, culprits)) => {
                t.quirks.push(format!(
                    "{where_}: the doc of {} refuses the optional value(s) {culprits}, which the ground truth lists beside \"\" (omission); checked with them omitted ({})",
                    call.tool,
                    match &r.envelope {
                        Envelope::Error(e) => e.message.clone(),
                        other => describe(other),
                    }
                ));
                passing.push(fixed);
            }
            None => t.failures.push(format!(
                "{where_}: ground truth {}({}) refused: {}",
                call.tool,
                call.arguments,
                describe(&r.envelope)
            )),
        }
    }

    // Mutations of every ground-truth call, in a second batch.
    let mut mutated: Vec<(Call, Expect)> = Vec::new();
    let specs_by_name: HashMap<&str, &ToolSpec> = specs
        .iter()
        .flat_map(|s| {
            std::iter::once((s.name.as_str(), s)).chain(s.original_name.as_deref().map(|o| (o, s)))
        })
        .collect();
    for call in &passing {
        let Some(spec) = specs_by_name.get(call.tool.as_str()) else {
            t.failures.push(format!(
                "{where_}: ground truth calls {:?}, which the entry does not define",
                call.tool
            ));
            continue;
        };
        let args = call.arguments.as_object().cloned().unwrap_or_default();
        let schema = &spec.input_schema;
        let id = |kind: &str| format!("{}-{kind}", call.id);

        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(field) = required.iter().find(|f| args.contains_key(**f)) {
            let mut a = args.clone();
            a.remove(*field);
            mutated.push((
                Call::new(id("drop"), call.tool.clone(), Value::Object(a)),
                Expect::Needs(field.to_string()),
            ));
        }
        if let Some((field, bad)) = args
            .keys()
            .find_map(|k| wrong_value(&schema["properties"][k]).map(|v| (k.clone(), v)))
        {
            let mut a = args.clone();
            a.insert(field.clone(), bad);
            mutated.push((
                Call::new(id("type"), call.tool.clone(), Value::Object(a)),
                Expect::WrongType(format!("/{field}")),
            ));
        }
        mutated.push((
            Call::new(
                id("unknown"),
                format!("{}_undefined", call.tool),
                Value::Object(args.clone()),
            ),
            Expect::UnknownTool,
        ));
        if schema["additionalProperties"] == json!(false) {
            let mut a = args.clone();
            a.insert("unexpected_extra_parameter".into(), json!(1));
            mutated.push((
                Call::new(id("extra"), call.tool.clone(), Value::Object(a)),
                Expect::Extra,
            ));
        }
    }
    let batch: Vec<Call> = mutated.iter().map(|(c, _)| c.clone()).collect();
    let out = engine
        .run(batch, Caller::default(), BatchOptions::default())
        .await;
    for ((call, expect), r) in mutated.iter().zip(&out.results) {
        let env = &r.envelope;
        let invalid = |e: &tooljig::ToolError| e.code == ErrorCode::InvalidArguments;
        let pointers = |e: &tooljig::ToolError| -> Vec<String> {
            e.details["errors"]
                .as_array()
                .map(|errs| {
                    errs.iter()
                        .filter_map(|x| x["pointer"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let good = match (expect, env) {
            (Expect::Needs(field), Envelope::Needs(fields)) => {
                t.needs += 1;
                fields.contains(field)
            }
            (Expect::WrongType(pointer), Envelope::Error(e)) if invalid(e) => {
                t.wrong_type += 1;
                pointers(e).contains(pointer)
            }
            (Expect::Extra, Envelope::Error(e)) if invalid(e) => {
                t.extra += 1;
                e.message.contains("unexpected_extra_parameter")
            }
            (Expect::UnknownTool, Envelope::Error(e)) => {
                t.unknown += 1;
                e.code == ErrorCode::UnknownTool
            }
            _ => false,
        };
        if !good {
            t.failures.push(format!(
                "{where_}: mutated call {} {}({}) gave {}",
                call.id,
                call.tool,
                call.arguments,
                describe(env)
            ));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfcl_docs_import_and_ground_truth_validates() {
    let Some(dir) = corpora::locate("bfcl") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("readable bfcl folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("BFCL_v4_") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no BFCL_v4_*.json in {}", dir.display());
    let mut t = Tally::default();
    for file in &files {
        let file_name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let category = file_name
            .trim_start_matches("BFCL_v4_")
            .trim_end_matches(".json");
        let options = BfclOptions {
            language: Language::of_category(category),
            ..Default::default()
        };
        let answers_path = dir.join("possible_answer").join(file_name);
        let answers: HashMap<String, Value> = if answers_path.exists() {
            lines(&answers_path)
                .into_iter()
                .filter_map(|a| Some((a.get("id")?.as_str()?.to_string(), a)))
                .collect()
        } else {
            HashMap::new()
        };
        let before = (t.entries, t.calls);
        for (n, entry) in lines(file).iter().enumerate() {
            let id = entry.get("id").and_then(Value::as_str).unwrap_or("?");
            let where_ = format!("{file_name}:{} ({id})", n + 1);
            check_entry(entry, answers.get(id), &options, &where_, &mut t).await;
        }
        println!(
            "bfcl {category}: {} entries, {} ground-truth calls",
            t.entries - before.0,
            t.calls - before.1
        );
    }
    println!(
        "bfcl: {} entries, {} function docs imported and compiled; {} ground-truth calls in {} batches; \
         refused as expected: {} needs, {} wrong types, {} unknown tools, {} extra fields",
        t.entries, t.docs, t.calls, t.batches, t.needs, t.wrong_type, t.unknown, t.extra
    );
    for q in &t.quirks {
        println!("bfcl quirk excluded: {q}");
    }
    assert!(
        t.failures.is_empty(),
        "{} BFCL failures:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
    assert!(
        t.docs > 0 && t.calls > 0,
        "the corpus held no checkable calls"
    );
}
