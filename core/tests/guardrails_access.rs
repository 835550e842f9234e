//! Step 5 through the engine: enabled flags, roles, scopes, the policy hook, visibility.

mod guardrails_common;

use guardrails_common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::*;

fn engine(runs: &Runs) -> Engine {
    let engine = Engine::new();
    let propose =
        Policy::default().scopes(["calendar.availability.read", "calendar.events.propose"]);
    engine
        .register(echo("propose", object(), propose, runs))
        .unwrap();
    let send = Policy::default().roles(["user", "admin"]);
    engine
        .register(echo("send_email", object(), send, runs))
        .unwrap();
    engine
        .register(echo("search_web", object(), Policy::default(), runs))
        .unwrap();
    engine
}

#[tokio::test]
async fn refusals_name_what_is_missing_and_the_handler_never_runs() {
    let runs = Runs::default();
    let e = engine(&runs);
    let mut c = caller("u1");
    c.scopes = vec!["calendar.availability.read".into()];
    let out = run(
        &e,
        vec![
            Call::new("a", "propose", json!({})),
            Call::new("b", "send_email", json!({})),
        ],
        c.clone(),
    )
    .await;
    let a = out.get("a").unwrap().envelope.to_value();
    assert_eq!(a["error"]["code"], "scopes_missing");
    assert_eq!(
        a["error"]["missing_scopes"],
        json!(["calendar.events.propose"])
    );
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("calendar.events.propose")
    );
    assert_eq!(code(&out, "b").as_deref(), Some("permission_denied"));
    assert_eq!(runs.get(), 0);
    assert_eq!(out.get("a").unwrap().attempts, 0);

    c.scopes.push("calendar.events.propose".into());
    c.roles = vec!["user".into()];
    let out = run(
        &e,
        vec![
            Call::new("a", "propose", json!({})),
            Call::new("b", "send_email", json!({})),
        ],
        c,
    )
    .await;
    assert!(out.results.iter().all(|r| r.envelope.is_ok()));
    assert_eq!(runs.get(), 2);
}

#[tokio::test]
async fn enabled_flags_follow_the_hierarchy_and_change_at_run_time() {
    let runs = Runs::default();
    let e = engine(&runs);
    let mut c = caller("u1");
    c.attributes.insert("departments".into(), json!(["it"]));
    let call = || vec![Call::new("w", "search_web", json!({}))];
    assert!(run(&e, call(), c.clone()).await.results[0].envelope.is_ok());

    let settings: Settings = serde_json::from_value(json!({
        "system": {"search_web": true},
        "tenants": {"acme": {"search_web": false}},
    }))
    .unwrap();
    e.set_settings(settings);
    assert!(
        run(&e, call(), c.clone()).await.results[0].envelope.is_ok(),
        "system overrides the organisation"
    );

    e.set_settings(
        serde_json::from_value(json!({
            "tenants": {"acme": {"search_web": false}},
            "users": {"u1": {"search_web": true}}
        }))
        .unwrap(),
    );
    let out = run(&e, call(), c.clone()).await;
    let err = out.results[0].envelope.to_value();
    assert_eq!(err["error"]["code"], "permission_denied");
    assert_eq!(err["error"]["disabled_by"], "tenant");

    e.set_settings(serde_json::from_value(json!({"departments": {"it": {"*": false}}})).unwrap());
    let out = run(&e, call(), c.clone()).await;
    assert_eq!(
        out.results[0].envelope.to_value()["error"]["disabled_by"],
        "department"
    );
    assert!(
        e.specs_for(&c).is_empty(),
        "every tool is off for the department"
    );
}

#[tokio::test]
async fn a_batch_decides_each_tool_for_itself_and_sees_settings_replaced_midway() {
    // One batch: many calls to a tool the caller may use, many to one it may not, then a
    // call that switches the first tool off, then more calls to it. Decisions kept for the
    // batch must be per tool, and must not outlive the settings they were made under.
    let runs = Runs::default();
    let e = Arc::new(engine(&runs));
    let slot: Arc<std::sync::OnceLock<std::sync::Weak<Engine>>> = Arc::default();
    let reach = slot.clone();
    e.register(Tool::from_fn(
        "switch_off_search",
        "Switches search_web off.",
        object(),
        move |_, _| {
            let reach = reach.clone();
            async move {
                if let Some(engine) = reach.get().and_then(std::sync::Weak::upgrade) {
                    engine.set_settings(
                        serde_json::from_value(json!({"system": {"search_web": false}})).unwrap(),
                    );
                }
                Ok(json!("off"))
            }
        },
    ))
    .unwrap();
    slot.set(Arc::downgrade(&e)).unwrap();

    let mut calls = Vec::new();
    for i in 0..50 {
        calls.push(Call::new(format!("w{i}"), "search_web", json!({})));
        calls.push(Call::new(format!("s{i}"), "send_email", json!({})));
    }
    calls.push(Call::new("off", "switch_off_search", json!({})));
    for i in 0..20 {
        calls.push(Call::new(format!("late{i}"), "search_web", json!({})));
    }
    // One call at a time, in order: the switch lands between the early and the late calls.
    let options = BatchOptions {
        concurrency: Some(1),
        ..Default::default()
    };
    let out = e.run(calls, caller("u1"), options).await;
    let by_id = |id: &str| {
        out.results
            .iter()
            .find(|r| r.call_id == id)
            .unwrap()
            .envelope
            .to_value()
    };
    for i in 0..50 {
        assert!(by_id(&format!("w{i}"))["ok"].as_bool().unwrap(), "w{i}");
        let refused = by_id(&format!("s{i}"));
        assert_eq!(refused["error"]["code"], "permission_denied", "s{i}");
    }
    assert_eq!(by_id("off")["data"], "off");
    for i in 0..20 {
        let refused = by_id(&format!("late{i}"));
        assert_eq!(refused["error"]["disabled_by"], "system", "late{i}");
    }
    assert_eq!(runs.get(), 50, "only the early search_web calls ran");

    // The next batch, and another caller in it, are decided afresh.
    e.set_settings(Settings::default());
    let mut admin = caller("u2");
    admin.roles = vec!["admin".into()];
    let out = run(&e, vec![Call::new("s", "send_email", json!({}))], admin).await;
    assert!(out.results[0].envelope.is_ok());
}

#[tokio::test]
async fn specs_for_lists_only_usable_tools() {
    let e = engine(&Runs::default());
    let names =
        |c: &Caller| -> Vec<String> { e.specs_for(c).into_iter().map(|s| s.name).collect() };
    let mut c = caller("u1");
    assert_eq!(names(&c), vec!["search_web"]);
    c.roles = vec!["admin".into()];
    c.scopes = vec![
        "calendar.availability.read".into(),
        "calendar.events.propose".into(),
    ];
    assert_eq!(names(&c), vec!["propose", "send_email", "search_web"]);
    e.set_settings(serde_json::from_value(json!({"system": {"search_web": false}})).unwrap());
    assert_eq!(names(&c), vec!["propose", "send_email"]);
}

#[tokio::test]
async fn the_policy_hook_sees_final_arguments_and_can_refuse() {
    let runs = Runs::default();
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen2 = seen.clone();
    let hook = policy_hook_fn(move |req: AccessRequest| {
        let seen = seen2.clone();
        async move {
            seen.lock().unwrap().push(req.arguments.clone());
            let dept = req.arguments["department"].as_str().unwrap_or("");
            let member = req.caller.attributes["departments"]
                .as_array()
                .is_some_and(|d| d.iter().any(|x| x == dept));
            Ok(if member {
                AccessDecision::allow()
            } else {
                AccessDecision::deny(format!("you are not a member of department {dept}"))
            })
        }
    });
    let e = Engine::new().with_policy_hook(hook);
    let schema = json!({"type": "object", "properties": {"department": {"type": "string"}, "user_id": {"type": "string"}}, "required": ["department"]});
    let policy = Policy::default().hidden("user_id", HiddenParam::Principal);
    e.register(echo("search_files", schema, policy, &runs))
        .unwrap();
    let mut c = caller("u1");
    c.attributes.insert("departments".into(), json!(["it"]));
    let out = run(
        &e,
        vec![
            Call::new("ok", "search_files", json!({"department": "it"})),
            Call::new("no", "search_files", json!({"department": "hr"})),
            Call::new("invalid", "search_files", json!({"department": 7})),
        ],
        c,
    )
    .await;
    assert!(out.get("ok").unwrap().envelope.is_ok());
    let no = out.get("no").unwrap().envelope.to_value();
    assert_eq!(no["error"]["code"], "permission_denied");
    assert_eq!(
        no["error"]["message"],
        "you are not a member of department hr"
    );
    assert_eq!(code(&out, "invalid").as_deref(), Some("invalid_arguments"));
    assert_eq!(runs.get(), 1);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "the hook is asked after validation only");
    assert!(
        seen.iter().all(|a| a["user_id"] == "u1"),
        "hidden arguments are filled first"
    );
}

#[tokio::test]
async fn a_failing_hook_fails_closed() {
    let runs = Runs::default();
    let hook = policy_hook_fn(|_req| async { Err(HandlerError::unexpected("db down")) });
    let e = Engine::new().with_policy_hook(hook);
    e.register(echo("t", object(), Policy::default(), &runs))
        .unwrap();
    let out = run(&e, vec![Call::new("a", "t", json!({}))], caller("u1")).await;
    let r = &out.results[0];
    assert_eq!(r.envelope.code(), Some(ErrorCode::InternalError));
    assert!(r.detail.as_deref().unwrap().contains("db down"));
    assert_eq!(runs.get(), 0);
}
