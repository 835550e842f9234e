//! MCP both ways, over real transports: tooljig's server reached by rmcp's own client and by
//! tooljig's client, guardrails applied on each side, hostile HTTP requests, a server that
//! dies, and a registry that changes.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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
