//! tooljig's MCP client against servers that misbehave: one that dies (SIGKILL) mid-session,
//! and commands that print garbage, nothing, or exit: clear, retryable errors, no hang, and a
//! reconnect that works.

mod example_binary;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tooljig::mcp::{McpClient, McpClientOptions, McpTarget};
use tooljig::{BatchOptions, Call, Caller, Engine, ErrorCode};

/// The example server (`examples/rust/mcp_server.rs`), built by `cargo test --all-targets`.
fn example_server() -> std::path::PathBuf {
    example_binary::path("mcp_server")
}

/// Pids of this process's children running `name`.
fn children_named(name: &str) -> Vec<u32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1));
            parent == Some(me.as_str())
                && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_default()
                    .contains(name)
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_that_dies_gives_retryable_errors_until_reconnected() {
    let target = McpTarget::Command {
        command: vec![example_server().display().to_string()],
        env: BTreeMap::new(),
        cwd: None,
    };
    let local = Arc::new(Engine::new());
    let client = McpClient::connect(
        target,
        McpClientOptions {
            prefix: "ex_".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    client.register(&local).await.unwrap();
    let run = |tool: &str, args: Value| {
        local.run(
            vec![Call::new("1", tool, args)],
            Caller::default(),
            BatchOptions::default(),
        )
    };
    let out = run("ex_echo", json!({"text": "hi"})).await;
    let data = out.results[0].envelope.data().unwrap().clone();
    assert_eq!(
        (data["text"].as_str(), data["principal"].as_str()),
        (Some("hi"), Some("local-user"))
    );
    assert!(
        data["session"].is_string(),
        "a stdio connection is a session too"
    );

    for pid in children_named("mcp_server") {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
    }
    let mut dead = None;
    for _ in 0..50 {
        let out = run("ex_add", json!({"a": 1, "b": 2})).await;
        if !out.results[0].envelope.is_ok() {
            dead = Some(out.results[0].envelope.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tooljig::Envelope::Error(e) = dead.expect("calls fail once the server died") else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Unavailable);
    assert!(e.retryable);

    client.reconnect().await.unwrap();
    let out = run("ex_add", json!({"a": 1, "b": 2})).await;
    assert_eq!(out.results[0].envelope.data(), Some(&json!({"sum": 3})));
    client.close().await;
    assert!(
        children_named("mcp_server").is_empty(),
        "close stops the command"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_sends_garbage_or_nothing_fails_to_connect_in_time() {
    let started = std::time::Instant::now();
    for script in [
        "echo 'this is not json'; echo '{\"jsonrpc\": 1}'; sleep 30",
        "sleep 30",
        "exit 3",
    ] {
        let target = McpTarget::Command {
            command: vec!["sh".into(), "-c".into(), script.into()],
            env: BTreeMap::new(),
            cwd: None,
        };
        let options = McpClientOptions {
            connect_timeout_ms: 1000,
            ..Default::default()
        };
        let failed =
            tokio::time::timeout(Duration::from_secs(20), McpClient::connect(target, options))
                .await
                .expect("connect gives up by itself");
        let message = failed.err().expect("no MCP server there").to_string();
        assert!(
            message.contains("did not initialize"),
            "{script}: {message}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_tools_keep_their_server_until_the_engine_is_dropped() {
    // Started under a name of its own, so the test above, which kills every `mcp_server`
    // child, leaves this one alone.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("held_server");
    std::os::unix::fs::symlink(example_server(), &program).unwrap();
    let target = McpTarget::Command {
        command: vec![program.display().to_string()],
        env: BTreeMap::new(),
        cwd: None,
    };
    let local = Arc::new(Engine::new());
    let client = McpClient::connect(target, McpClientOptions::default())
        .await
        .unwrap();
    client.register(&local).await.unwrap();
    drop(client);
    let out = local
        .run(
            vec![Call::new("1", "add", json!({"a": 2, "b": 3}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert_eq!(
        out.results[0].envelope.data(),
        Some(&json!({"sum": 5})),
        "the engine's tools hold their connection: {:?}",
        out.results[0].envelope
    );
    assert_eq!(children_named("held_server").len(), 1);

    drop(local);
    let mut left = children_named("held_server");
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = children_named("held_server");
    }
    assert!(
        left.is_empty(),
        "with no engine and no handle, the command is stopped"
    );
}
