//! Every message tooljig's MCP server and client send validates against the MCP wire schema
//! (`../shared/corpora/mcp-schema/2025-11-25/schema.json`, written by the protocol's authors).
//!
//! The server is driven over a pipe by a scripted client (initialize, list, calls that succeed,
//! are refused, are unknown, need an approval asked through elicitation, and a registry
//! change); the client is run against the example server with its stdin copied to a file.

mod corpora;
mod example_binary;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tooljig::mcp::{McpClient, McpClientOptions, McpServeOptions, McpServer, McpTarget};
use tooljig::{BatchOptions, Call, Caller, Engine, Tool, ToolSpec, handler_fn};

struct Schema(Value);

impl Schema {
    fn load() -> Option<Schema> {
        let path = corpora::locate("mcp-schema/2025-11-25/schema.json")?;
        Some(Schema(
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap(),
        ))
    }

    /// Panics naming the message and every violation unless `value` is a valid `definition`.
    fn check(&self, definition: &str, value: &Value) {
        let mut schema = self.0.clone();
        schema["$ref"] = json!(format!("#/$defs/{definition}"));
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{definition} {value}: {errors:?}");
    }
}

fn tool(name: &str, policy: Value) -> Tool {
    let spec = json!({"name": name, "description": "A tool.", "policy": policy,
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}});
    Tool::new(
        ToolSpec::from_value(spec).unwrap(),
        handler_fn(|args, _ctx| async move { Ok(json!({"n": args["n"]})) }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_sends_is_valid_mcp() {
    let Some(schema) = Schema::load() else { return };
    let engine = Arc::new(Engine::new());
    engine
        .register(tool("echo", json!({"effect": "read"})))
        .unwrap();
    engine
        .register(tool("admin", json!({"scopes": ["admin"]})))
        .unwrap();
    engine
        .register(tool(
            "send",
            json!({"risk": "high", "approval": {"required": "always"}}),
        ))
        .unwrap();
    let options = McpServeOptions {
        caller: Caller::principal("ada"),
        ..Default::default()
    };
    let server = McpServer::new(engine.clone(), options);
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(theirs);
    tokio::spawn(async move { server.serve_io(read, write).await });
    let (from_server, mut to_server) = tokio::io::split(ours);
    let mut lines = BufReader::new(from_server).lines();

    let mut methods: HashMap<Value, &str> = HashMap::new();
    let mut sent = Vec::new();
    let script: Vec<(&str, Value)> = vec![
        (
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "echo", "arguments": {"n": 1}})),
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"n": "one"}}),
        ),
        ("tools/call", json!({"name": "echo", "arguments": {}})),
        (
            "tools/call",
            json!({"name": "admin", "arguments": {"n": 1}}),
        ),
        ("tools/call", json!({"name": "nope", "arguments": {}})),
        ("tools/call", json!({"name": "send", "arguments": {"n": 2}})),
        ("tools/dance", json!({})),
    ];
    for (id, (method, params)) in script.into_iter().enumerate() {
        let id = json!(id + 1);
        methods.insert(id.clone(), method);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        to_server
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        if method == "initialize" {
            let answer = lines.next_line().await.unwrap().unwrap();
            sent.push(serde_json::from_str::<Value>(&answer).unwrap());
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            to_server
                .write_all(format!("{note}\n").as_bytes())
                .await
                .unwrap();
            continue;
        }
        // Read until this request's answer, answering the server's own requests.
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            sent.push(message.clone());
            if message.get("method") == Some(&json!("elicitation/create")) {
                let asked = &message["params"]["requestedSchema"]["properties"];
                let content = if asked.get("approve").is_some() {
                    json!({"approve": true})
                } else {
                    json!({"n": 7})
                };
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": content}});
                to_server
                    .write_all(format!("{answer}\n").as_bytes())
                    .await
                    .unwrap();
                continue;
            }
            if message.get("id") == Some(&id) {
                break;
            }
        }
    }
    engine.register(tool("late", json!({}))).unwrap();
    let changed = lines.next_line().await.unwrap().unwrap();
    sent.push(serde_json::from_str(&changed).unwrap());

    let mut seen = HashMap::<&str, usize>::new();
    for message in &sent {
        schema.check("JSONRPCMessage", message);
        let kind = if let Some(method) = message.get("method").and_then(Value::as_str) {
            match method {
                "elicitation/create" => "ElicitRequest",
                "notifications/tools/list_changed" => "ToolListChangedNotification",
                other => panic!("the server sent an unexpected {other}"),
            }
        } else if message.get("error").is_some() {
            "JSONRPCErrorResponse"
        } else {
            match methods[&message["id"]] {
                "initialize" => "InitializeResult",
                "tools/list" => "ListToolsResult",
                "tools/call" => "CallToolResult",
                other => panic!("a result for {other}"),
            }
        };
        let checked = if kind.ends_with("Result") {
            &message["result"]
        } else {
            message
        };
        schema.check(kind, checked);
        *seen.entry(kind).or_default() += 1;
    }
    assert_eq!(seen.get("CallToolResult"), Some(&5), "{seen:?}");
    assert_eq!(
        seen.get("JSONRPCErrorResponse"),
        Some(&2),
        "unknown tool, unknown method: {seen:?}"
    );
    assert_eq!(
        seen.get("ElicitRequest"),
        Some(&2),
        "the missing `n`, then the approval"
    );
    assert_eq!(seen.get("ToolListChangedNotification"), Some(&1));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_client_sends_is_valid_mcp() {
    let Some(schema) = Schema::load() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sent.jsonl");
    let server = example_binary::path("mcp_server");
    // The client's every byte is copied to `log` on its way to the server.
    let script = format!("tee -a '{}' | '{}'", log.display(), server.display());
    let target = McpTarget::Command {
        command: vec!["sh".into(), "-c".into(), script],
        env: Default::default(),
        cwd: None,
    };
    let engine = Arc::new(Engine::new());
    let options: McpClientOptions =
        serde_json::from_value(json!({"policy": {"timeout_ms": 200}})).unwrap();
    let client = McpClient::connect(target, options).await.unwrap();
    client.register(&engine).await.unwrap();
    let out = engine
        .run(
            vec![
                Call::new("1", "add", json!({"a": 1, "b": 2})),
                Call::new("2", "echo", json!({"text": "x"})),
            ],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert!(
        out.results.iter().all(|r| r.envelope.is_ok()),
        "{:?}",
        out.results
    );
    client.close().await;

    let text = std::fs::read_to_string(&log).unwrap();
    let mut kinds = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let message: Value = serde_json::from_str(line).unwrap();
        schema.check("JSONRPCMessage", &message);
        let kind = match message["method"].as_str().unwrap() {
            "initialize" => "InitializeRequest",
            "notifications/initialized" => "InitializedNotification",
            "tools/list" => "ListToolsRequest",
            "tools/call" => "CallToolRequest",
            "notifications/cancelled" => "CancelledNotification",
            other => panic!("the client sent an unexpected {other}"),
        };
        schema.check(kind, &message);
        kinds.push(kind);
    }
    assert_eq!(
        kinds.iter().filter(|k| **k == "CallToolRequest").count(),
        2,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"InitializeRequest") && kinds.contains(&"ListToolsRequest"));
}
