//! An approved or edited call runs only after passing every guard again: hidden arguments
//! re-derived from the caller who asked, resolvers, schema, the policy hook, rate limits; and
//! only under the spec it was approved for. A hostile approver (or a hand in the store)
//! cannot make other arguments run.

mod guardrails_common;

use guardrails_common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tooljig::digest::hash_value;
use tooljig::store::{Expect, Namespace};
use tooljig::*;

fn transfer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "amount": {"type": "integer", "minimum": 1},
            "account": {"type": "string"},
            "payee": {"type": "string"},
            "payee_id": {"type": "string"}
        },
        "required": ["amount", "account"],
        "additionalProperties": false
    })
}

fn transfer_policy() -> Policy {
    let mut policy = Policy::default()
        .risk(Risk::High)
        .hidden("account", HiddenParam::Principal)
        .hidden(
            "payee_id",
            HiddenParam::Resolver {
                resolver: "payees".into(),
                input: "payee".into(),
            },
        );
    policy.approval.approver_roles = vec!["reviewer".into()];
    policy
}

/// Amounts up to 500 only.
fn limit_500() -> Arc<dyn PolicyHook> {
    policy_hook_fn(|req: AccessRequest| async move {
        let amount = req.arguments["amount"].as_i64().unwrap_or(i64::MAX);
        Ok(if amount <= 500 {
            AccessDecision::allow()
        } else {
            AccessDecision::deny(format!("{amount} is over the limit of 500"))
        })
    })
}

fn payees() -> Arc<dyn Resolver> {
    resolver_fn(|req: ResolveRequest| async move {
        Ok(match req.value.as_str().unwrap_or("") {
            "Bob" => Resolution::Found {
                value: json!("payee_bob"),
            },
            "Carol" => Resolution::Found {
                value: json!("payee_carol"),
            },
            _ => Resolution::NotFound,
        })
    })
}

fn engine(store: Arc<dyn StateStore>, policy: Policy, runs: &Runs) -> Engine {
    let e = Engine::new()
        .with_state_store(store)
        .with_approval_rules(ApprovalRules {
            min_risk: Some(Risk::High),
        })
        .with_policy_hook(limit_500())
        .with_resolver("payees", payees());
    e.register(echo("transfer", transfer_schema(), policy, runs))
        .unwrap();
    e
}

fn rita() -> Caller {
    let mut c = caller("rita");
    c.roles = vec!["reviewer".into()];
    c
}

/// One call of `transfer` by alice, pending approval: (run id, approval info).
async fn ask(e: &Engine, args: Value) -> (String, ApprovalInfo) {
    let out = run(e, vec![Call::new("t", "transfer", args)], caller("alice")).await;
    let r = out.get("t").unwrap();
    assert_eq!(r.status, CallStatus::PendingApproval, "{:?}", r.envelope);
    (out.run_id.clone().unwrap(), *r.approval.clone().unwrap())
}

#[tokio::test]
async fn an_edit_over_the_policy_hooks_limit_is_refused_and_does_not_run() {
    let runs = Runs::default();
    let e = engine(Arc::new(MemoryStore::new()), transfer_policy(), &runs);
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    let mut edited = e
        .approval(info.id.as_deref().unwrap())
        .await
        .unwrap()
        .unwrap();
    edited.arguments["amount"] = json!(100_000);
    e.edit(
        info.id.as_deref().unwrap(),
        &info.arguments_hash,
        &rita(),
        edited.arguments,
    )
    .await
    .unwrap();
    let done = e.resume(&run_id).await.unwrap();
    let r = done.get("t").unwrap();
    assert_eq!(r.envelope.code(), Some(ErrorCode::PermissionDenied));
    assert!(
        r.envelope
            .to_value()
            .to_string()
            .contains("over the limit of 500")
    );
    assert_eq!(runs.get(), 0, "the edited call must not run");

    // Within the limit, the edit runs exactly.
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    let mut edited = e
        .approval(info.id.as_deref().unwrap())
        .await
        .unwrap()
        .unwrap();
    edited.arguments["amount"] = json!(400);
    e.edit(
        info.id.as_deref().unwrap(),
        &info.arguments_hash,
        &rita(),
        edited.arguments,
    )
    .await
    .unwrap();
    let done = e.resume(&run_id).await.unwrap();
    let data = done.get("t").unwrap().envelope.to_value();
    assert_eq!(data["data"]["amount"], 400);
    assert_eq!(data["data"]["account"], "alice");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn an_edit_cannot_change_a_hidden_argument() {
    let runs = Runs::default();
    let e = engine(Arc::new(MemoryStore::new()), transfer_policy(), &runs);
    let (_, info) = ask(&e, json!({"amount": 100})).await;
    let id = info.id.as_deref().unwrap();
    let mut args = e.approval(id).await.unwrap().unwrap().arguments;
    assert_eq!(args["account"], "alice");
    args["account"] = json!("mallory");
    let err = e
        .edit(id, &info.arguments_hash, &rita(), args)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArguments);
    assert_eq!(err.details["reason"], "hidden_argument");
    assert_eq!(err.details["argument"], "account");
    // The request is still pending, undecided.
    assert_eq!(e.pending(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_hidden_value_planted_in_the_store_is_derived_again_and_never_runs() {
    let runs = Runs::default();
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let e = engine(store.clone(), transfer_policy(), &runs);
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    let id = info.id.as_deref().unwrap();
    e.approve(id, &info.arguments_hash, &rita(), None)
        .await
        .unwrap();
    // Someone with write access to the store swaps the account and recomputes the hash.
    let got = store.get(Namespace::Approval, id).await.unwrap().unwrap();
    let mut rec = got.value;
    let mut args = rec["decision"]["approved_arguments"].clone();
    args["account"] = json!("mallory");
    rec["decision"]["approved_hash"] = json!(hash_value(&args));
    rec["decision"]["approved_arguments"] = args;
    store
        .put(
            Namespace::Approval,
            id,
            Expect::Version(got.version),
            rec,
            None,
        )
        .await
        .unwrap()
        .unwrap();
    let done = e.resume(&run_id).await.unwrap();
    let r = done.get("t").unwrap();
    assert_eq!(runs.get(), 0, "mallory's account must never be used");
    assert_ne!(r.envelope.code(), None);
    assert_ne!(
        r.arguments.as_ref().map(|a| a["account"].clone()),
        Some(json!("mallory"))
    );
}

#[tokio::test]
async fn an_edited_resolver_input_is_resolved_again_and_asked_again() {
    let runs = Runs::default();
    let e = engine(Arc::new(MemoryStore::new()), transfer_policy(), &runs);
    let (run_id, info) = ask(&e, json!({"amount": 100, "payee": "Bob"})).await;
    let id = info.id.as_deref().unwrap();
    let mut args = e.approval(id).await.unwrap().unwrap().arguments;
    assert_eq!(args["payee_id"], "payee_bob");
    args["payee"] = json!("Carol");
    e.edit(id, &info.arguments_hash, &rita(), args)
        .await
        .unwrap();
    let again = e.resume(&run_id).await.unwrap();
    let r = again.get("t").unwrap();
    assert_eq!(r.status, CallStatus::PendingApproval);
    assert_eq!(runs.get(), 0);
    let fresh = r.approval.as_ref().unwrap();
    assert_ne!(fresh.id.as_deref(), Some(id), "a new request is made");
    assert!(fresh.reason.as_deref().unwrap().contains("asked again"));
    let rec = e
        .approval(fresh.id.as_deref().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.arguments["payee_id"], "payee_carol");
    e.approve(&rec.id, &rec.arguments_hash, &rita(), None)
        .await
        .unwrap();
    let done = e.resume(&run_id).await.unwrap();
    let data = done.get("t").unwrap().envelope.to_value();
    assert_eq!(data["data"]["payee_id"], "payee_carol");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn an_approved_call_runs_on_the_charge_it_made_when_it_asked() {
    // One a minute: the request took the cell, the approved call runs on it (docs/guardrails.md,
    // "How the guardrails combine"), and the budget holds for the next request.
    let runs = Runs::default();
    let policy = transfer_policy().rate_limit(RateLimit::per_principal(1, Duration::from_secs(60)));
    let e = engine(Arc::new(MemoryStore::new()), policy, &runs);
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    e.approve(
        info.id.as_deref().unwrap(),
        &info.arguments_hash,
        &rita(),
        None,
    )
    .await
    .unwrap();
    let done = e.resume(&run_id).await.unwrap();
    assert!(done.get("t").unwrap().envelope.is_ok(), "{done:?}");
    assert_eq!(runs.get(), 1);
    let next = run(
        &e,
        vec![Call::new("t", "transfer", json!({"amount": 5}))],
        caller("alice"),
    )
    .await;
    assert_eq!(
        next.get("t").unwrap().envelope.code(),
        Some(ErrorCode::RateLimited),
        "the next request is over the limit before anyone is asked"
    );
}

#[tokio::test]
async fn an_approval_is_asked_again_when_the_tool_changed_before_it_ran() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let runs = Runs::default();
    let first = engine(store.clone(), transfer_policy(), &runs);
    let (run_id, info) = ask(&first, json!({"amount": 100})).await;
    first
        .approve(
            info.id.as_deref().unwrap(),
            &info.arguments_hash,
            &rita(),
            None,
        )
        .await
        .unwrap();
    // Another process, where the tool is now retried three times: another policy.
    let mut changed = transfer_policy();
    changed.retry.attempts = 3;
    let second = engine(store.clone(), changed, &runs);
    let again = second.resume(&run_id).await.unwrap();
    let r = again.get("t").unwrap();
    assert_eq!(r.status, CallStatus::PendingApproval);
    assert!(
        r.approval
            .as_ref()
            .unwrap()
            .reason
            .as_deref()
            .unwrap()
            .contains("changed")
    );
    assert_eq!(runs.get(), 0);
    // Unchanged, the decision holds.
    let (run_id, info) = ask(&second, json!({"amount": 50})).await;
    second
        .approve(
            info.id.as_deref().unwrap(),
            &info.arguments_hash,
            &rita(),
            None,
        )
        .await
        .unwrap();
    assert!(
        second.resume(&run_id).await.unwrap().results[0]
            .envelope
            .is_ok()
    );
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn with_a_seal_key_a_decision_edited_or_forged_in_the_store_is_refused() {
    let runs = Runs::default();
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let key = SealKey::new("an app secret of at least thirty-two bytes").unwrap();
    let e = engine(store.clone(), transfer_policy(), &runs).with_seal_key(key);
    let tamper = |id: String, change: fn(&mut Value)| {
        let store = store.clone();
        async move {
            let got = store.get(Namespace::Approval, &id).await.unwrap().unwrap();
            let mut rec = got.value;
            change(&mut rec);
            store
                .put(
                    Namespace::Approval,
                    &id,
                    Expect::Version(got.version),
                    rec,
                    None,
                )
                .await
                .unwrap()
                .unwrap();
        }
    };

    // Approved for 100; the stored arguments raised to 400 (within every guard) and
    // their hash recomputed.
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    let id = info.id.clone().unwrap();
    e.approve(&id, &info.arguments_hash, &rita(), None)
        .await
        .unwrap();
    tamper(id, |rec| {
        let mut args = rec["decision"]["approved_arguments"].clone();
        args["amount"] = json!(400);
        rec["decision"]["approved_hash"] = json!(hash_value(&args));
        rec["decision"]["approved_arguments"] = args;
    })
    .await;
    let r = e.resume(&run_id).await.unwrap().results[0].clone();
    let err = r.envelope.to_value();
    assert_eq!(err["error"]["code"], "internal_error", "{err}");
    assert_eq!(err["error"]["reason"], "approval_tampered");
    assert_eq!(runs.get(), 0);

    // A pending request turned into an approval in the store, by someone without the key.
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    tamper(info.id.clone().unwrap(), |rec| {
        rec["status"] = json!("approved");
        rec["decision"] = json!({
            "by": "rita", "at_ms": 1,
            "approved_arguments": rec["arguments"].clone(),
            "approved_hash": rec["arguments_hash"].clone(),
        });
    })
    .await;
    let r = e.resume(&run_id).await.unwrap().results[0].clone();
    assert_eq!(
        r.envelope.to_value()["error"]["reason"],
        "approval_tampered"
    );
    assert_eq!(runs.get(), 0);

    // Decided through the engine, it runs.
    let (run_id, info) = ask(&e, json!({"amount": 100})).await;
    e.approve(
        info.id.as_deref().unwrap(),
        &info.arguments_hash,
        &rita(),
        None,
    )
    .await
    .unwrap();
    assert!(e.resume(&run_id).await.unwrap().results[0].envelope.is_ok());
    assert_eq!(runs.get(), 1);
}
