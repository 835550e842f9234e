//! An adversarial batch: the model's calls try to set a hidden argument, call a tool the
//! caller cannot see, and flood a rate-limited tool. Nothing gets through; every call is
//! in the audit log, which verifies.

mod guardrails_common;

use guardrails_common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::audit::{AuditQuery, Outcome, SqliteAudit};
use tooljig::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_gets_through_and_everything_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(SqliteAudit::open(dir.path().join("audit.db")).unwrap());
    let engine = Engine::new().with_audit(sink.clone());

    // A transfer acts for the caller only: `from_user` is hidden, filled from the principal.
    let seen: Arc<Mutex<Vec<Value>>> = Default::default();
    let seen2 = seen.clone();
    let transfer = Tool::from_fn(
        "transfer",
        "Moves credits from the user to someone.",
        json!({"type": "object", "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}, "from_user": {"type": "string"}}, "required": ["to", "amount", "from_user"], "additionalProperties": false}),
        move |args, _| {
            let seen = seen2.clone();
            async move {
                seen.lock().unwrap().push(args.clone());
                Ok(json!({"moved": args["amount"]}))
            }
        },
    )
    .policy(Policy::default().hidden("from_user", HiddenParam::Principal).scopes(["payments.write"]));
    engine.register(transfer).unwrap();
    let admin_runs = Runs::default();
    engine
        .register(echo(
            "delete_tenant",
            object(),
            Policy::default().roles(["admin"]),
            &admin_runs,
        ))
        .unwrap();
    let lookup_runs = Runs::default();
    let limit = RateLimit::per_principal(3, std::time::Duration::from_secs(60));
    engine
        .register(echo(
            "lookup",
            object(),
            Policy::default().rate_limit(limit),
            &lookup_runs,
        ))
        .unwrap();

    let mut attacker = caller("mallory");
    attacker.scopes = vec!["payments.write".into()];
    attacker.roles = vec!["user".into()];
    let visible: Vec<String> = engine
        .specs_for(&attacker)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(visible, vec!["transfer", "lookup"]);
    let transfer_spec = engine.specs_for(&attacker).remove(0);
    assert!(
        transfer_spec.input_schema["properties"]
            .get("from_user")
            .is_none()
    );

    let mut calls = vec![
        Call::new(
            "steal",
            "transfer",
            json!({"to": "mallory", "amount": 100, "from_user": "alice"}),
        ),
        Call::new(
            "steal_str",
            "transfer",
            r#"{"to": "mallory", "amount": 5, "from_user": "bob",}"#,
        ),
        Call::new("nuke", "delete_tenant", json!({"tenant": "acme"})),
        Call::new(
            "nuke_dep",
            "lookup",
            json!({"x": {"$from": "nuke", "pointer": "/ok"}}),
        ),
        Call::new("nuke_case", "Delete_Tenant", json!({})),
    ];
    for i in 0..40 {
        calls.push(Call::new(format!("flood{i}"), "lookup", json!({"i": i})));
    }
    let total = calls.len();
    let out = engine.run(calls, attacker, BatchOptions::default()).await;

    // The hidden argument: the handler only ever saw the caller's own id.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|a| a["from_user"] == "mallory"), "{seen:?}");
    // The invisible tool never ran, however it was reached.
    assert_eq!(admin_runs.get(), 0);
    assert_eq!(code(&out, "nuke").as_deref(), Some("permission_denied"));
    assert_eq!(code(&out, "nuke_dep").as_deref(), Some("dependency_failed"));
    assert_eq!(code(&out, "nuke_case").as_deref(), Some("unknown_tool"));
    // Its suggestions must not reveal the tool the caller cannot see.
    let nuke_case = out.get("nuke_case").unwrap().envelope.to_value();
    assert!(
        !nuke_case.to_string().contains("delete_tenant"),
        "{nuke_case}"
    );
    // The flood: three pass (the burst), the rest are refused with a wait.
    let flood: Vec<&CallResult> = out
        .results
        .iter()
        .filter(|r| r.call_id.starts_with("flood"))
        .collect();
    assert_eq!(flood.iter().filter(|r| r.envelope.is_ok()).count(), 3);
    assert_eq!(lookup_runs.get(), 3);
    for r in flood.iter().filter(|r| !r.envelope.is_ok()) {
        let e = r.envelope.to_value();
        assert_eq!(e["error"]["code"], "rate_limited");
        assert!(e["error"]["retry_after_ms"].as_u64().unwrap() > 0);
    }

    // Everything is audited, including the refusals, and the dropped values are noted.
    let records = sink.query(AuditQuery::principal("mallory")).await.unwrap();
    assert_eq!(records.len(), total);
    let steal = records.iter().find(|r| r.call_id == "steal").unwrap();
    assert_eq!(steal.outcome, Outcome::Ok);
    assert_eq!(steal.hidden[0].supplied, Some(json!("alice")));
    assert_eq!(steal.arguments.as_ref().unwrap()["from_user"], "mallory");
    let limited = sink
        .query(AuditQuery {
            code: Some(ErrorCode::RateLimited),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(limited.len(), 37);
    assert_eq!(
        sink.query(AuditQuery {
            tool: Some("delete_tenant".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .len(),
        1
    );
    let report = sink.verify().await.unwrap();
    assert!(report.is_intact());
    assert_eq!(report.records as usize, total);
    assert_eq!(
        engine.telemetry().tools["lookup"].errors["rate_limited"],
        37
    );
}
