//! The MCP conformance suite's subject (`tests/mcp-conformance/run-tests.sh`), both ways:
//! `mcp_conformance server ADDR` serves an engine with the tools the server scenarios call;
//! `mcp_conformance client URL` is the client the client scenarios start (the scenario in
//! `MCP_CONFORMANCE_SCENARIO`): it registers the server's tools into an engine and calls them
//! through it.

use serde_json::{Value, json};
use std::sync::Arc;
use tooljig::mcp::{McpClient, McpServeOptions, McpServer, McpTarget};
use tooljig::{
    BatchOptions, Call, Caller, Engine, ErrorCode, HandlerError, Tool, ToolSpec, handler_fn,
};

fn tool(
    spec: Value,
    f: impl Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
) -> Tool {
    let f = Arc::new(f);
    Tool::new(
        ToolSpec::from_value(spec).unwrap_or_else(|e| panic!("{e}")),
        handler_fn(move |args, _ctx| {
            let f = f.clone();
            async move { f(args) }
        }),
    )
}

fn engine() -> Result<Engine, Box<dyn std::error::Error>> {
    let engine = Engine::new();
    let empty = json!({"type": "object"});
    engine.register(tool(
        json!({"name": "test_simple_text", "description": "Returns simple text.", "input_schema": empty}),
        |_| Ok(json!("This is a simple text response for testing.")),
    ))?;
    engine.register(tool(
        json!({"name": "test_error_handling", "description": "Always fails.", "input_schema": empty}),
        |_| Err(HandlerError::tool(ErrorCode::ExternalApiError, "This tool intentionally returns an error for testing")),
    ))?;
    // The user's answer is asked through the engine's own `needs`: the server elicits the
    // missing fields, then the call runs with them.
    engine.register(tool(
        json!({"name": "test_elicitation", "description": "Asks the user for their details.",
               "input_schema": {"type": "object", "properties": {
                   "message": {"type": "string"},
                   "username": {"type": "string", "description": "User's response"},
                   "email": {"type": "string", "description": "User's email address"}},
               "required": ["message", "username", "email"]}}),
        |a| {
            Ok(json!(format!(
                "User response: accept, content: {{\"username\": {}, \"email\": {}}}",
                a["username"], a["email"]
            )))
        },
    ))?;
    // Progress reports become `notifications/progress` for a client that sent a token.
    engine.register(Tool::new(
        ToolSpec::from_value(json!({"name": "test_tool_with_progress", "description": "Reports progress.", "input_schema": empty}))?,
        handler_fn(|_args, ctx| async move {
            for (i, fraction) in [0.0, 0.5, 1.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                ctx.progress.report(Some(fraction), Some(format!("{}/100", fraction * 100.0)));
            }
            Ok(json!("Progress reported"))
        }),
    ))?;
    engine.register(tool(
        json!({"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features",
               "input_schema": {
                   "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                   "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                   "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                   "additionalProperties": false}}),
        Ok,
    ))?;
    Ok(engine)
}

async fn client(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let engine = Arc::new(Engine::new());
    let target = McpTarget::Http {
        url: url.into(),
        headers: Default::default(),
    };
    let client = McpClient::connect(target, Default::default()).await?;
    let names = client.register(&engine).await?;
    eprintln!("{scenario}: registered {names:?}");
    if scenario == "tools_call" {
        let call = Call::new("1", "add_numbers", json!({"a": 2, "b": 3}));
        let out = engine
            .run(vec![call], Caller::default(), BatchOptions::default())
            .await;
        eprintln!("{}", serde_json::to_string(&out.results[0].envelope)?);
    }
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("server"), Some(bind)) => {
            let options = McpServeOptions {
                bind: bind.clone(),
                ..Default::default()
            };
            let server = McpServer::new(Arc::new(engine()?), options)
                .serve_http()
                .await?;
            println!("{}", server.url());
            tokio::signal::ctrl_c().await?;
            server.stop().await;
            Ok(())
        }
        (Some("client"), Some(url)) => client(url).await,
        _ => Err("usage: mcp_conformance server ADDR | client URL".into()),
    }
}
