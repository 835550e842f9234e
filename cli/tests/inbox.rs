//! The approval inbox over HTTP: authentication, escaping, decisions bound to the operator, the
//! page's CSRF token and the arguments hash, replays refused; the app's run then resumes.

mod support;

use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tooljig::{BatchOptions, Call, Caller, EngineOptions, Tool, ToolSpec, handler_fn};

/// The page at `url` as `token`'s operator sees it.
async fn text_of(http: &reqwest::Client, url: &str, token: &str) -> String {
    let response = http.get(url).bearer_auth(token).send().await.unwrap();
    response.text().await.unwrap()
}

/// The inbox over `engine`, served on a free port: its base URL and a client that does not
/// follow redirects (the tests read them).
async fn serve(
    engine: Arc<tooljig::Engine>,
    auth: Arc<dyn tooljig::HttpAuth>,
) -> (String, reqwest::Client) {
    let app = tooljig_cli::inbox::router(engine, auth, None).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    (base, http)
}

/// The value of the hidden input `name` in the form of request `id`.
fn field(page: &str, id: &str, name: &str) -> String {
    let section = &page[page
        .find(&format!("id=\"{id}\""))
        .expect("the request is shown")..];
    let marker = format!("name={name} value=\"");
    let start = section.find(&marker).expect("the field") + marker.len();
    section[start..start + section[start..].find('"').unwrap()].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_decide_in_the_inbox_and_forgeries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("store.db").display());
    let audit = format!("jsonl://{}", dir.path().join("audit.jsonl").display());
    let engine = Arc::new(
        EngineOptions::from_value(json!({"state_store": store, "audit": audit}))
            .and_then(EngineOptions::build)
            .unwrap(),
    );
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = sent.clone();
    let spec = ToolSpec::from_value(json!({
        "name": "send_email", "description": "Sends.",
        "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
        "policy": {"risk": "high", "approval": {"required": "always"}}
    }))
    .unwrap();
    engine
        .register(Tool::new(
            spec,
            handler_fn(move |args, _ctx| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(args["to"].clone());
                    Ok(json!("sent"))
                }
            }),
        ))
        .unwrap();
    let calls = [
        "ada@example.com",
        "<script>alert(1)</script>",
        "eve@example.com",
    ]
    .iter()
    .enumerate()
    .map(|(i, to)| Call::new(format!("c{i}"), "send_email", json!({"to": to})))
    .collect();
    let out = engine
        .run(calls, Caller::principal("alice"), BatchOptions::default())
        .await;
    let run_id = out.run_id.clone().unwrap();
    let ids: Vec<String> = out
        .results
        .iter()
        .map(|r| r.approval.as_ref().unwrap().id.clone().unwrap())
        .collect();

    let tokens = HashMap::from([
        ("alice-token".to_string(), Caller::principal("alice")),
        ("mallory-token".to_string(), Caller::principal("mallory")),
    ]);
    assert!(tooljig_cli::inbox::tokens(HashMap::new()).is_err());
    let auth = tooljig_cli::inbox::tokens(tokens).unwrap();
    let (base, http) = serve(engine.clone(), auth).await;

    // Who may look.
    assert_eq!(http.get(&base).send().await.unwrap().status(), 401);
    let guess = http
        .get(&base)
        .bearer_auth("alice-tokem")
        .send()
        .await
        .unwrap();
    assert_eq!(guess.status(), 401);
    let refused = http.get(&base).send().await.unwrap().text().await.unwrap();
    assert!(
        refused.contains("action=/signin"),
        "a sign-in form: {refused}"
    );
    let signin = |token: &'static str| {
        http.post(format!("{base}/signin"))
            .form(&[("token", token)])
            .send()
    };
    assert_eq!(signin("nope").await.unwrap().status(), 401);
    let signin = signin("alice-token").await.unwrap();
    assert_eq!(signin.status(), 303);
    let cookie = signin.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let by_cookie = http
        .get(&base)
        .header("cookie", cookie.split(';').next().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(by_cookie.status(), 200);

    // What it shows: every request, its arguments escaped.
    let page = text_of(&http, &base, "alice-token").await;
    assert_eq!(page.matches("class=request").count(), 3, "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(
        !page.contains("<script>alert"),
        "arguments are never markup"
    );
    assert!(page.contains("Signed in as <b>alice</b>"));

    let decide = |token: &'static str, form: Vec<(&'static str, String)>| {
        let http = http.clone();
        let url = format!("{base}/decide");
        async move {
            http.post(url)
                .bearer_auth(token)
                .form(&form)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let form = |id: &str, decision: &str, csrf: &str, hash: &str| {
        vec![
            ("id", id.to_string()),
            ("decision", decision.to_string()),
            ("csrf", csrf.to_string()),
            ("hash", hash.to_string()),
            ("message", "not this one".to_string()),
        ]
    };
    let csrf = field(&page, &ids[0], "csrf");
    let hash0 = field(&page, &ids[0], "hash");
    // A forged form (no valid CSRF token), a wrong hash, another operator: refused.
    assert_eq!(
        decide("alice-token", form(&ids[0], "approve", "forged", &hash0)).await,
        403
    );
    assert_eq!(
        decide("alice-token", form(&ids[0], "approve", &csrf, "0000")).await,
        409
    );
    let mallory_page = text_of(&http, &base, "mallory-token").await;
    let mallory_csrf = field(&mallory_page, &ids[0], "csrf");
    assert_ne!(mallory_csrf, csrf, "a CSRF token is the operator's own");
    assert_eq!(
        decide(
            "mallory-token",
            form(&ids[0], "approve", &mallory_csrf, &hash0)
        )
        .await,
        409
    );
    assert_eq!(
        decide("mallory-token", form(&ids[0], "approve", &csrf, &hash0)).await,
        403
    );
    // Alice approves one (and always allows it for who asked), rejects one; a replay is
    // refused.
    let mut always = form(&ids[0], "approve", &csrf, &hash0);
    always.push(("remember", "always".into()));
    assert_eq!(decide("alice-token", always).await, 303);
    assert_eq!(
        decide("alice-token", form(&ids[0], "approve", &csrf, &hash0)).await,
        409
    );
    let hash2 = field(&page, &ids[2], "hash");
    assert_eq!(
        decide("alice-token", form(&ids[2], "reject", &csrf, &hash2)).await,
        303
    );
    let left = text_of(&http, &base, "alice-token").await;
    assert_eq!(left.matches("class=request").count(), 1);
    // An edit is checked against the tool's schema before it is accepted.
    let hash1 = field(&page, &ids[1], "hash");
    let edit = |arguments: &str| {
        let mut f = form(&ids[1], "edit", &csrf, &hash1);
        f.push(("arguments", arguments.to_string()));
        f
    };
    assert_eq!(decide("alice-token", edit(r#"{"to": 5}"#)).await, 422);
    assert_eq!(decide("alice-token", edit("{not json")).await, 422);
    let refused = http
        .post(format!("{base}/decide"))
        .bearer_auth("alice-token")
        .form(&edit(r#"{"to": 5}"#))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        refused.contains("class=refused>Edit refused:")
            && refused.contains(r#"{"to": 5}</textarea>"#),
        "the refusal is shown at the request, with what was typed: {refused}"
    );
    assert_eq!(
        decide("alice-token", edit(r#"{"to": "grace@example.com"}"#)).await,
        303
    );
    // What an edit changed, and who decided what.
    let home = text_of(&http, &base, "alice-token").await;
    assert!(
        home.contains(r#"<code>/to</code> <del>"&lt;script&gt;alert(1)&lt;/script&gt;"</del> <ins>"grace@example.com"</ins>"#),
        "{home}"
    );
    assert!(home.contains("<td>rejected<td>alice<td>alice"), "{home}");

    // A run's timeline, the audit log and its verification.
    let get = |path: String| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            http.get(url)
                .bearer_auth("alice-token")
                .send()
                .await
                .unwrap()
        }
    };
    let run_page = get(format!("/runs/{run_id}")).await.text().await.unwrap();
    assert!(
        run_page.contains("pending_approval") && run_page.contains("c1"),
        "{run_page}"
    );
    assert_eq!(get("/runs/no-such-run".into()).await.status(), 404);
    let audit_page = get("/audit?tool=send_email".into())
        .await
        .text()
        .await
        .unwrap();
    assert!(
        audit_page.contains("<td>send_email") && audit_page.contains("pending_approval"),
        "{audit_page}"
    );
    let verify = |csrf: String| {
        let http = http.clone();
        let url = format!("{base}/audit/verify");
        async move {
            http.post(url)
                .bearer_auth("alice-token")
                .form(&[("csrf", csrf)])
                .send()
                .await
                .unwrap()
        }
    };
    assert_eq!(verify("forged".into()).await.status(), 403);
    let verdict = verify(csrf.clone()).await.text().await.unwrap();
    assert!(verdict.contains("Intact:"), "{verdict}");

    // The learned preference, and its revocation.
    let prefs = get("/preferences".into()).await.text().await.unwrap();
    assert!(
        prefs.contains("<td>alice<td><td>send_email<td><code>{}</code>"),
        "{prefs}"
    );
    let pref_id = engine.every_preference(None).await.unwrap()[0].id.clone();
    let revoke = |csrf: String| {
        let http = http.clone();
        let url = format!("{base}/preferences/revoke");
        let id = pref_id.clone();
        async move {
            http.post(url)
                .bearer_auth("alice-token")
                .form(&[("csrf", csrf), ("id", id)])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(revoke("forged".into()).await, 403);
    assert_eq!(revoke(csrf.clone()).await, 303);
    assert_eq!(revoke(csrf.clone()).await, 404);
    assert!(engine.every_preference(None).await.unwrap().is_empty());

    // New requests are announced to an open page (server-sent events): `ready` first, then
    // `pending` when the set changes.
    let mut stream = http
        .get(format!("{base}/events"))
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    let mut read_until = async |what: &str| {
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while !seen.contains(what) {
                let chunk = stream
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream stays open");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {what} within 10 s: {seen}"));
    };
    read_until("event: ready").await;
    let more = vec![Call::new(
        "n",
        "send_email",
        json!({"to": "new@example.com"}),
    )];
    let _later = engine
        .run(more, Caller::principal("alice"), BatchOptions::default())
        .await;
    read_until("event: pending").await;

    // The run resumes in the app: the approved call ran, the rejected one did not.
    let resumed = engine.resume(&run_id).await.unwrap();
    // The two calls run in parallel: in either order.
    let mut ran: Vec<String> = sent.lock().unwrap().iter().map(|v| v.to_string()).collect();
    ran.sort();
    assert_eq!(ran, [r#""ada@example.com""#, r#""grace@example.com""#]);
    assert!(resumed.get("c0").unwrap().envelope.is_ok());
    let rejected = resumed.get("c2").unwrap().envelope.to_value();
    assert_eq!(rejected["error"]["code"], "approval_rejected");
    assert!(rejected.to_string().contains("not this one"));
}

/// An app's own auth hook instead of tokens: here a header a proxy in front sets.
#[tokio::test]
async fn the_inbox_asks_the_apps_hook_who_calls() {
    let engine = Arc::new(EngineOptions::default().build().unwrap());
    let hook = tooljig::http_auth_fn(|request: tooljig::HttpRequest| async move {
        match request.headers.get("x-operator") {
            Some(who) if who != "mallory" => Ok(Caller::principal(who.as_str())),
            _ => Err("not an operator".to_string()),
        }
    });
    let app = tooljig_cli::inbox::router(engine, hook, None).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    let ok = http
        .get(&base)
        .header("x-operator", "grace")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(
        ok.text()
            .await
            .unwrap()
            .contains("Signed in as <b>grace</b>")
    );
    let refused = http
        .get(&base)
        .header("x-operator", "mallory")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert!(refused.text().await.unwrap().contains("not an operator"));
}

/// Several requests decided with one click: every selected one, each checked on its own (a
/// stale hash refused and named on the page, the others decided); a forged form or an empty
/// selection decides nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_decides_several_requests_at_once() {
    let engine = Arc::new(
        EngineOptions::from_value(json!({"state_store": "memory"}))
            .and_then(EngineOptions::build)
            .unwrap(),
    );
    let spec = ToolSpec::from_value(json!({
        "name": "send_email", "description": "Sends.",
        "input_schema": {"type": "object"},
        "policy": {"approval": {"required": "always", "approver_roles": ["manager"]}}
    }))
    .unwrap();
    engine
        .register(Tool::new(spec, handler_fn(|a, _| async move { Ok(a) })))
        .unwrap();
    let calls = (0..4)
        .map(|i| Call::new(format!("c{i}"), "send_email", json!({"n": i})))
        .collect();
    let out = engine
        .run(calls, Caller::principal("rita"), BatchOptions::default())
        .await;
    let approvals: Vec<(String, String)> = out
        .results
        .iter()
        .map(|r| {
            let a = r.approval.as_ref().unwrap();
            (a.id.clone().unwrap(), a.arguments_hash.clone())
        })
        .collect();
    let mut maria = Caller::principal("maria");
    maria.roles = vec!["manager".into()];
    let auth = tooljig_cli::inbox::tokens(HashMap::from([("maria".to_string(), maria)])).unwrap();
    let (base, http) = serve(engine.clone(), auth).await;
    let page = text_of(&http, &base, "maria").await;
    assert!(page.contains("<form id=bulk"), "{page}");
    assert_eq!(page.matches("form=bulk name=pick").count(), 4);
    let csrf = field(&page, &approvals[0].0, "csrf");
    let post = |form: Vec<(&'static str, String)>| {
        let (http, url) = (http.clone(), format!("{base}/decide-many"));
        async move {
            let r = http
                .post(url)
                .bearer_auth("maria")
                .form(&form)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let pick = |i: usize, hash: &str| ("pick", format!("{} {hash}", approvals[i].0));

    assert_eq!(
        post(vec![
            ("csrf", "forged".into()),
            ("decision", "approve".into()),
            pick(0, &approvals[0].1)
        ])
        .await
        .0,
        403
    );
    assert_eq!(
        post(vec![("csrf", csrf.clone()), ("decision", "approve".into())])
            .await
            .0,
        400
    );
    // Approve two, one of them with a stale hash: the other is approved, the stale one named.
    let (status, text) = post(vec![
        ("csrf", csrf.clone()),
        ("decision", "approve".into()),
        pick(0, &approvals[0].1),
        pick(1, "0000"),
    ])
    .await;
    assert_eq!(status, 409);
    assert!(
        text.contains("id=notice") && text.contains(&approvals[1].0),
        "{text}"
    );
    // Reject the other two at once, with the reason the model will read.
    let (status, _) = post(vec![
        ("csrf", csrf.clone()),
        ("decision", "reject".into()),
        ("message", "not this week".into()),
        pick(2, &approvals[2].1),
        pick(3, &approvals[3].1),
    ])
    .await;
    assert_eq!(status, 303);
    let left = text_of(&http, &base, "maria").await;
    assert_eq!(
        left.matches("class=request").count(),
        1,
        "only the stale one waits"
    );
    let resumed = engine.resume(out.run_id.as_deref().unwrap()).await.unwrap();
    let codes: Vec<Option<String>> = resumed
        .results
        .iter()
        .map(|r| r.envelope.code().map(|c| c.as_str().to_string()))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some("pending_approval".into()),
            Some("approval_rejected".into()),
            Some("approval_rejected".into())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_resumes_and_rolls_back_a_run_from_its_page() {
    use std::sync::atomic::Ordering;
    use tooljig::CancellationToken;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("store.db").display());
    let app = support::transfer_app(&store).await;
    let run_id = app.run_id.clone();
    let auth = tooljig_cli::inbox::tokens(HashMap::from([(
        "olga-token".to_string(),
        Caller::principal("olga"),
    )]))
    .unwrap();
    let (base, http) = serve(app.engine.clone(), auth).await;
    let page = text_of(&http, &format!("{base}/runs/{run_id}"), "olga-token").await;
    let csrf = field(&page, "operate", "csrf");
    let operate = |form: Vec<(&'static str, String)>| {
        let (http, url) = (http.clone(), format!("{base}/runs/{run_id}/operate"));
        async move {
            let r = http
                .post(url)
                .bearer_auth("olga-token")
                .form(&form)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };

    // No worker yet: the request is withdrawn after the wait, and the page says what to start.
    let (status, text) = operate(vec![
        ("csrf", csrf.clone()),
        ("action", "resume".into()),
        ("wait_ms", "300".into()),
    ])
    .await;
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("withdrawn") && text.contains("serve_operator_requests"),
        "{text}"
    );
    // A forged form, an unknown action, an unknown run.
    let (status, _) = operate(vec![("csrf", "forged".into()), ("action", "resume".into())]).await;
    assert_eq!(status, 403);
    let (status, _) = operate(vec![("csrf", csrf.clone()), ("action", "explode".into())]).await;
    assert_eq!(status, 400);
    let unknown = http
        .post(format!("{base}/runs/nope/operate"))
        .bearer_auth("olga-token")
        .form(&[("csrf", csrf.as_str()), ("action", "resume")])
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    support::approve(&app).await;
    let stop = CancellationToken::new();
    let serving = {
        let (engine, stop) = (app.engine.clone(), stop.clone());
        tokio::spawn(async move { engine.serve_operator_requests("app-1", stop).await })
    };
    let (status, text) = operate(vec![("csrf", csrf.clone()), ("action", "resume".into())]).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("resumed by worker <b>app-1</b>") && text.contains("<td>done"),
        "{text}"
    );
    assert_eq!(app.sent.load(Ordering::SeqCst), 1);
    let (status, text) = operate(vec![("csrf", csrf.clone()), ("action", "rollback".into())]).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("rolled back by worker <b>app-1</b>") && text.contains("compensated"),
        "{text}"
    );
    assert_eq!(
        *app.undone.lock().unwrap(),
        vec![json!({"transfer": "t-40"})]
    );
    stop.cancel();
    serving.await.unwrap();
}
