//! An engine's tools served over MCP: stdio by default (for Claude Desktop, an IDE, or
//! another agent that starts it), Streamable HTTP with `--http`.
//!
//! Run: `cargo run -p tooljig --features mcp --example mcp_server` (stdio), or
//! `cargo run -p tooljig --features mcp --example mcp_server -- --http 127.0.0.1:8931` (then point an MCP
//! client at `http://127.0.0.1:8931/mcp` with `Authorization: Bearer dev-token`).

use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::mcp::{McpServeOptions, McpServer};
use tooljig::{Caller, Effect, Engine, HandlerError, Policy, Tool};

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// What to say back.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Arc::new(Engine::new());
    engine.register(
        Tool::typed("add", "Adds two integers.", |x: Add, _ctx| async move {
            Ok::<_, HandlerError>(serde_json::json!({"sum": x.a + x.b}))
        })
        .policy(Policy::default().effect(Effect::Read)),
    )?;
    engine.register(Tool::typed(
        "echo",
        "Says the text back, with who asked.",
        |x: Echo, ctx| async move {
            Ok::<_, HandlerError>(serde_json::json!({
                "text": x.text, "principal": ctx.caller.principal, "session": ctx.caller.session
            }))
        },
    ))?;
    let mut options = McpServeOptions {
        caller: Caller::principal("local-user"),
        ..McpServeOptions::default()
    };
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            options.bind = args.get(i + 1).cloned().unwrap_or(options.bind);
            options.tokens = HashMap::from([("dev-token".into(), Caller::principal("dev"))]);
            let server = McpServer::new(engine, options).serve_http().await?;
            eprintln!(
                "MCP on {} (Authorization: Bearer dev-token); Ctrl-C stops",
                server.url()
            );
            tokio::signal::ctrl_c().await?;
            server.stop().await;
        }
        None => McpServer::new(engine, options).serve_stdio().await?,
    }
    Ok(())
}
