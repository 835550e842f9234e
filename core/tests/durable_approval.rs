//! Human approval (step 8): rules, pending results, decisions bound to argument hashes,
//! refusals of forged, replayed and unauthorised decisions, expiry, learned preferences.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tooljig::*;

struct Fixture {
    engine: Engine,
    sent: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<Value>>>,
}

/// `send_email` (high risk, approval by role `reviewer` when `reviewers` is set),
/// `search` (low risk) and `log` (depends on nothing).
fn fixture(rules: ApprovalRules, reviewers: bool, expires_ms: Option<u64>) -> Fixture {
    let sent = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let engine = Engine::new().with_approval_rules(rules);
    let (s, v) = (sent.clone(), seen.clone());
    let mut policy = Policy::default().risk(Risk::High);
    if reviewers {
        policy.approval.approver_roles = vec!["reviewer".into()];
    }
    if let Some(ms) = expires_ms {
        policy.approval.expires_ms = ms;
    }
    engine
        .register(
            Tool::from_fn(
                "send_email",
                "Sends an email.",
                json!({"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to"]}),
                move |args: Value, _| {
                    let (s, v) = (s.clone(), v.clone());
                    async move {
                        s.fetch_add(1, Ordering::SeqCst);
                        v.lock().unwrap().push(args.clone());
                        Ok(json!({"sent_to": args["to"]}))
                    }
                },
            )
            .policy(policy),
        )
        .unwrap();
    engine
        .register(Tool::from_fn(
            "search",
            "Searches.",
            json!({"type": "object"}),
            |args: Value, _| async move { Ok(json!({"found": args})) },
        ))
        .unwrap();
    Fixture { engine, sent, seen }
}

fn high() -> ApprovalRules {
    ApprovalRules {
        min_risk: Some(Risk::High),
    }
}

fn alice() -> Caller {
    Caller {
        principal: Some("alice".into()),
        tenant: Some("acme".into()),
        ..Default::default()
    }
}

fn reviewer(name: &str) -> Caller {
    Caller {
        principal: Some(name.into()),
        tenant: Some("acme".into()),
        roles: vec!["reviewer".into()],
        ..Default::default()
    }
}

fn approve(hash: &str) -> Decision {
    Decision::Approve {
        arguments_hash: hash.into(),
        remember: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_risk_call_waits_independent_calls_go_on_dependents_wait() {
    let f = fixture(high(), true, None);
    let out = f
        .engine
        .run(
            vec![
                Call::new(
                    "mail",
                    "send_email",
                    json!({"to": "bob@x.io", "body": "hi"}),
                ),
                Call::new("look", "search", json!({"q": 1})),
                Call::new(
                    "after",
                    "search",
                    json!({"id": {"$from": "mail", "pointer": "/sent_to"}}),
                ),
            ],
            alice(),
            BatchOptions::default(),
        )
        .await;
    let mail = out.get("mail").unwrap();
    assert_eq!(mail.status, CallStatus::PendingApproval);
    assert_eq!(mail.envelope.code(), Some(ErrorCode::PendingApproval));
    let info = mail.approval.as_ref().unwrap();
    assert_eq!(info.status, ApprovalStatus::Pending);
    assert_eq!(info.risk, Risk::High);
    assert_eq!(info.requested_by.as_deref(), Some("alice"));
    assert_eq!(
        mail.arguments,
        Some(json!({"to": "bob@x.io", "body": "hi"}))
    );
    assert_eq!(mail.tool, "send_email");
    assert!(
        out.get("look").unwrap().envelope.is_ok(),
        "independent calls run"
    );
    assert_eq!(out.get("after").unwrap().status, CallStatus::Waiting);
    assert_eq!(f.sent.load(Ordering::SeqCst), 0, "nothing was sent");
    let run_id = out.run_id.clone().expect("a suspended batch is a run");
    let id = info.id.clone().unwrap();

    // The inbox shows it; a decision runs it and releases the dependent.
    let inbox = f.engine.pending_approvals(Some("acme")).await.unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].arguments_hash, info.arguments_hash);
    let decided = f
        .engine
        .decide(&id, approve(&info.arguments_hash), &reviewer("rita"))
        .await
        .unwrap();
    assert_eq!(decided.status, ApprovalStatus::Approved);
    let resumed = f.engine.resume(&run_id).await.unwrap();
    let mail = resumed.get("mail").unwrap();
    assert_eq!(
        mail.envelope.to_value(),
        json!({"ok": true, "data": {"sent_to": "bob@x.io"}})
    );
    let info = mail.approval.as_ref().unwrap();
    assert_eq!(info.decided_by.as_deref(), Some("rita"));
    assert!(info.decided_at_ms.is_some());
    assert_eq!(
        resumed.get("after").unwrap().envelope.to_value(),
        json!({"ok": true, "data": {"found": {"id": "bob@x.io"}}})
    );
    assert_eq!(
        resumed.get("look").unwrap().envelope,
        out.get("look").unwrap().envelope
    );
    assert_eq!(f.sent.load(Ordering::SeqCst), 1);
    // Resuming a finished run runs nothing again.
    let again = f.engine.resume(&run_id).await.unwrap();
    assert_eq!(again.results, resumed.results);
    assert_eq!(f.sent.load(Ordering::SeqCst), 1);
    let record = f.engine.run_record(&run_id).await.unwrap().unwrap();
    assert_eq!(record.state, RunState::Finished);
    assert!(record.steps.iter().any(|s| s.what == "suspended"));
    assert!(record.steps.iter().any(|s| s.what == "resumed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_risk_is_auto_approved_and_rules_are_per_tool() {
    let f = fixture(high(), true, None);
    let out = f
        .engine
        .run(
            vec![Call::new("s", "search", json!({}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(out.results[0].status, CallStatus::Done);
    assert!(out.results[0].approval.is_none());
    // Without a risk rule, a high-risk tool runs unless its own policy asks.
    let f = fixture(ApprovalRules::default(), true, None);
    let out = f
        .engine
        .run(
            vec![Call::new("m", "send_email", json!({"to": "a@b.c"}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    assert!(out.results[0].envelope.is_ok());
    let engine = Engine::new();
    engine
        .register(
            Tool::from_fn("wipe", "Wipes.", json!({"type": "object"}), |_, _| async {
                Ok(json!(true))
            })
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("w", "wipe", json!({}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(out.results[0].status, CallStatus::PendingApproval);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_predicate_in_the_apps_language_decides() {
    let engine = Engine::new().with_approval_predicate(approval_predicate_fn(|q| async move {
        Ok(q.arguments["amount"].as_i64().unwrap_or(0) > 100 && q.caller.roles.is_empty())
    }));
    engine
        .register(Tool::from_fn(
            "refund",
            "Refunds.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    let out = engine
        .run(
            vec![
                Call::new("small", "refund", json!({"amount": 5})),
                Call::new("big", "refund", json!({"amount": 500})),
            ],
            alice(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(out.get("small").unwrap().status, CallStatus::Done);
    assert_eq!(out.get("big").unwrap().status, CallStatus::PendingApproval);
    // A failing predicate fails closed.
    let engine = Engine::new().with_approval_predicate(approval_predicate_fn(|_| async {
        Err("policy service down".to_string())
    }));
    engine
        .register(Tool::from_fn(
            "refund",
            "Refunds.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("x", "refund", json!({}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    let r = &out.results[0];
    assert_eq!(r.status, CallStatus::PendingApproval);
    assert!(
        r.approval
            .as_ref()
            .unwrap()
            .reason
            .as_deref()
            .unwrap()
            .contains("policy service down")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replayed_mismatched_and_unauthorised_decisions_are_refused() {
    let f = fixture(high(), true, None);
    let out = f
        .engine
        .run(
            vec![Call::new("m", "send_email", json!({"to": "bob@x.io"}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    let info = out.results[0].approval.clone().unwrap();
    let id = info.id.clone().unwrap();
    let reason = |e: ToolError| (e.code, e.details["reason"].as_str().unwrap().to_string());

    let unknown = f
        .engine
        .decide(
            "apr_forged",
            approve(&info.arguments_hash),
            &reviewer("rita"),
        )
        .await;
    assert_eq!(
        reason(unknown.unwrap_err()),
        (ErrorCode::NotFound, "unknown_approval".into())
    );
    let wrong_hash = f
        .engine
        .decide(&id, approve(&"0".repeat(64)), &reviewer("rita"))
        .await;
    assert_eq!(
        reason(wrong_hash.unwrap_err()),
        (ErrorCode::Conflict, "arguments_mismatch".into())
    );
    let self_approval = f
        .engine
        .decide(&id, approve(&info.arguments_hash), &alice())
        .await;
    assert_eq!(
        reason(self_approval.unwrap_err()),
        (ErrorCode::PermissionDenied, "not_an_approver".into())
    );
    let mut elsewhere = reviewer("rita");
    elsewhere.tenant = Some("other".into());
    let cross_tenant = f
        .engine
        .decide(&id, approve(&info.arguments_hash), &elsewhere)
        .await;
    assert_eq!(
        reason(cross_tenant.unwrap_err()),
        (ErrorCode::PermissionDenied, "not_an_approver".into())
    );
    let anonymous = f
        .engine
        .decide(&id, approve(&info.arguments_hash), &Caller::default())
        .await;
    assert_eq!(anonymous.unwrap_err().code, ErrorCode::PermissionDenied);

    f.engine
        .decide(
            &id,
            Decision::Reject {
                arguments_hash: info.arguments_hash.clone(),
                message: Some("not to Bob, ever".into()),
            },
            &reviewer("rita"),
        )
        .await
        .unwrap();
    let replayed = f
        .engine
        .decide(&id, approve(&info.arguments_hash), &reviewer("rita"))
        .await;
    assert_eq!(
        reason(replayed.unwrap_err()),
        (ErrorCode::Conflict, "already_decided".into())
    );

    let resumed = f
        .engine
        .resume(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    let r = &resumed.results[0];
    assert_eq!(r.envelope.code(), Some(ErrorCode::ApprovalRejected));
    assert!(
        r.envelope.to_value()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not to Bob, ever")
    );
    assert_eq!(
        r.approval.as_ref().unwrap().decided_by.as_deref(),
        Some("rita")
    );
    assert_eq!(f.sent.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_validated_and_exactly_the_edit_runs() {
    let f = fixture(high(), true, None);
    let out = f
        .engine
        .run(
            vec![Call::new(
                "m",
                "send_email",
                json!({"to": "bob@x.io", "body": "draft"}),
            )],
            alice(),
            BatchOptions::default(),
        )
        .await;
    let info = out.results[0].approval.clone().unwrap();
    let id = info.id.clone().unwrap();
    let bad = f
        .engine
        .decide(
            &id,
            Decision::Edit {
                arguments_hash: info.arguments_hash.clone(),
                arguments: json!({"to": 42}),
            },
            &reviewer("rita"),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidArguments);
    assert_eq!(bad.details["reason"], "invalid_edit");
    let edited = json!({"to": "bob@x.io", "body": "final text"});
    f.engine
        .decide(
            &id,
            Decision::Edit {
                arguments_hash: info.arguments_hash.clone(),
                arguments: edited.clone(),
            },
            &reviewer("rita"),
        )
        .await
        .unwrap();
    let resumed = f
        .engine
        .resume(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    let r = &resumed.results[0];
    assert!(r.envelope.is_ok());
    assert_eq!(r.arguments.as_ref(), Some(&edited));
    assert_eq!(r.approval.as_ref().unwrap().status, ApprovalStatus::Edited);
    assert_eq!(*f.seen.lock().unwrap(), vec![edited]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_pending_are_decided_independently_in_any_order() {
    let f = fixture(high(), true, None);
    let calls = (0..3)
        .map(|i| {
            Call::new(
                format!("m{i}"),
                "send_email",
                json!({"to": format!("p{i}@x.io")}),
            )
        })
        .collect();
    let out = f.engine.run(calls, alice(), BatchOptions::default()).await;
    let run_id = out.run_id.clone().unwrap();
    let info = |i: usize| out.results[i].approval.clone().unwrap();
    // Decide the last first, resume, then the first: each settles on its own.
    f.engine
        .decide(
            info(2).id.as_deref().unwrap(),
            approve(&info(2).arguments_hash),
            &reviewer("rita"),
        )
        .await
        .unwrap();
    let mid = f.engine.resume(&run_id).await.unwrap();
    assert!(mid.get("m2").unwrap().envelope.is_ok());
    assert_eq!(mid.get("m0").unwrap().status, CallStatus::PendingApproval);
    assert_eq!(mid.get("m1").unwrap().status, CallStatus::PendingApproval);
    f.engine
        .decide(
            info(0).id.as_deref().unwrap(),
            Decision::Reject {
                arguments_hash: info(0).arguments_hash,
                message: None,
            },
            &reviewer("sam"),
        )
        .await
        .unwrap();
    f.engine
        .decide(
            info(1).id.as_deref().unwrap(),
            approve(&info(1).arguments_hash),
            &reviewer("sam"),
        )
        .await
        .unwrap();
    let end = f.engine.resume(&run_id).await.unwrap();
    assert_eq!(
        end.get("m0").unwrap().envelope.code(),
        Some(ErrorCode::ApprovalRejected)
    );
    assert!(end.get("m1").unwrap().envelope.is_ok());
    assert!(end.get("m2").unwrap().envelope.is_ok());
    assert_eq!(f.sent.load(Ordering::SeqCst), 2, "m2 did not run twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_request_expires() {
    let f = fixture(high(), true, Some(80));
    let out = f
        .engine
        .run(
            vec![Call::new("m", "send_email", json!({"to": "bob@x.io"}))],
            alice(),
            BatchOptions::default(),
        )
        .await;
    let info = out.results[0].approval.clone().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let late = f
        .engine
        .decide(
            info.id.as_deref().unwrap(),
            approve(&info.arguments_hash),
            &reviewer("rita"),
        )
        .await
        .unwrap_err();
    assert_eq!(late.code, ErrorCode::ApprovalExpired);
    let resumed = f
        .engine
        .resume(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        resumed.results[0].envelope.code(),
        Some(ErrorCode::ApprovalExpired)
    );
    assert_eq!(resumed.results[0].status, CallStatus::Done);
    assert!(f.engine.pending_approvals(None).await.unwrap().is_empty());
    assert_eq!(f.sent.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learned_preference_auto_approves_says_why_and_is_revocable() {
    // No reviewer roles: the asking principal confirms their own call.
    let f = fixture(high(), false, None);
    let ask = |to: &str| {
        f.engine.run(
            vec![Call::new("m", "send_email", json!({"to": to, "body": "x"}))],
            alice(),
            BatchOptions::default(),
        )
    };
    let out = ask("bob@x.io").await;
    let info = out.results[0].approval.clone().unwrap();
    // Someone else cannot confirm alice's call, nor remember a preference for her.
    let mut mallory = alice();
    mallory.principal = Some("mallory".into());
    assert!(
        f.engine
            .decide(
                info.id.as_deref().unwrap(),
                approve(&info.arguments_hash),
                &mallory
            )
            .await
            .is_err()
    );
    f.engine
        .decide(
            info.id.as_deref().unwrap(),
            Decision::Approve {
                arguments_hash: info.arguments_hash.clone(),
                remember: Some(Remember {
                    scope: vec!["to".into()],
                }),
            },
            &alice(),
        )
        .await
        .unwrap();
    f.engine
        .resume(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    // Same recipient: allowed without asking, and the result says by which preference.
    let again = ask("bob@x.io").await;
    let r = &again.results[0];
    assert!(r.envelope.is_ok(), "{r:?}");
    let why = r.approval.as_ref().unwrap();
    assert!(why.preference_id.is_some());
    assert!(
        why.reason
            .as_deref()
            .unwrap()
            .contains("always allow send_email")
    );
    // Another recipient is outside the preference's scope.
    assert_eq!(
        ask("eve@x.io").await.results[0].status,
        CallStatus::PendingApproval
    );
    // Another principal is not covered.
    let bob = engine_run_as(&f.engine, "bob").await;
    assert_eq!(bob.results[0].status, CallStatus::PendingApproval);
    // Revoked: asks again.
    let prefs = f.engine.preferences(&alice()).await.unwrap();
    assert_eq!(prefs.len(), 1);
    assert!(
        f.engine
            .revoke_preference(&alice(), &prefs[0].id)
            .await
            .unwrap()
    );
    assert!(
        !f.engine
            .revoke_preference(&alice(), &prefs[0].id)
            .await
            .unwrap()
    );
    assert_eq!(
        ask("bob@x.io").await.results[0].status,
        CallStatus::PendingApproval
    );
    // The direct API: always allow every call of the tool.
    f.engine
        .allow_always(&alice(), "send_email", Default::default())
        .await
        .unwrap();
    assert!(ask("eve@x.io").await.results[0].envelope.is_ok());
    assert_eq!(f.sent.load(Ordering::SeqCst), 3);
}

async fn engine_run_as(engine: &Engine, who: &str) -> BatchResult {
    let mut caller = alice();
    caller.principal = Some(who.into());
    engine
        .run(
            vec![Call::new(
                "m",
                "send_email",
                json!({"to": "bob@x.io", "body": "x"}),
            )],
            caller,
            BatchOptions::default(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_reject_and_edit_are_decisions_under_their_own_names() {
    let f = fixture(high(), true, None);
    let calls = ["a", "r", "e"]
        .map(|id| Call::new(id, "send_email", json!({"to": format!("{id}@x.io")})))
        .to_vec();
    let out = f.engine.run(calls, alice(), BatchOptions::default()).await;
    let info = |id: &str| out.get(id).unwrap().approval.clone().unwrap();
    assert_eq!(f.engine.pending(Some("acme")).await.unwrap().len(), 3);
    let rita = reviewer("rita");
    let (a, r, e) = (info("a"), info("r"), info("e"));
    f.engine
        .approve(a.id.as_deref().unwrap(), &a.arguments_hash, &rita, None)
        .await
        .unwrap();
    f.engine
        .reject(
            r.id.as_deref().unwrap(),
            &r.arguments_hash,
            &rita,
            Some("not to them".into()),
        )
        .await
        .unwrap();
    let edited = json!({"to": "e@x.io", "body": "checked"});
    f.engine
        .edit(
            e.id.as_deref().unwrap(),
            &e.arguments_hash,
            &rita,
            edited.clone(),
        )
        .await
        .unwrap();
    assert!(f.engine.pending(Some("acme")).await.unwrap().is_empty());
    let done = f
        .engine
        .resume(out.run_id.as_deref().unwrap())
        .await
        .unwrap();
    assert!(done.get("a").unwrap().envelope.is_ok());
    assert_eq!(
        done.get("r").unwrap().envelope.code(),
        Some(ErrorCode::ApprovalRejected)
    );
    assert!(done.get("e").unwrap().envelope.is_ok());
    assert_eq!(f.sent.load(Ordering::SeqCst), 2);
    assert!(
        f.seen.lock().unwrap().contains(&edited),
        "exactly the edited arguments ran"
    );
}
