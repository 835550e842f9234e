//! Runs the language-neutral conformance vectors (`tests/conformance/`, or the folder in
//! `$TOOLJIG_CONFORMANCE_DIR`) against the Rust core, and checks that the runner itself
//! catches a wrong vector.

mod support;

use std::path::PathBuf;
use support::conformance::{default_dir, report, run_dir};

#[test]
fn every_vector_passes() {
    let dir = default_dir();
    let outcomes = run_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    match report(&outcomes) {
        Ok(n) => eprintln!("{n} conformance vectors passed ({})", dir.display()),
        Err(text) => panic!("{text}"),
    }
}

/// A scratch folder of vectors, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str, files: &[(&str, &str)]) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("tooljig-conformance-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const GOOD: &str = r#"{
  "name": "echo",
  "tools": [{"spec": {"name": "t"}, "script": {"echo": true}}],
  "calls": [{"id": "a", "tool": "t", "arguments": "{\"x\": 1}"}],
  "expect": {"results": [{"call_id": "a", "envelope": {"ok": true, "data": {"x": 1}}}]}
}"#;

#[test]
fn the_runner_names_each_failing_file_and_shows_the_difference() {
    let wrong = GOOD.replace(r#""data": {"x": 1}"#, r#""data": {"x": 2}"#);
    let late = GOOD.replace(
        r#""expect": {"#,
        r#""expect": {"order": [["a", "a"]], "invocations": {"t": 2}, "#,
    );
    let scratch = Scratch::new(
        "diff",
        &[
            ("good.json", GOOD),
            ("sub/wrong.json", &wrong),
            ("late.json", &late),
            ("notes.txt", "not a vector"),
        ],
    );
    let outcomes = run_dir(&scratch.0).unwrap();
    assert_eq!(outcomes.len(), 3, "only *.json files are vectors");
    let text = report(&outcomes).unwrap_err();
    assert!(
        text.starts_with("2 of 3 conformance vectors failed"),
        "{text}"
    );
    assert!(text.contains("wrong.json"), "{text}");
    assert!(
        text.contains(r#"at "/data/x": expected 2, got 1"#),
        "{text}"
    );
    assert!(text.contains("late.json"), "{text}");
    assert!(text.contains("invoked 1 times, expected 2"), "{text}");
    assert!(text.contains(r#"order ["a", "a"]"#), "{text}");
    assert!(!text.contains("good.json"), "{text}");
}

#[test]
fn unknown_keys_fail_the_vector_loudly() {
    let top = GOOD.replace(r#""name": "echo","#, r#""name": "echo", "guardrails": {},"#);
    let in_result = GOOD.replace(r#""call_id": "a","#, r#""call_id": "a", "audit": [],"#);
    let in_script = GOOD.replace(r#""echo": true"#, r#""echo": true, "resolve": {}"#);
    let two_outcomes = GOOD.replace(r#""echo": true"#, r#""echo": true, "return": 1"#);
    let scratch = Scratch::new(
        "unknown",
        &[
            ("durable/top.json", &top),
            ("result.json", &in_result),
            ("script.json", &in_script),
            ("two.json", &two_outcomes),
        ],
    );
    let outcomes = run_dir(&scratch.0).unwrap();
    for o in &outcomes {
        assert!(!o.problems.is_empty(), "{} passed", o.file.display());
    }
    let text = report(&outcomes).unwrap_err();
    assert!(text.contains("unknown field `guardrails`"), "{text}");
    assert!(text.contains(r#"unknown key "audit""#), "{text}");
    assert!(text.contains("unknown field `resolve`"), "{text}");
    assert!(text.contains("one outcome"), "{text}");
}

#[test]
fn an_empty_folder_is_an_error_not_a_pass() {
    let scratch = Scratch::new("empty", &[("readme.md", "no vectors")]);
    assert!(run_dir(&scratch.0).is_err());
}
