//! Step 3 through the engine: hidden arguments and resolvers (the model passes a
//! name, the server resolves the id).

mod guardrails_common;

use guardrails_common::*;
use serde_json::json;
use std::sync::Arc;
use tooljig::*;

fn contacts() -> Arc<dyn Resolver> {
    resolver_fn(|req: ResolveRequest| async move {
        // Resolve within the caller's own connections only.
        assert_eq!(req.caller.principal.as_deref(), Some("u1"));
        Ok(match req.value.as_str().unwrap_or("") {
            "Aviad" | "aviad@example.com" => Resolution::Found {
                value: json!("conn_42"),
            },
            "Dana" => Resolution::Ambiguous {
                candidates: vec![
                    json!({"name": "Dana Levi", "email": "dana.l@example.com"}),
                    json!({"name": "Dana Cohen", "email": "dana.c@example.com"}),
                ],
            },
            "boom" => return Err(HandlerError::unexpected("contacts db unreachable")),
            _ => Resolution::NotFound,
        })
    })
}

fn engine(runs: &Runs) -> Engine {
    let e = Engine::new().with_resolver("contacts", contacts());
    let schema = json!({
        "type": "object",
        "properties": {
            "counterpart": {"type": "string", "description": "Name or email"},
            "durationMins": {"type": "integer", "minimum": 5},
            "connectionId": {"type": "string"},
            "userId": {"type": "string"},
            "tenantId": {"type": "string"}
        },
        "required": ["counterpart", "connectionId", "userId", "tenantId"],
        "additionalProperties": false
    });
    let policy = Policy::default()
        .hidden("userId", HiddenParam::Principal)
        .hidden("tenantId", HiddenParam::Tenant)
        .hidden(
            "connectionId",
            HiddenParam::Resolver {
                resolver: "contacts".into(),
                input: "counterpart".into(),
            },
        );
    e.register(echo("schedule_meeting", schema, policy, runs))
        .unwrap();
    e
}

#[tokio::test]
async fn hidden_parameters_are_not_offered_to_the_model() {
    let e = engine(&Runs::default());
    let spec = &e.specs_for(&caller("u1"))[0];
    assert_eq!(
        spec.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["counterpart", "durationMins"]
    );
    assert_eq!(spec.input_schema["required"], json!(["counterpart"]));
    // The registered spec keeps them: it is what the engine validates against.
    assert!(
        e.specs()[0].input_schema["properties"]
            .get("userId")
            .is_some()
    );
}

#[tokio::test]
async fn model_values_are_dropped_context_and_resolvers_fill_in() {
    let runs = Runs::default();
    let e = engine(&runs);
    let out = run(
        &e,
        vec![Call::new(
            "a",
            "schedule_meeting",
            r#"{"counterpart": "Aviad", "durationMins": 30, "userId": "admin", "connectionId": "conn_1"}"#,
        )],
        caller("u1"),
    )
    .await;
    let r = &out.results[0];
    assert_eq!(
        r.envelope.to_value(),
        json!({"ok": true, "data": {"counterpart": "Aviad", "durationMins": 30, "connectionId": "conn_42", "tenantId": "acme", "userId": "u1"}})
    );
    let supplied: Vec<_> = r
        .hidden
        .iter()
        .filter_map(|n| {
            n.supplied
                .as_ref()
                .map(|v| (n.parameter.as_str(), v.clone()))
        })
        .collect();
    assert_eq!(
        supplied,
        vec![
            ("connectionId", json!("conn_1")),
            ("userId", json!("admin"))
        ]
    );
    assert!(r.hidden.iter().all(|n| n.injected));
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn resolver_outcomes_reach_the_model_as_envelopes() {
    let runs = Runs::default();
    let e = engine(&runs);
    let out = run(
        &e,
        vec![
            Call::new("amb", "schedule_meeting", json!({"counterpart": "Dana"})),
            Call::new("nf", "schedule_meeting", json!({"counterpart": "Zed"})),
            Call::new("missing", "schedule_meeting", json!({"durationMins": 30})),
            Call::new("boom", "schedule_meeting", json!({"counterpart": "boom"})),
            Call::new(
                "email",
                "schedule_meeting",
                json!({"counterpart": "aviad@example.com"}),
            ),
        ],
        caller("u1"),
    )
    .await;
    let amb = out.get("amb").unwrap().envelope.to_value();
    assert_eq!(amb["error"]["code"], "ambiguous");
    assert_eq!(amb["error"]["argument"], "counterpart");
    assert_eq!(amb["error"]["candidates"][1]["name"], "Dana Cohen");
    let nf = out.get("nf").unwrap().envelope.to_value();
    assert_eq!(nf["error"]["code"], "not_found");
    assert_eq!(nf["error"]["value"], "Zed");
    assert_eq!(
        out.get("missing").unwrap().envelope.to_value(),
        json!({"ok": false, "needs": {"counterpart": true}})
    );
    let boom = out.get("boom").unwrap();
    assert_eq!(boom.envelope.code(), Some(ErrorCode::InternalError));
    assert!(
        boom.detail
            .as_deref()
            .unwrap()
            .contains("contacts db unreachable")
    );
    assert!(!boom.envelope.to_value().to_string().contains("unreachable"));
    assert!(out.get("email").unwrap().envelope.is_ok());
    assert_eq!(runs.get(), 1, "only the resolved call ran");
}

#[tokio::test]
async fn a_required_context_value_the_caller_lacks_is_refused_not_asked_for() {
    let runs = Runs::default();
    let e = engine(&runs);
    let mut c = caller("u1");
    c.tenant = None;
    let out = run(
        &e,
        vec![Call::new(
            "a",
            "schedule_meeting",
            json!({"counterpart": "Aviad"}),
        )],
        c,
    )
    .await;
    assert_eq!(code(&out, "a").as_deref(), Some("permission_denied"));
    assert_eq!(runs.get(), 0);
}
