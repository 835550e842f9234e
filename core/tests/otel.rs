//! Spans over OTLP, received by an in-process collector that decodes the real protobuf
//! (`opentelemetry-proto`): a span per batch and per call with the call's outcome, the
//! caller's `traceparent` as the batch's parent, kept across a suspend and a resume.
//!
//! One test: the exporter is the process's global subscriber, installed once.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tooljig::otel::{OtlpOptions, export};
use tooljig::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// Received exports: the content type and the body of each.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP collector on a free port: answers 200 to every POST and keeps its body.
async fn collector() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let keep = received.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let keep = keep.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let end = loop {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break end;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let header = |name: &str| {
                        head.lines()
                            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
                            .unwrap_or_default()
                    };
                    let length: usize = header("content-length:").parse().unwrap_or(0);
                    while buf.len() < end + 4 + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = buf[end + 4..end + 4 + length].to_vec();
                    keep.lock().unwrap().push((header("content-type:"), body));
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), received)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attrs(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.clone()) {
                Some(AnyValue::StringValue(s)) => s,
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), v)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_calls_are_spans_under_the_callers_trace_across_a_resume() {
    let (endpoint, received) = collector().await;
    let exporting = export(&OtlpOptions {
        endpoint: endpoint.clone(),
        protocol: None,
        service_name: Some("tooljig-test".into()),
        headers: [("x-collector-key".to_string(), "k".to_string())].into(),
    })
    .unwrap();
    let again = export(&OtlpOptions {
        endpoint,
        protocol: None,
        service_name: None,
        headers: Default::default(),
    });
    assert!(
        again
            .err()
            .unwrap_or_default()
            .contains("already installed")
    );

    let engine = Engine::new();
    engine
        .register(Tool::from_fn(
            "echo",
            "Echoes.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    engine
        .register(
            Tool::from_fn(
                "pay",
                "Pays.",
                json!({"type": "object"}),
                |_, _| async move { Ok(json!({"paid": true})) },
            )
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let options = BatchOptions {
        traceparent: Some(traceparent),
        ..BatchOptions::default()
    };
    let alice = Caller::principal("alice");
    let first = engine
        .run(
            vec![
                Call::new("ok", "echo", json!({"n": 1})),
                Call::new("bad", "echo", json!({"n": "one"})),
            ],
            alice.clone(),
            options.clone(),
        )
        .await;
    assert!(first.get("ok").unwrap().envelope.is_ok());

    let suspended = engine
        .run(
            vec![Call::new("p", "pay", json!({}))],
            alice.clone(),
            options,
        )
        .await;
    let p = suspended.get("p").unwrap();
    assert_eq!(p.status, CallStatus::PendingApproval);
    let approval = p.approval.clone().unwrap();
    engine
        .decide(
            approval.id.as_deref().unwrap(),
            Decision::Approve {
                arguments_hash: approval.arguments_hash.clone(),
                remember: None,
            },
            &alice, // with no approver roles, the asker confirms
        )
        .await
        .unwrap();
    // Resumed with no trace of its own: the run's is kept.
    let resumed = engine
        .resume(suspended.run_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        resumed.get("p").unwrap().envelope,
        Envelope::Ok(json!({"paid": true}))
    );
    exporting.flush().unwrap();

    let exports = received.lock().unwrap().clone();
    assert!(!exports.is_empty(), "the collector received nothing");
    let mut spans = Vec::new();
    for (content_type, body) in &exports {
        assert_eq!(content_type, "application/x-protobuf");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for rs in request.resource_spans {
            let resource = rs.resource.unwrap_or_default();
            let service = resource
                .attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.clone()?.value);
            assert_eq!(service, Some(AnyValue::StringValue("tooljig-test".into())));
            spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    let batches: Vec<&Span> = spans.iter().filter(|s| s.name == "tooljig.batch").collect();
    let calls: Vec<&Span> = spans.iter().filter(|s| s.name == "tooljig.call").collect();
    assert_eq!(batches.len(), 3, "two batches and the resume: {spans:#?}");
    for b in &batches {
        assert_eq!(hex(&b.trace_id), TRACE, "under the caller's trace");
        assert_eq!(hex(&b.parent_span_id), PARENT);
    }
    let by_call = |id: &str| {
        calls
            .iter()
            .map(|s| (*s, attrs(s)))
            .filter(|(_, a)| a.get("tooljig.call_id").map(String::as_str) == Some(id))
            .collect::<Vec<_>>()
    };
    let (ok_span, ok) = by_call("ok").pop().unwrap();
    assert_eq!(ok["tooljig.tool"], "echo");
    assert_eq!(ok["tooljig.outcome"], "ok");
    assert_eq!(ok["tooljig.attempts"], "1");
    assert_eq!(
        (
            ok["tooljig.cached"].as_str(),
            ok["tooljig.replayed"].as_str()
        ),
        ("false", "false")
    );
    assert_eq!(hex(&ok_span.trace_id), TRACE);
    assert!(
        batches.iter().any(|b| b.span_id == ok_span.parent_span_id),
        "a call's span is under its batch's"
    );
    let (_, bad) = by_call("bad").pop().unwrap();
    assert_eq!(
        (
            bad["tooljig.outcome"].as_str(),
            bad["tooljig.code"].as_str()
        ),
        ("error", "invalid_arguments")
    );
    let paid = by_call("p");
    let outcomes: Vec<&str> = paid
        .iter()
        .map(|(_, a)| a["tooljig.outcome"].as_str())
        .collect();
    assert_eq!(outcomes.len(), 2, "asked, then ran after the resume");
    assert!(outcomes.contains(&"pending_approval") && outcomes.contains(&"ok"));
    for (s, _) in &paid {
        assert_eq!(hex(&s.trace_id), TRACE, "the resume stays in the trace");
    }
}
