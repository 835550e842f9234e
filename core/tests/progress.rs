//! Progress and preliminary results: what a handler reports while it runs reaches the batch's
//! events, the agent's UI stream and MCP clients that asked; the final result alone is
//! validated and audited.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, NumberOrString,
    ProgressNotificationParam, ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tooljig::mcp::{McpServeOptions, McpServer};
use tooljig::{
    BatchOptions, Call, Caller, Engine, Event, MemoryAudit, Tool, ToolSpec, handler_fn,
    stream_handler_fn,
};

/// `count` reports three fractions and a partial list, then answers the full list (its
/// output schema wants three items: the partials would fail it).
fn engine(audit: Arc<MemoryAudit>) -> Arc<Engine> {
    let engine = Arc::new(Engine::new().with_audit(audit));
    let spec = |name: &str| {
        ToolSpec::from_value(json!({
            "name": name, "description": "Counts.", "input_schema": {"type": "object"},
            "output_schema": {"type": "array", "minItems": 3}
        }))
        .unwrap()
    };
    engine
        .register(Tool::new(
            spec("count"),
            handler_fn(|_args, ctx| async move {
                for (i, message) in ["one", "two", "three"].iter().enumerate() {
                    ctx.progress
                        .report(Some((i + 1) as f64 / 3.0), Some(message.to_string()));
                }
                ctx.progress.partial(json!([1]));
                Ok(json!([1, 2, 3]))
            }),
        ))
        .unwrap();
    engine
        .register(Tool::new(
            spec("stream"),
            stream_handler_fn(|_args, _ctx| {
                futures::stream::iter([json!([1]), json!([1, 2]), json!([1, 2, 3])].map(Ok))
            }),
        ))
        .unwrap();
    // Reports, waits, reports again: its batch is still running when the first is heard.
    engine
        .register(Tool::new(
            spec("slow"),
            handler_fn(|_args, ctx| async move {
                ctx.progress.report(Some(0.5), Some("half".into()));
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                ctx.progress.report(Some(1.0), Some("done".into()));
                Ok(json!([1, 2, 3]))
            }),
        ))
        .unwrap();
    engine
}

#[tokio::test]
async fn reports_reach_the_events_and_only_the_result_is_checked_and_audited() {
    let audit = Arc::new(MemoryAudit::new());
    let engine = engine(audit.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (progress_tx, progress_rx) = tokio::sync::mpsc::unbounded_channel();
    let options = BatchOptions {
        events: Some(tx),
        progress: Some(progress_tx),
        ..Default::default()
    };
    let calls = vec![
        Call::new("a", "count", json!({})),
        Call::new("b", "stream", json!({})),
    ];
    let out = engine.run(calls, Caller::default(), options).await;
    assert_eq!(
        out.get("a").unwrap().envelope.data(),
        Some(&json!([1, 2, 3]))
    );
    assert_eq!(
        out.get("b").unwrap().envelope.data(),
        Some(&json!([1, 2, 3]))
    );
    let events: Vec<Event> = tokio_stream_of(rx).await;
    let progress = |id: &str| -> Vec<(Option<f64>, Option<String>, Option<Value>)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::CallProgress {
                    call_id,
                    fraction,
                    message,
                    output,
                    ..
                } if call_id == id => Some((*fraction, message.clone(), output.clone())),
                _ => None,
            })
            .collect()
    };
    let a = progress("a");
    assert_eq!(a.len(), 4);
    assert_eq!(a[2], (Some(1.0), Some("three".into()), None));
    assert_eq!(a[3], (None, None, Some(json!([1]))));
    let b: Vec<Value> = progress("b").into_iter().filter_map(|p| p.2).collect();
    assert_eq!(b, [json!([1]), json!([1, 2]), json!([1, 2, 3])]);
    // The progress listener hears the reports and nothing else of the batch.
    let reports = tokio_stream_of(progress_rx).await;
    let in_events: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::CallProgress { .. }))
        .collect();
    assert_eq!(reports.len(), 7);
    assert_eq!(reports.iter().collect::<Vec<_>>(), in_events);
    // Each progress event comes before its call's result.
    let finished = events
        .iter()
        .position(|e| matches!(e, Event::CallFinished { result, .. } if result.call_id == "a"))
        .unwrap();
    let last_progress = events
        .iter()
        .rposition(|e| matches!(e, Event::CallProgress { call_id, .. } if call_id == "a"))
        .unwrap();
    assert!(last_progress < finished);
    // One audit record per call, of the result.
    assert_eq!(audit.records().len(), 2);
    // Without listeners, reporting is a no-op.
    let quiet = engine
        .run(
            vec![Call::new("a", "count", json!({}))],
            Caller::default(),
            BatchOptions::default(),
        )
        .await;
    assert!(quiet.results[0].envelope.is_ok());
}

async fn tokio_stream_of(mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Some(e) = rx.recv().await {
        out.push(e);
    }
    out
}

/// rmcp's client, keeping the progress notifications it hears.
#[derive(Clone, Default)]
struct Listening(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl Listening {
    /// Forgets what was heard, then calls `tool`, which must succeed.
    async fn call_afresh(&self, peer: &rmcp::Peer<RoleClient>, tool: &'static str) {
        self.0.lock().unwrap().clear();
        let out = peer
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .unwrap();
        assert_eq!(out.is_error, Some(false), "{tool}: {out:?}");
    }

    /// What was heard, once it is `n` notifications or two seconds have passed: rmcp's client
    /// hands each notification to its own task, so they may be heard out of order, and the
    /// last may still be on its way when the result is.
    async fn at_least(&self, n: usize) -> Vec<ProgressNotificationParam> {
        for _ in 0..200 {
            if self.0.lock().unwrap().len() >= n {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.0.lock().unwrap().clone()
    }
}

impl ClientHandler for Listening {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("test", "1"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_that_asks_hears_progress_before_the_result() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let engine = engine(Arc::new(MemoryAudit::new()));
    let server = McpServer::new(engine, McpServeOptions::default())
        .serve_http()
        .await
        .unwrap();
    let heard = Listening::default();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url().to_string());
    let client = heard
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let mut params = CallToolRequestParams::new("count");
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    params.meta = Some(meta);
    let result = client.peer().call_tool(params).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let notes = heard.at_least(3).await;
    // What each carries shows they were sent in order, never decreasing.
    let mut seen: Vec<(f64, Option<f64>, Option<String>)> = notes
        .iter()
        .map(|n| (n.progress, n.total, n.message.clone()))
        .collect();
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    let messages: Vec<_> = seen.iter().map(|s| s.2.clone().unwrap()).collect();
    assert_eq!(messages, ["one", "two", "three"], "{seen:?}");
    assert_eq!(seen[2], (1.0, Some(1.0), Some("three".into())));
    // rmcp's client puts a token of its own in each request; the server answers with it.
    assert!(
        notes
            .windows(2)
            .all(|w| w[0].progress_token == w[1].progress_token)
    );
    // A handler still running after its first report: the reports are forwarded while it
    // runs, all before the result.
    heard.call_afresh(client.peer(), "slow").await;
    let mut slow_notes: Vec<(f64, Option<String>)> = heard
        .at_least(2)
        .await
        .iter()
        .map(|n| (n.progress, n.message.clone()))
        .collect();
    slow_notes.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        slow_notes,
        [(0.5, Some("half".into())), (1.0, Some("done".into()))]
    );
    // A client that did not ask hears nothing.
    heard.call_afresh(client.peer(), "stream").await;
    assert!(heard.0.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
    server.stop().await;
}

#[test]
fn partial_outputs_are_preliminary_tool_outputs_in_the_ui_stream() {
    use tooljig::stream::StreamEvent;
    use tooljig::stream::ui_message_stream::UiMessageStream;
    let mut ui = UiMessageStream::new("m1");
    let chunks: Vec<Value> = [
        StreamEvent::ToolProgress {
            call_id: "c".into(),
            tool: "count".into(),
            fraction: Some(0.5),
            message: Some("half".into()),
            output: None,
        },
        StreamEvent::ToolProgress {
            call_id: "c".into(),
            tool: "count".into(),
            fraction: None,
            message: None,
            output: Some(json!([1])),
        },
    ]
    .iter()
    .flat_map(|e| ui.chunks(e))
    .collect();
    assert_eq!(chunks[0]["type"], "tool-input-available");
    assert_eq!(chunks[1]["type"], "data-tooljig-progress");
    assert_eq!(chunks[1]["id"], "progress-c");
    assert_eq!(chunks[1]["data"]["fraction"], 0.5);
    assert_eq!(
        chunks[2],
        json!({"type": "tool-output-available", "toolCallId": "c", "output": [1], "preliminary": true})
    );
}
