//! MCP both ways, over real transports: tooljig's server reached by rmcp's own client and by
//! tooljig's client, guardrails applied on each side, hostile HTTP requests, and a registry
//! that changes. What tooljig's client does with servers that die or never speak MCP is in
//! `mcp_client.rs`.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::mcp::{
    McpClient, McpClientOptions, McpHttpServer, McpServeOptions, McpServer, McpTarget,
};
use tooljig::{
    BatchOptions, Call, Caller, Engine, ErrorCode, MemoryAudit, Tool, ToolSpec, handler_fn,
};

fn tool(spec: Value, f: impl Fn(Value) -> Value + Send + Sync + 'static) -> Tool {
    let f = Arc::new(f);
    Tool::new(
        ToolSpec::from_value(spec).unwrap(),
        handler_fn(move |args, _ctx| {
            let f = f.clone();
            async move { Ok(f(args)) }
        }),
    )
}

/// An engine with `add` (read), `admin_reset` (needs scope `admin`), `whoami`.
fn served_engine(audit: Arc<MemoryAudit>) -> Arc<Engine> {
    let engine = Arc::new(Engine::new().with_audit(audit));
    let object = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]});
    engine
        .register(tool(
            json!({"name": "add", "description": "Adds.", "input_schema": object,
                   "output_schema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
                   "policy": {"effect": "read"}}),
            |a| json!({"sum": a["a"].as_i64().unwrap() + a["b"].as_i64().unwrap()}),
        ))
        .unwrap();
    engine
        .register(tool(
            json!({"name": "admin_reset", "description": "Resets.", "input_schema": {"type": "object"},
                   "policy": {"scopes": ["admin"]}}),
            |_| json!("reset"),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            ToolSpec::from_value(json!({"name": "whoami", "description": "Who calls.", "input_schema": {"type": "object"}})).unwrap(),
            handler_fn(|_args, ctx| async move {
                Ok(json!({"principal": ctx.caller.principal, "session": ctx.caller.session}))
            }),
        ))
        .unwrap();
    engine
}

async fn serve(engine: Arc<Engine>) -> McpHttpServer {
    let options = McpServeOptions {
        tokens: HashMap::from([
            (
                "alice-token".into(),
                Caller {
                    principal: Some("alice".into()),
                    scopes: vec!["admin".into()],
                    ..Caller::default()
                },
            ),
            ("bob-token".into(), Caller::principal("bob")),
        ]),
        ..McpServeOptions::default()
    };
    McpServer::new(engine, options).serve_http().await.unwrap()
}

fn http(url: &str, token: &str) -> McpTarget {
    McpTarget::Http {
        url: url.into(),
        headers: BTreeMap::from([("authorization".into(), format!("Bearer {token}"))]),
    }
}

fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// rmcp's own client, answering elicitations with `answer`.
#[derive(Clone)]
struct Asked {
    answer: Arc<dyn Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync>,
    asked: Arc<AtomicUsize>,
}

impl ClientHandler for Asked {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("test", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok((self.answer)(&request))
    }
}

async fn rmcp_client<H: ClientHandler>(
    url: &str,
    token: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    tls();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(token.into());
    handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else { panic!() };
    CallToolRequestParams::new(name.to_string()).with_arguments(args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_both_ways_with_scopes_sessions_and_audit() {
    let audit = Arc::new(MemoryAudit::new());
    let server = serve(served_engine(audit.clone())).await;

    // tooljig's client, as bob: the admin tool is not offered.
    let local = Arc::new(Engine::new());
    let bob = McpClient::connect(
        http(server.url(), "bob-token"),
        McpClientOptions {
            prefix: "remote_".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut names = bob.register(&local).await.unwrap();
    names.sort();
    assert_eq!(names, ["remote_add", "remote_whoami"]);
    let added = local
        .specs()
        .into_iter()
        .find(|s| s.name == "remote_add")
        .unwrap();
    assert!(
        added.output_schema.is_some(),
        "the server's outputSchema is kept"
    );
    let out = local
        .run(
            vec![
                Call::new("1", "remote_add", json!({"a": 2, "b": 3})),
                Call::new("2", "remote_whoami", json!({})),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(out.results[0].envelope.data(), Some(&json!({"sum": 5})));
    let who = out.results[1].envelope.data().unwrap().clone();
    assert_eq!(who["principal"], "bob");
    let session = who["session"]
        .as_str()
        .expect("the MCP session is the caller's session")
        .to_string();
    // Arguments the local schema refuses never reach the server.
    let bad = local
        .run(
            vec![Call::new("1", "remote_add", json!({"a": "two", "b": 3}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(
        bad.results[0].envelope.code(),
        Some(ErrorCode::InvalidArguments)
    );

    // rmcp's client, as bob, calling the admin tool anyway: refused as an MCP error result.
    let raw = rmcp_client(server.url(), "bob-token", ()).await;
    let listed = raw.peer().list_all_tools().await.unwrap();
    assert_eq!(listed.len(), 2);
    let add = listed.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.annotations.as_ref().unwrap().read_only_hint, Some(true));
    let refused = raw
        .peer()
        .call_tool(params("admin_reset", json!({})))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
    let text = refused.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("scopes_missing"), "{text}");
    let unknown = raw.peer().call_tool(params("nope", json!({}))).await;
    assert!(unknown.is_err(), "an unknown tool is a JSON-RPC error");
    // As alice, it runs.
    let alice = rmcp_client(server.url(), "alice-token", ()).await;
    assert_eq!(alice.peer().list_all_tools().await.unwrap().len(), 3);
    let ran = alice
        .peer()
        .call_tool(params("admin_reset", json!({})))
        .await
        .unwrap();
    assert_eq!(ran.is_error, Some(false));

    // Every call is audited on the server, under the caller and the MCP session.
    let records = audit.records();
    let bobs: Vec<_> = records
        .iter()
        .filter(|r| r.principal.as_deref() == Some("bob"))
        .collect();
    assert!(
        bobs.iter()
            .any(|r| r.tool == "admin_reset" && r.code == Some(ErrorCode::ScopesMissing)),
        "{bobs:?}"
    );
    assert!(
        bobs.iter()
            .any(|r| r.tool == "add" && r.session.as_deref() == Some(session.as_str()))
    );
    let sessions: std::collections::HashSet<_> =
        records.iter().filter_map(|r| r.session.clone()).collect();
    assert_eq!(sessions.len(), 3, "three clients, three sessions");
    raw.cancel().await.unwrap();
    alice.cancel().await.unwrap();
    bob.close().await;
    server.stop().await;
}

/// An engine whose `send` always needs approval and whose `schedule` needs `when`; counts runs.
fn asking_engine(sent: Arc<AtomicUsize>) -> Arc<Engine> {
    let engine = Arc::new(Engine::new());
    let object =
        json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]});
    engine
        .register(tool(
            json!({"name": "send", "description": "Sends.", "input_schema": object,
                   "policy": {"effect": "external", "risk": "high", "approval": {"required": "always"}}}),
            move |a| {
                sent.fetch_add(1, Ordering::SeqCst);
                json!({"sent_to": a["to"]})
            },
        ))
        .unwrap();
    let schedule = json!({"type": "object", "properties": {
        "with": {"type": "string"}, "when": {"type": "string", "description": "When, as a date"}
    }, "required": ["with", "when"]});
    engine
        .register(tool(
            json!({"name": "schedule", "description": "Schedules.", "input_schema": schedule}),
            |a| json!({"scheduled": a}),
        ))
        .unwrap();
    engine
}

fn answering(
    answer: impl Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync + 'static,
) -> Asked {
    Asked {
        answer: Arc::new(answer),
        asked: Arc::new(AtomicUsize::new(0)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_missing_fields_are_asked_through_elicitation() {
    let sent = Arc::new(AtomicUsize::new(0));
    let server = serve(asking_engine(sent.clone())).await;

    let yes = answering(|_| {
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
    });
    let client = rmcp_client(server.url(), "bob-token", yes.clone()).await;
    let out = client
        .peer()
        .call_tool(params("send", json!({"to": "ada"})))
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(false), "{out:?}");
    assert_eq!(out.structured_content, Some(json!({"sent_to": "ada"})));
    assert_eq!(
        (
            yes.asked.load(Ordering::SeqCst),
            sent.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    client.cancel().await.unwrap();

    let no = answering(|_| ElicitResult::new(ElicitationAction::Decline));
    let client = rmcp_client(server.url(), "bob-token", no.clone()).await;
    let out = client
        .peer()
        .call_tool(params("send", json!({"to": "eve"})))
        .await
        .unwrap();
    assert_eq!(out.is_error, Some(true));
    assert!(
        out.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("approval_rejected")
    );
    assert_eq!(sent.load(Ordering::SeqCst), 1, "a declined call never runs");
    // The missing field is asked, then the call runs with it.
    let out = client
        .peer()
        .call_tool(params("schedule", json!({"with": "aviad"})))
        .await
        .unwrap();
    assert!(
        out.content[0].as_text().unwrap().text.contains("needs"),
        "declined: the needs envelope"
    );
    client.cancel().await.unwrap();
    let fills = answering(|request| {
        let text = serde_json::to_string(request).unwrap();
        assert!(text.contains("\"when\""), "{text}");
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"when": "tomorrow 12:00"}))
    });
    let client = rmcp_client(server.url(), "bob-token", fills).await;
    let out = client
        .peer()
        .call_tool(params("schedule", json!({"with": "aviad"})))
        .await
        .unwrap();
    assert_eq!(
        out.structured_content,
        Some(json!({"scheduled": {"with": "aviad", "when": "tomorrow 12:00"}}))
    );
    client.cancel().await.unwrap();

    // A client that cannot be asked gets the pending envelope to act on.
    let plain = rmcp_client(server.url(), "bob-token", ()).await;
    let out = plain
        .peer()
        .call_tool(params("send", json!({"to": "ada"})))
        .await
        .unwrap();
    assert!(
        out.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("pending_approval")
    );
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    plain.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_idempotent_call_over_two_sessions_runs_once() {
    let charged = Arc::new(AtomicUsize::new(0));
    let engine = Arc::new(Engine::new());
    let counter = charged.clone();
    engine
        .register(tool(
            json!({"name": "charge", "description": "Charges.", "input_schema": {"type": "object"},
                   "policy": {"idempotency": {"mode": "arguments"}}}),
            move |_| json!({"charge": counter.fetch_add(1, Ordering::SeqCst) + 1}),
        ))
        .unwrap();
    let server = serve(engine).await;
    let one = rmcp_client(server.url(), "bob-token", ()).await;
    let two = rmcp_client(server.url(), "bob-token", ()).await;
    let a = one
        .peer()
        .call_tool(params("charge", json!({"cents": 500})))
        .await
        .unwrap();
    let b = two
        .peer()
        .call_tool(params("charge", json!({"cents": 500})))
        .await
        .unwrap();
    assert_eq!(a.structured_content, Some(json!({"charge": 1})));
    assert_eq!(
        b.structured_content, a.structured_content,
        "replayed, not run again"
    );
    assert_eq!(charged.load(Ordering::SeqCst), 1);
    one.cancel().await.unwrap();
    two.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_http_requests_are_refused_and_the_server_lives() {
    let audit = Arc::new(MemoryAudit::new());
    let server = serve(served_engine(audit)).await;
    // No pooled connections: the one a refused 10 MB body was cut off on is not reused.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |body: String, token: Option<&str>| {
        let mut request = http
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    };
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(post(init.to_string(), None).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(post(init.to_string(), Some("guess")).send().await.unwrap()),
        401
    );
    let evil = post(init.to_string(), Some("bob-token")).header("origin", "http://evil.example");
    assert_eq!(status(evil.send().await.unwrap()), 403);
    let rebinding = post(init.to_string(), Some("bob-token")).header("host", "evil.example");
    assert_eq!(status(rebinding.send().await.unwrap()), 403);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"x":"{}"}}}}"#,
        "a".repeat(10 << 20)
    );
    // Refused while it streams in: 413, or the connection closed before reqwest read the
    // answer (the server stops reading at the limit).
    if let Ok(answer) = post(huge, Some("bob-token")).send().await {
        assert_eq!(status(answer), 413);
    }
    let garbage = post("{not json".into(), Some("bob-token"))
        .send()
        .await
        .unwrap();
    assert!((400..500).contains(&status(garbage)));
    let unknown_method = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/dance", "params": {}});
    let answered = post(unknown_method.to_string(), Some("bob-token"))
        .send()
        .await
        .unwrap();
    assert!(answered.status().as_u16() >= 400 || answered.text().await.unwrap().contains("error"));
    // Still serving.
    let client = rmcp_client(server.url(), "bob-token", ()).await;
    let ok = client
        .peer()
        .call_tool(params("add", json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(ok.structured_content, Some(json!({"sum": 2})));
    client.cancel().await.unwrap();
    server.stop().await;

    // Beyond loopback only with an auth hook or tokens.
    let open = McpServeOptions {
        bind: "0.0.0.0:0".into(),
        ..McpServeOptions::default()
    };
    let refused = McpServer::new(Arc::new(Engine::new()), open)
        .serve_http()
        .await;
    assert!(
        refused
            .err()
            .unwrap()
            .to_string()
            .contains("needs an auth hook")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_follows_the_server_and_timeouts_cancel_on_the_server() {
    let audit = Arc::new(MemoryAudit::new());
    let served = served_engine(audit);
    let cancelled = Arc::new(tokio::sync::Notify::new());
    served
        .register(slow_tool(cancelled.clone(), json!({})))
        .unwrap();
    let server = serve(served.clone()).await;
    let local = Arc::new(Engine::new());
    let options = McpClientOptions {
        prefix: "r_".into(),
        policy: serde_json::from_value(json!({"timeout_ms": 300})).unwrap(),
        ..Default::default()
    };
    let client = McpClient::connect(http(server.url(), "bob-token"), options)
        .await
        .unwrap();
    client.register(&local).await.unwrap();
    let out = local
        .run(
            vec![Call::new("1", "r_slow", json!({}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(out.results[0].envelope.code(), Some(ErrorCode::Timeout));
    tokio::time::timeout(Duration::from_secs(5), cancelled.notified())
        .await
        .expect("the server's handler saw the cancellation");

    // A tool registered on the server appears in the local registry.
    served
        .register(tool(
            json!({"name": "late", "description": "Late.", "input_schema": {"type": "object"}}),
            |_| json!(1),
        ))
        .unwrap();
    let mut appeared = false;
    for _ in 0..100 {
        if local.specs().iter().any(|s| s.name == "r_late") {
            appeared = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(appeared, "tools/list_changed refreshed the registry");
    client.close().await;
    server.stop().await;
}

/// `slow` waits for its cancellation; `ended` is told when its call ended (the token fired,
/// or the future was dropped).
fn slow_tool(ended: Arc<tokio::sync::Notify>, policy: Value) -> Tool {
    let spec = json!({"name": "slow", "description": "Waits.", "input_schema": {"type": "object"}, "policy": policy});
    Tool::new(
        ToolSpec::from_value(spec).unwrap(),
        handler_fn(move |_args, ctx| {
            let ended = Ended(ended.clone());
            async move {
                ctx.cancel.cancelled().await;
                drop(ended);
                Ok(json!("cancelled"))
            }
        }),
    )
}

/// Tells when it is dropped.
struct Ended(Arc<tokio::sync::Notify>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_call_leaves_nothing_hanging() {
    let engine = Arc::new(Engine::new());
    let ended = Arc::new(tokio::sync::Notify::new());
    engine
        .register(slow_tool(ended.clone(), json!({"timeout_ms": 500})))
        .unwrap();
    let server = serve(engine).await;
    let client = rmcp_client(server.url(), "bob-token", ()).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool(params("slow", json!({}))).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The client goes away mid-call. A Streamable HTTP session outlives its connections (the
    // client may come back for the result with Last-Event-ID), so the call runs on and ends by
    // its own timeout; the idle session is dropped after rmcp's keep-alive (5 minutes).
    client.cancel().await.unwrap();
    call.abort();
    tokio::time::timeout(Duration::from_secs(5), ended.notified())
        .await
        .expect("the call of a client that went away ended (by its timeout)");
    // And keeps serving others.
    let other = rmcp_client(server.url(), "bob-token", ()).await;
    assert_eq!(other.peer().list_all_tools().await.unwrap().len(), 1);
    other.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_reads_the_tools_view_and_the_client_gets_the_data() {
    let engine = Arc::new(Engine::new());
    let rows = json!({"rows": [{"title": "a"}, {"title": "b"}, {"title": "c"}]});
    let data = rows.clone();
    engine
        .register(
            tool(
                json!({"name": "search", "description": "Searches.", "input_schema": {"type": "object"}}),
                move |_| data.clone(),
            )
            .to_model_output(handler_fn(|data, _ctx| async move {
                Ok(json!({"count": data["rows"].as_array().map_or(0, Vec::len)}))
            })),
        )
        .unwrap();
    engine
        .register(tool(
            json!({"name": "long", "description": "Says a lot.", "input_schema": {"type": "object"},
                   "policy": {"model_output_max_chars": 10}}),
            |_| json!({"text": "x".repeat(500)}),
        ))
        .unwrap();
    let server = serve(engine).await;
    let raw = rmcp_client(server.url(), "bob-token", ()).await;

    let found = raw
        .peer()
        .call_tool(params("search", json!({})))
        .await
        .unwrap();
    assert_eq!(found.structured_content, Some(rows), "the data, whole");
    let text: Value = serde_json::from_str(&found.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(text, json!({"ok": true, "data": {"count": 3}}), "the view");

    let long = raw
        .peer()
        .call_tool(params("long", json!({})))
        .await
        .unwrap();
    assert_eq!(
        long.structured_content.unwrap()["text"]
            .as_str()
            .unwrap()
            .len(),
        500
    );
    let text = &long.content[0].as_text().unwrap().text;
    assert!(text.contains("truncated by tooljig"), "{text}");
    assert!(text.len() < 200, "the budget holds over MCP: {text}");
    raw.cancel().await.unwrap();
    server.stop().await;
}
