//! `tools/call` over MCP: tooljig's guarded server beside a bare rmcp server in the same run,
//! measured as a script (throughput and p50/p99 of single calls):
//!
//! - Streamable HTTP (axum + rmcp's session manager for both), with 1 and 32 clients, each its
//!   own session, calling a no-op tool in a loop;
//! - stdio: each server a child process (this bench run with `--serve-stdio`) that rmcp's
//!   client talks to over its stdin and stdout, with 1 and 32 calls in flight;
//! - an in-process pipe: stdio without the processes, the same loads.
//!
//! The bare server answers `tools/call` with an empty text result and nothing else. tooljig's
//! runs the whole path of one call: bearer-token auth per HTTP request, the caller's scopes,
//! schema validation, a rate limit, audit to memory (records chained, then forwarded), the
//! envelope as the result.
//!
//! The servers take turns in short slices, so drift of the shared host weighs on each alike;
//! each row gives its share of bare rmcp's calls/s over the run and, steadier on a noisy host,
//! the median of its shares round by round.
//! Run with `cargo bench -p tooljig --bench mcp` (`TOOLJIG_BENCH_MCP=http`, `=stdio` or `=pipe`
//! runs one part, with one client, for a profiler, and `TOOLJIG_BENCH_SERVER=0|1|2` then loads one
//! server alone); figures go to `BENCHMARKS.md`.

mod support;

// The allocator of the Python and Node packages, for both servers alike.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

const WARMUP: Duration = Duration::from_millis(300);
/// Each server is measured in `ROUNDS` slices of `SLICE`, the servers taking turns.
const SLICE: Duration = Duration::from_millis(300);
const ROUNDS: usize = 10;

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

/// An engine with the no-op tool and nothing else: what the MCP layer costs by itself.
fn plain_engine() -> Arc<Engine> {
    noop_in(Engine::new(), json!({}))
}

/// The no-op tool behind every guardrail a call can pass: auth is the server's part.
///
/// Its audit log is in memory, its records taken out as JSON Lines ten times a second the
/// way an app that forwards them elsewhere would: records are still built and chained one
/// by one, but a log that only grew would have the bench measure the kernel handing it fresh
/// pages (a quarter of the guarded call's time in a profile).
fn guarded_engine() -> Arc<Engine> {
    let audit = Arc::new(MemoryAudit::new());
    let forwarded = Arc::downgrade(&audit);
    tokio::spawn(async move {
        while let Some(audit) = forwarded.upgrade() {
            drop(audit.take_lines());
            drop(audit);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let audited = Engine::new().with_audit(audit);
    let limit = json!({"max": 1_000_000_000u64, "per_ms": 1000, "scope": "principal"});
    noop_in(
        audited,
        json!({"scopes": ["bench"], "rate_limits": [limit]}),
    )
}

fn noop_in(engine: Engine, policy: serde_json::Value) -> Arc<Engine> {
    let spec = ToolSpec::from_value(json!({
        "name": "noop", "description": "Does nothing.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "policy": policy
    }))
    .expect("a spec");
    let noop = handler_fn(|_args, _ctx| async { Ok(json!({})) });
    engine.register(Tool::new(spec, noop)).expect("registers");
    Arc::new(engine)
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

/// Calls in a loop on each peer for `span`; the latencies of the calls.
async fn run_for(peers: &[rmcp::Peer<RoleClient>], span: Duration) -> Vec<Duration> {
    let end = Instant::now() + span;
    let tasks: Vec<_> = peers
        .iter()
        .cloned()
        .map(|peer| {
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < end {
                    let t0 = Instant::now();
                    let out = peer.call_tool(call()).await.expect("answers");
                    assert_ne!(out.is_error, Some(true), "{out:?}");
                    latencies.push(t0.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a loop"));
    }
    all
}

/// What one server did under load: calls/s over all its slices, p50 and p99 of the calls,
/// and calls/s in each round.
struct Measured {
    rate: f64,
    p50: Duration,
    p99: Duration,
    rounds: Vec<f64>,
}

/// Measures each group of peers (one loop per peer) in interleaved slices, so that drift of
/// the shared host over the run weighs on every server alike.
async fn measure(groups: &[Vec<rmcp::Peer<RoleClient>>]) -> Vec<Measured> {
    // `TOOLJIG_BENCH_SERVER=0|1|2` (bare, no guardrails, guarded) loads that server alone for
    // a few seconds, for a profiler to attribute what it sees to one server.
    if let Some(g) = std::env::var("TOOLJIG_BENCH_SERVER")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&g| g < groups.len())
    {
        let span = SLICE * ROUNDS as u32;
        let calls = run_for(&groups[g], span).await.len();
        println!(
            "server {g} alone: {:.0} calls/s",
            calls as f64 / span.as_secs_f64()
        );
        std::process::exit(0);
    }
    for peers in groups {
        run_for(peers, WARMUP).await;
    }
    let mut latencies = vec![Vec::new(); groups.len()];
    let mut rounds = vec![Vec::new(); groups.len()];
    for round in 0..ROUNDS {
        for k in 0..groups.len() {
            let g = (round + k) % groups.len();
            let slice = run_for(&groups[g], SLICE).await;
            rounds[g].push(slice.len() as f64 / SLICE.as_secs_f64());
            latencies[g].extend(slice);
        }
    }
    let measured = SLICE.as_secs_f64() * ROUNDS as f64;
    latencies
        .into_iter()
        .zip(rounds)
        .map(|(mut all, rounds)| {
            all.sort();
            let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
            Measured {
                rate: all.len() as f64 / measured,
                p50: pct(0.5),
                p99: pct(0.99),
                rounds,
            }
        })
        .collect()
}

/// Prints one server's row; beside bare rmcp's (`base`), its share of bare's calls/s over the
/// whole run and the median of its shares round by round: the servers of a round ran within
/// the same second or two, so the median holds when the host's speed drifts between rounds.
fn row(transport: &str, server: &str, clients: usize, m: &Measured, base: Option<&Measured>) {
    let (ratio, median) = match base {
        Some(b) => {
            let mut shares: Vec<f64> = m.rounds.iter().zip(&b.rounds).map(|(r, b)| r / b).collect();
            shares.sort_by(f64::total_cmp);
            let median = shares[shares.len() / 2];
            (
                format!("{:.0}%", 100.0 * m.rate / b.rate),
                format!("{:.0}%", 100.0 * median),
            )
        }
        None => ("-".into(), "-".into()),
    };
    println!(
        "| {transport} | {server} | {clients} | {:.0} | {} | {} | {ratio} | {median} |",
        m.rate,
        m.p50.as_micros(),
        m.p99.as_micros()
    );
}

async fn http(clients: usize) {
    let (bare_url, bare_stop) = serve_bare().await;
    let options = McpServeOptions {
        tokens: HashMap::from([("bench-token".into(), bench_caller())]),
        ..McpServeOptions::default()
    };
    let guarded = McpServer::new(guarded_engine(), options);
    let guarded = guarded.serve_http().await.expect("serves");
    let plain = McpServer::new(plain_engine(), McpServeOptions::default());
    let plain = plain.serve_http().await.expect("serves");
    let mut peers = [Vec::new(), Vec::new(), Vec::new()];
    let mut keep = Vec::new();
    for _ in 0..clients {
        for (i, url) in [bare_url.as_str(), plain.url(), guarded.url()]
            .into_iter()
            .enumerate()
        {
            let client = http_client(url).await;
            peers[i].push(client.peer().clone());
            keep.push(client);
        }
    }
    let Ok([bare, unguarded, guarded_peers]) = <[Measured; 3]>::try_from(measure(&peers).await)
    else {
        unreachable!("three groups")
    };
    let http = "Streamable HTTP";
    row(http, "bare rmcp", clients, &bare, None);
    row(
        http,
        "tooljig, no guardrails",
        clients,
        &unguarded,
        Some(&bare),
    );
    row(
        http,
        "tooljig, guarded",
        clients,
        &guarded_peers,
        Some(&bare),
    );
    for client in keep {
        let _ = client.cancel().await;
    }
    bare_stop.cancel();
    guarded.stop().await;
    plain.stop().await;
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
        caller: bench_caller(),
        ..McpServeOptions::default()
    };
    let unguarded = serve_pipe(McpServer::new(plain_engine(), options.clone())).await;
    let guarded = serve_pipe(McpServer::new(guarded_engine(), options)).await;
    let pipe = "stdio (pipe)";
    let peers = |c: &RunningService<RoleClient, ()>| vec![c.peer().clone(); inflight];
    let groups = [peers(&bare), peers(&unguarded), peers(&guarded)];
    let Ok([b, u, g]) = <[Measured; 3]>::try_from(measure(&groups).await) else {
        unreachable!("three groups")
    };
    row(pipe, "bare rmcp", inflight, &b, None);
    row(pipe, "tooljig, no guardrails", inflight, &u, Some(&b));
    row(pipe, "tooljig, guarded", inflight, &g, Some(&b));
    for client in [bare, unguarded, guarded] {
        let _ = client.cancel().await;
    }
}

/// The three servers, each a child process serving over its stdin and stdout: what an MCP
/// client that starts a server command gets.
async fn stdio(inflight: usize) {
    let mut clients = Vec::new();
    for server in ["bare", "plain", "guarded"] {
        let exe = std::env::current_exe().expect("the bench's own path");
        let mut command = tokio::process::Command::new(exe);
        command.args(["--bench", "--serve-stdio", server]);
        let (child, _) = rmcp::transport::TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the server starts");
        clients.push(().serve(child).await.expect("connects"));
    }
    let groups: Vec<_> = clients
        .iter()
        .map(|c| vec![c.peer().clone(); inflight])
        .collect();
    let Ok([b, u, g]) = <[Measured; 3]>::try_from(measure(&groups).await) else {
        unreachable!("three groups")
    };
    let stdio = "stdio (child process)";
    row(stdio, "bare rmcp", inflight, &b, None);
    row(stdio, "tooljig, no guardrails", inflight, &u, Some(&b));
    row(stdio, "tooljig, guarded", inflight, &g, Some(&b));
    for client in clients {
        let _ = client.cancel().await;
    }
}

/// A child's side of [`stdio`]: serves one server over this process's stdin and stdout until
/// the bench closes them.
async fn serve_stdio(server: &str) {
    let options = McpServeOptions {
        caller: bench_caller(),
        ..McpServeOptions::default()
    };
    let served = match server {
        "bare" => {
            let (r, w) = rmcp::transport::io::stdio();
            match Bare.serve((r, w)).await {
                Ok(running) => running
                    .waiting()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        }
        "plain" => McpServer::new(plain_engine(), options)
            .serve_stdio()
            .await
            .map_err(|e| e.to_string()),
        _ => McpServer::new(guarded_engine(), options)
            .serve_stdio()
            .await
            .map_err(|e| e.to_string()),
    };
    if let Err(e) = served {
        eprintln!("the {server} server stopped: {e}");
    }
}

/// Who the bench calls as: the guarded tool's scope.
fn bench_caller() -> Caller {
    Caller {
        principal: Some("bench".into()),
        scopes: vec!["bench".into()],
        ..Caller::default()
    }
}

/// A client of `server` over an in-process pipe.
async fn serve_pipe(server: McpServer) -> RunningService<RoleClient, ()> {
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let (r, w) = tokio::io::split(server_side);
        let _ = server.serve_io(r, w).await;
    });
    let (r, w) = tokio::io::split(client_side);
    ().serve((r, w)).await.expect("connects")
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("mcp: run with `cargo bench -p tooljig --bench mcp`");
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = support::runtime();
    // A child of `stdio`: its stdout is the MCP channel, so nothing else may be printed there.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--serve-stdio") {
        let server = args.get(at + 1).cloned().unwrap_or_default();
        rt.block_on(serve_stdio(&server));
        return;
    }
    println!(
        "| transport | server | clients / in flight | calls/s | p50 µs | p99 µs | of bare | of bare, median round |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // `TOOLJIG_BENCH_MCP=http`, `=stdio` or `=pipe` runs one part (for a profiler).
    let only = std::env::var("TOOLJIG_BENCH_MCP").unwrap_or_default();
    rt.block_on(async {
        if only == "pipe" {
            return pipe(1).await;
        }
        if only == "stdio" {
            return stdio(1).await;
        }
        if only == "http" {
            return http(1).await;
        }
        for clients in [1, 32] {
            http(clients).await;
        }
        for inflight in [1, 32] {
            stdio(inflight).await;
        }
        for inflight in [1, 32] {
            pipe(inflight).await;
        }
    });
}
