//! `tools/call` over MCP: tooljig's guarded server beside a bare rmcp server in the same run,
//! measured as a script (throughput and p50/p99 of single calls):
//!
//! - Streamable HTTP (axum + rmcp's session manager for both), with 1 and 32 clients, each its
//!   own session, calling a no-op tool in a loop;
//! - stdio-like: one connection over an in-process pipe, with 1 and 32 calls in flight.
//!
//! The bare server answers `tools/call` with an empty text result and nothing else. tooljig's
//! runs the whole path of one call: bearer-token auth per HTTP request, the caller's scopes,
//! schema validation, a rate limit, audit to memory, the envelope as the result.
//!
//! Run with `cargo bench -p tooljig --bench mcp`; figures go to `BENCHMARKS.md`.

mod support;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tooljig::mcp::{McpServeOptions, McpServer};
use tooljig::*;

const WARMUP: Duration = Duration::from_millis(500);
const MEASURE: Duration = Duration::from_secs(3);

/// The bare rmcp server: one no-op tool.
#[derive(Clone)]
struct Bare;

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(Map::from_iter([("type".into(), json!("object"))]));
        Ok(ListToolsResult::with_all_items(vec![
            McpTool::new_with_raw("noop", None, schema),
        ]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text("{}")]).into())
    }
}

fn guarded_engine() -> Arc<Engine> {
    let engine = Arc::new(Engine::new().with_audit(Arc::new(MemoryAudit::new())));
    let spec = ToolSpec::from_value(json!({
        "name": "noop", "description": "Does nothing.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "policy": {"scopes": ["bench"], "rate_limits": [{"per": "principal", "limit": 1000000000, "window_ms": 1000}]}
    }))
    .expect("a spec");
    engine
        .register(Tool::new(
            spec,
            handler_fn(|_args, _ctx| async { Ok(json!({})) }),
        ))
        .expect("registers");
    engine
}

/// Serves `Bare` over Streamable HTTP the way tooljig serves (axum, local sessions).
async fn serve_bare() -> (String, tokio_util::sync::CancellationToken) {
    let stop = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(
        || Ok(Bare),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
    });
    (url, stop)
}

async fn http_client(url: &str) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some("bench-token".into());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects")
}

fn call() -> CallToolRequestParams {
    CallToolRequestParams::new("noop").with_arguments(Map::from_iter([("n".into(), json!(1))]))
}

/// Runs `clients` loops of calls over `peers` (one per loop) for `MEASURE` after `WARMUP`.
async fn measure(peers: Vec<rmcp::Peer<RoleClient>>) -> (f64, Duration, Duration) {
    let start = Instant::now();
    let tasks: Vec<_> = peers
        .into_iter()
        .map(|peer| {
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let t0 = Instant::now();
                    let out = peer.call_tool(call()).await.expect("answers");
                    assert_ne!(out.is_error, Some(true), "{out:?}");
                    let now = Instant::now();
                    if now - start > WARMUP + MEASURE {
                        break;
                    }
                    if now - start > WARMUP {
                        latencies.push(now - t0);
                    }
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a loop"));
    }
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    (
        all.len() as f64 / MEASURE.as_secs_f64(),
        pct(0.5),
        pct(0.99),
    )
}

fn row(
    transport: &str,
    server: &str,
    clients: usize,
    (rate, p50, p99): (f64, Duration, Duration),
    base: Option<f64>,
) -> f64 {
    let ratio = base
        .map(|b| format!("{:.0}%", 100.0 * rate / b))
        .unwrap_or_else(|| "-".into());
    println!(
        "| {transport} | {server} | {clients} | {rate:.0} | {} | {} | {ratio} |",
        p50.as_micros(),
        p99.as_micros()
    );
    rate
}

async fn http(clients: usize) {
    let (bare_url, bare_stop) = serve_bare().await;
    let options = McpServeOptions {
        tokens: HashMap::from([(
            "bench-token".into(),
            Caller {
                principal: Some("bench".into()),
                scopes: vec!["bench".into()],
                ..Caller::default()
            },
        )]),
        ..McpServeOptions::default()
    };
    let ours = McpServer::new(guarded_engine(), options)
        .serve_http()
        .await
        .expect("serves");
    let mut bare_peers = Vec::new();
    let mut our_peers = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..clients {
        let b = http_client(&bare_url).await;
        let o = http_client(ours.url()).await;
        bare_peers.push(b.peer().clone());
        our_peers.push(o.peer().clone());
        keep.push((b, o));
    }
    let base = row(
        "Streamable HTTP",
        "bare rmcp",
        clients,
        measure(bare_peers).await,
        None,
    );
    row(
        "Streamable HTTP",
        "tooljig, guarded",
        clients,
        measure(our_peers).await,
        Some(base),
    );
    for (b, o) in keep {
        let _ = b.cancel().await;
        let _ = o.cancel().await;
    }
    bare_stop.cancel();
    ours.stop().await;
}

/// One connection over an in-process pipe (what stdio is, minus the process), `inflight`
/// calls at once.
async fn pipe(inflight: usize) {
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_side);
        if let Ok(running) = Bare.serve((r, w)).await {
            let _ = running.waiting().await;
        }
    });
    let (r, w) = tokio::io::split(client_side);
    let bare = ().serve((r, w)).await.expect("connects");

    let options = McpServeOptions {
        caller: Caller {
            principal: Some("bench".into()),
            scopes: vec!["bench".into()],
            ..Caller::default()
        },
        ..McpServeOptions::default()
    };
    let server = McpServer::new(guarded_engine(), options);
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_side);
        let _ = server.serve_io(r, w).await;
    });
    let (r, w) = tokio::io::split(client_side);
    let ours = ().serve((r, w)).await.expect("connects");

    let base = row(
        "stdio (pipe)",
        "bare rmcp",
        inflight,
        measure(vec![bare.peer().clone(); inflight]).await,
        None,
    );
    row(
        "stdio (pipe)",
        "tooljig, guarded",
        inflight,
        measure(vec![ours.peer().clone(); inflight]).await,
        Some(base),
    );
    let _ = bare.cancel().await;
    let _ = ours.cancel().await;
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("mcp: run with `cargo bench -p tooljig --bench mcp`");
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = support::runtime();
    println!("| transport | server | clients / in flight | calls/s | p50 µs | p99 µs | of bare |");
    println!("|---|---|---|---|---|---|---|");
    rt.block_on(async {
        for clients in [1, 32] {
            http(clients).await;
        }
        for inflight in [1, 32] {
            pipe(inflight).await;
        }
    });
}
