//! OpenAPI documents into tools that call the described endpoints, against a local HTTP
//! server: parameters in path, query and headers, JSON bodies with component schemas (3.0's
//! `nullable`), credentials from the caller (never from the model), the API's errors as
//! envelopes, what is skipped and why, and documents that are refused.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tooljig::import::openapi::{Credentials, OpenApiOptions};
use tooljig::*;

/// What the server saw of each request: method, target, lowercased headers, body.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A tiny HTTP/1.1 server: echoes each request as JSON; `/v1/pets/missing` answers 404 and
/// `/v1/pets/busy` 503.
async fn server() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body) = loop {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        while buf.len() < end + 4 + length {
                            let n = socket.read(&mut chunk).await.unwrap_or(0);
                            if n == 0 {
                                break;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                        }
                        break (head, buf[end + 4..].to_vec());
                    }
                };
                let mut lines = head.lines();
                let mut first = lines.next().unwrap_or("").split(' ');
                let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
                let headers: serde_json::Map<String, Value> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), json!(v.trim())))
                    .collect();
                let seen = json!({
                    "method": method,
                    "target": target,
                    "headers": headers,
                    "body": serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
                });
                log.lock().unwrap().push(seen.clone());
                let (status, answer) = match target {
                    "/v1/pets/missing" => ("404 Not Found", json!({"message": "no such pet"})),
                    "/v1/pets/busy" => ("503 Service Unavailable", json!({"message": "later"})),
                    _ => ("200 OK", seen),
                };
                let text = answer.to_string();
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}

fn petstore() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": "/v1"}],
        "paths": {
            "/pets/{petId}": {
                "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The pet."}],
                "get": {
                    "operationId": "showPetById",
                    "summary": "Info for a pet",
                    "parameters": [
                        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                        {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}}
                    ]
                }
            },
            "/pets": {
                "post": {
                    "operationId": "createPet",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
                }
            },
            "/files": {"get": {"summary": "Lists files"}},
            "/upload": {"post": {"operationId": "upload", "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"type": "object"}}}}}}
        },
        "components": {"schemas": {
            "Pet": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "nullable": true},
                "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}
            }}
        }}
    })
}

fn options(base: &str) -> OpenApiOptions {
    OpenApiOptions {
        base_url: Some(base.into()),
        credentials: Some(Credentials {
            attribute: "pets_token".into(),
            header: "Authorization".into(),
            scheme: None,
        }),
        headers: [("X-Api-Version".to_string(), "2026-11".to_string())].into(),
        ..OpenApiOptions::default()
    }
}

fn ana() -> Caller {
    let mut c = Caller::principal("ana");
    c.attributes.insert("pets_token".into(), json!("s3cret"));
    c
}

async fn call(engine: &Engine, caller: Caller, tool: &str, args: Value) -> CallResult {
    let out = engine
        .run(
            vec![Call::new("c", tool, args)],
            caller,
            BatchOptions::default(),
        )
        .await;
    out.results.into_iter().next().unwrap()
}

fn failure(r: &CallResult) -> &ToolError {
    match &r.envelope {
        Envelope::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_become_tools_that_call_the_api() {
    let (base, seen) = server().await;
    let engine = Engine::new();
    let report = engine
        .register_openapi(&petstore(), &options(&base))
        .unwrap();
    assert_eq!(report.registered, ["showPetById", "createPet", "get_files"]);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].operation, "POST /upload");
    assert!(
        report.skipped[0].reason.contains("multipart/form-data"),
        "{:?}",
        report.skipped
    );

    let specs = engine.specs();
    let show = &specs[0];
    assert_eq!(show.description, "Info for a pet");
    let props = show.input_schema["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        ["petId", "verbose", "tags", "X-Request-Id"],
        "no Authorization, no cookie: never the model's"
    );
    assert_eq!(show.input_schema["required"], json!(["petId"]));
    assert_eq!(props["petId"]["description"], "The pet.");
    assert_eq!(show.policy.effect, policy::Effect::Read);
    assert_eq!(specs[1].policy.effect, policy::Effect::External);
    assert_eq!(
        specs[1].input_schema["$defs"]["Pet"]["properties"]["name"]["type"],
        json!(["string", "null"])
    );

    // Path, query and header arguments; credentials from the caller; a hostile path segment
    // stays one segment.
    let r = call(
        &engine,
        ana(),
        "showPetById",
        json!({"petId": "../admin", "verbose": true, "tags": ["a b", "c"], "X-Request-Id": "r-1"}),
    )
    .await;
    let Envelope::Ok(echo) = &r.envelope else {
        panic!("{:?}", r.envelope)
    };
    assert_eq!(echo["method"], "GET");
    assert_eq!(
        echo["target"],
        "/v1/pets/%2E%2E%2Fadmin?verbose=true&tags=a+b&tags=c"
    );
    assert_eq!(echo["headers"]["authorization"], "Bearer s3cret");
    assert_eq!(echo["headers"]["x-request-id"], "r-1");
    assert_eq!(echo["headers"]["x-api-version"], "2026-11");

    // A JSON body, validated against the component schema before anything is sent.
    let created = call(
        &engine,
        ana(),
        "createPet",
        json!({"body": {"name": null, "age": 2}}),
    )
    .await;
    let Envelope::Ok(echo) = &created.envelope else {
        panic!("{:?}", created.envelope)
    };
    assert_eq!(
        (echo["method"].as_str(), &echo["body"]),
        (Some("POST"), &json!({"name": null, "age": 2}))
    );
    let sent = seen.lock().unwrap().len();
    let bad = call(
        &engine,
        ana(),
        "createPet",
        json!({"body": {"name": "x", "age": 0}}),
    )
    .await;
    assert_eq!(
        failure(&bad).code,
        ErrorCode::InvalidArguments,
        "exclusiveMinimum 0"
    );
    let smuggled = call(
        &engine,
        ana(),
        "showPetById",
        json!({"petId": "1", "Authorization": "Bearer mine"}),
    )
    .await;
    assert_eq!(failure(&smuggled).code, ErrorCode::InvalidArguments);
    let split = call(
        &engine,
        ana(),
        "showPetById",
        json!({"petId": "1", "X-Request-Id": "r\r\nX-Admin: yes"}),
    )
    .await;
    assert_eq!(
        failure(&split).code,
        ErrorCode::InvalidArguments,
        "no header splitting"
    );
    let anonymous = call(
        &engine,
        Caller::principal("bob"),
        "showPetById",
        json!({"petId": "1"}),
    )
    .await;
    let e = failure(&anonymous);
    assert_eq!(
        (e.code, e.details["reason"].as_str()),
        (ErrorCode::PermissionDenied, Some("missing_credentials"))
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        sent,
        "nothing refused reached the API"
    );

    // The API's errors, as the model sees them.
    let missing = call(&engine, ana(), "showPetById", json!({"petId": "missing"})).await;
    let e = failure(&missing);
    assert_eq!((e.code, e.retryable), (ErrorCode::ExternalApiError, false));
    assert_eq!(e.details["status"], 404);
    assert_eq!(e.details["answer"], json!({"message": "no such pet"}));
    let busy = call(&engine, ana(), "showPetById", json!({"petId": "busy"})).await;
    assert!(failure(&busy).retryable, "a 503 is worth retrying");

    let files = call(&engine, ana(), "get_files", json!({})).await;
    assert!(files.envelope.is_ok(), "{:?}", files.envelope);
}

#[tokio::test]
async fn documents_that_cannot_be_carried_are_refused_whole() {
    let engine = Engine::new();
    let swagger = json!({"swagger": "2.0", "paths": {}});
    let e = engine
        .register_openapi(&swagger, &OpenApiOptions::default())
        .unwrap_err();
    assert!(e.message.contains("OpenAPI 3.0 or 3.1"), "{e}");
    let relative = engine
        .register_openapi(&petstore(), &OpenApiOptions::default())
        .unwrap_err();
    assert!(relative.message.contains("give `base_url`"), "{relative}");
    let only = OpenApiOptions {
        include: Some(vec!["createPet".into()]),
        prefix: "pets_".into(),
        base_url: Some("https://pets.example/v1".into()),
        ..OpenApiOptions::default()
    };
    let report = engine.register_openapi(&petstore(), &only).unwrap();
    assert_eq!(report.registered, ["pets_createPet"]);
    // The same operations again: refused at registration, reported, nothing half-registered.
    let again = engine.register_openapi(&petstore(), &only).unwrap();
    assert!(again.registered.is_empty());
    assert!(
        again.skipped[0].reason.contains("pets_createPet"),
        "{:?}",
        again.skipped
    );
}
