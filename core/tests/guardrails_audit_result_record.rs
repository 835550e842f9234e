//! The audit entry of a settled result is serialized from the result itself, borrowing what
//! redaction leaves alone (`AuditEntry::of_result`). Whatever the result, the redaction
//! rules and the caller, its content and indexed fields must be exactly those of the owned
//! record (`AuditRecord::from_result`), byte for byte: the chain hashes those bytes, and a
//! sink reads them back as that record.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tooljig::audit::chain;
use tooljig::audit::{AuditEntry, AuditRecord, Indexed, Redaction};
use tooljig::call::HiddenNote;
use tooljig::{CallResult, CallStatus, Caller, Envelope, ErrorCode, Policy};

/// Strings that need escaping in JSON, and some that do not.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z]{1,8}",
        Just("a \"quoted\" \\ é\n\t\u{1}".to_string()),
        Just("password".to_string()),
        Just("x".to_string()),
        // A field named as the rule for every field is.
        Just("*".to_string()),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Arguments with the fields the rules below name, and whatever else.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        value(),
        (value(), value(), value()).prop_map(|(p, x, rest)| {
            json!({"password": p, "nested": {"x": x, "y": 1}, "rest": rest, "email": "a@b.c", "*": x})
        }),
    ]
}

fn rules() -> impl Strategy<Value = BTreeMap<String, Redaction>> {
    let how = prop_oneof![
        Just(Redaction::Keep),
        Just(Redaction::Redact),
        Just(Redaction::Hash)
    ];
    let field = prop_oneof![
        Just("password".to_string()),
        Just("/nested/x".to_string()),
        Just("*".to_string()),
        Just("user_id".to_string()),
        Just("email".to_string()),
        Just("nested".to_string()),
    ];
    prop::collection::btree_map(field, how, 0..4)
}

fn policy() -> impl Strategy<Value = Option<Policy>> {
    prop::option::of(
        (rules(), any::<bool>()).prop_map(|(redact, audit_output)| Policy {
            redact,
            audit_output,
            ..Policy::default()
        }),
    )
}

fn envelope() -> impl Strategy<Value = Envelope> {
    prop_oneof![
        value().prop_map(Envelope::Ok),
        text().prop_map(|m| Envelope::error(ErrorCode::InvalidArguments, m)),
        Just(Envelope::Needs(vec![])),
    ]
}

fn hidden() -> impl Strategy<Value = Vec<HiddenNote>> {
    let note = (
        prop_oneof![Just("user_id".to_string()), Just("password".to_string())],
        prop::option::of(value()),
        any::<bool>(),
    )
        .prop_map(|(parameter, supplied, injected)| HiddenNote {
            parameter,
            source: "principal".into(),
            injected,
            supplied,
        });
    prop::collection::vec(note, 0..3)
}

fn caller() -> impl Strategy<Value = Caller> {
    (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(text()),
    )
        .prop_map(|(principal, tenant, session)| Caller {
            principal,
            tenant,
            session,
            ..Caller::default()
        })
}

prop_compose! {
    fn result()(
        envelope in envelope(),
        arguments in prop::option::of(arguments()),
        hidden in hidden(),
        detail in prop::option::of(text()),
        approved in any::<bool>(),
        parent in any::<bool>(),
        pending in any::<bool>(),
        flags in any::<(bool, bool, bool)>(),
        duration_us in any::<u64>(),
        attempts in 0u32..5,
    ) -> CallResult {
        let mut r = CallResult::refused("call \"1\"", "send_é", envelope);
        r.arguments = arguments;
        r.hidden = hidden;
        r.detail = detail;
        (r.cached, r.replayed, r.repaired) = flags;
        r.duration_us = duration_us;
        r.attempts = attempts;
        if pending {
            r.status = CallStatus::PendingApproval;
        }
        if approved {
            r.approval = Some(Box::new(serde_json::from_value(json!({
                "id": "ap_1", "status": "approved", "arguments_hash": "ab12", "risk": "high",
                "decided_by": "ann", "decided_at_ms": 17, "reason": "said \"yes\""
            })).unwrap()));
        }
        if parent {
            r.parent = Some(Box::new(serde_json::from_value(json!({
                "run_id": "run_1", "call_id": "c0", "tool": "plan", "depth": 1
            })).unwrap()));
        }
        r
    }
}

/// The text with its `time_ms` set to 0: the two records read the clock apart.
fn at_zero(content: &str) -> String {
    let mut v: Value = serde_json::from_str(content).unwrap();
    v["time_ms"] = json!(0);
    serde_json::to_string(&v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn an_entry_serializes_the_record_the_result_makes(
        result in result(),
        caller in caller(),
        policy in policy(),
        raw in prop::option::of(value()),
    ) {
        let entry = AuditEntry::of_result(&result, &caller, policy.as_ref(), raw.as_ref());
        let record = AuditRecord::from_result(&result, &caller, policy.as_ref(), raw.as_ref());
        let expected = chain::content(&record);
        // Byte for byte but for the clock: `time_ms` is the record's second field, so the
        // texts after it must be equal as they are.
        let tail = |s: &str| s.split_once(",\"principal\"").map(|(_, t)| t.to_string());
        prop_assert_eq!(tail(entry.content()), tail(&expected));
        prop_assert!(tail(&expected).is_some());
        prop_assert_eq!(at_zero(entry.content()), at_zero(&expected));
        let mut indexed = Indexed::from(&record);
        indexed.time_ms = entry.indexed().time_ms;
        prop_assert_eq!(entry.indexed(), &indexed);
    }
}

/// A rule that hides a field changes the entry, and leaves the result as it was.
#[test]
fn redaction_reaches_the_entry_and_not_the_result() {
    let mut result = CallResult::refused("c1", "login", Envelope::Ok(json!({"token": "t0"})));
    result.arguments = Some(json!({"password": "hunter2", "user": "ann"}));
    let policy = Policy {
        redact: BTreeMap::from([
            ("password".into(), Redaction::Redact),
            ("token".into(), Redaction::Hash),
        ]),
        audit_output: true,
        ..Policy::default()
    };
    let before = result.clone();
    let entry = AuditEntry::of_result(&result, &Caller::default(), Some(&policy), None);
    let content: Value = serde_json::from_str(entry.content()).unwrap();
    assert_eq!(
        content["arguments"],
        json!({"password": "[redacted]", "user": "ann"})
    );
    assert!(
        content["output"]["token"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(result, before);
}
