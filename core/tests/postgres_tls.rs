//! TLS to PostgreSQL, against the real server (which serves TLS with its own certificate):
//! `sslmode=require` encrypts, `verify-full` against the server's certificate as root holds
//! for the name it was issued to and refuses another, `verify-ca` checks the chain only, an
//! untrusted certificate is refused; the store, the audit sink and the wake-up connection all
//! go over it. The server side (`pg_stat_ssl`) says which connections were encrypted.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::NoTls;
use tooljig::store::{Expect, Namespace, StoreError};
use tooljig::*;

#[path = "support/postgres.rs"]
mod postgres;

/// The server's certificate file when it serves TLS and the file is readable here (the test
/// machine's server uses Debian's snakeoil certificate, issued to `localhost`); `None` (the
/// test skips, a failure under CI=true) otherwise.
async fn server_certificate() -> Option<String> {
    let (client, conn) = tokio_postgres::connect(&postgres::base_url(), NoTls)
        .await
        .ok()?;
    tokio::spawn(conn);
    let ssl: String = client.query_one("SHOW ssl", &[]).await.ok()?.get(0);
    let file: String = client
        .query_one("SHOW ssl_cert_file", &[])
        .await
        .ok()?
        .get(0);
    let usable = ssl == "on" && std::fs::metadata(&file).is_ok();
    if !usable {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the PostgreSQL server serves no TLS (ssl = {ssl}) or its certificate {file} is not readable, under CI=true"
        );
        eprintln!("skipped: the PostgreSQL server serves no TLS, or {file} is not readable");
        return None;
    }
    Some(file)
}

/// Whether every connection named `app` was encrypted (and there was one).
async fn encrypted(app: &str) -> bool {
    let (client, conn) = tokio_postgres::connect(&postgres::base_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let rows = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    !rows.is_empty() && rows.iter().all(|r| r.get::<_, bool>(0))
}

/// `scratch`'s URL with `host` in place of 127.0.0.1 and `params` added.
fn url(scratch: &postgres::Scratch, host: &str, params: &str) -> String {
    scratch.url.replace("127.0.0.1", host) + "&" + params
}

async fn round_trip(store: &dyn StateStore) -> Result<(), StoreError> {
    let key = uuid::Uuid::new_v4().to_string();
    store
        .put(Namespace::Run, &key, Expect::Absent, json!({"k": 1}), None)
        .await?;
    let got = store.get(Namespace::Run, &key).await?;
    assert_eq!(got.unwrap().value, json!({"k": 1}));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_encrypted_and_certificates_checked_as_sslmode_asks() {
    let Some(scratch) = postgres::Scratch::new("tls").await else {
        return;
    };
    if !postgres::base_url().contains("127.0.0.1") {
        eprintln!("skipped: the test names the server by 127.0.0.1 and localhost");
        return;
    }
    let Some(cert) = server_certificate().await else {
        return;
    };
    let app = |tag: &str| format!("tj_tls_{tag}_{}", uuid::Uuid::new_v4().simple());

    // Not asked: plain, as before.
    let plain = app("plain");
    let store = PostgresStore::open(&url(
        &scratch,
        "127.0.0.1",
        &format!("application_name={plain}"),
    ))
    .unwrap();
    round_trip(&store).await.unwrap();
    assert!(!encrypted(&plain).await);

    // require: encrypted, the certificate not checked (it is self-signed).
    let required = app("require");
    let store = PostgresStore::open(&url(
        &scratch,
        "127.0.0.1",
        &format!("sslmode=require&application_name={required}"),
    ))
    .unwrap();
    round_trip(&store).await.unwrap();
    assert!(encrypted(&required).await);

    // verify-full against the server's own certificate: holds for `localhost`, its name ...
    let full = app("full");
    let store = PostgresStore::open(&url(
        &scratch,
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={cert}&application_name={full}"),
    ))
    .unwrap();
    round_trip(&store).await.unwrap();
    assert!(encrypted(&full).await);
    // ... and the audit sink and the wake-up connection go over it too.
    let audit = PostgresAudit::open(
        &url(
            &scratch,
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={cert}&application_name={full}"),
        ),
        AuditOptions::default(),
    )
    .unwrap();
    let engine = Engine::new().with_audit(Arc::new(audit));
    engine
        .register(Tool::from_fn(
            "echo",
            "Echoes.",
            json!({"type": "object"}),
            |a, _| async move { Ok(a) },
        ))
        .unwrap();
    let out = engine
        .run(
            vec![Call::new("e", "echo", json!({}))],
            Caller::principal("ana"),
            BatchOptions::default(),
        )
        .await;
    assert!(out.results[0].envelope.is_ok());
    let sink = engine.audit().unwrap().clone();
    sink.flush().await.unwrap();
    assert_eq!(sink.verify().await.unwrap().records, 1);
    let bus = store.wake_bus().expect("a PostgreSQL store has a wake bus");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    bus.listen(Arc::new(move |topic: &str| {
        let _ = tx.send(topic.to_string());
    }));
    let heard = async {
        loop {
            bus.publish(vec!["tls-topic".into()]).await.unwrap();
            // The bus also says when it has subscribed (`EVERY_TOPIC`): wait for ours.
            while let Ok(Some(topic)) =
                tokio::time::timeout(Duration::from_millis(300), rx.recv()).await
            {
                if topic == "tls-topic" {
                    return topic;
                }
            }
        }
    };
    let topic = tokio::time::timeout(Duration::from_secs(10), heard)
        .await
        .expect("a wake-up heard over TLS");
    assert_eq!(topic, "tls-topic");
    assert!(encrypted(&full).await);

    // ... and is refused for a name it was not issued to.
    let wrong_name = PostgresStore::open(&url(
        &scratch,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={cert}"),
    ))
    .unwrap();
    let refused = round_trip(&wrong_name).await.unwrap_err();
    assert!(refused.0.contains("certificate"), "{}", refused.0);

    // verify-ca checks the chain, not the name.
    let ca = app("ca");
    let store = PostgresStore::open(&url(
        &scratch,
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={cert}&application_name={ca}"),
    ))
    .unwrap();
    round_trip(&store).await.unwrap();
    assert!(encrypted(&ca).await);

    // A certificate the given root did not sign is refused (a real root of the system's
    // bundle, which never signed this self-made certificate).
    let other_root = std::fs::read_dir("/usr/share/ca-certificates/mozilla")
        .ok()
        .and_then(|mut d| d.find_map(|e| e.ok().map(|e| e.path())));
    match other_root {
        Some(root) => {
            let untrusted = PostgresStore::open(&url(
                &scratch,
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={}", root.display()),
            ))
            .unwrap();
            let refused = round_trip(&untrusted).await.unwrap_err();
            assert!(refused.0.contains("certificate"), "{}", refused.0);
        }
        None => eprintln!("not checked: no other root certificate on this machine"),
    }

    // Mistakes are named when the store opens, before anything connects.
    for (params, says) in [
        ("sslmode=sometimes", "sslmode=sometimes"),
        (
            "sslmode=verify-full&sslrootcert=/no/such.pem",
            "/no/such.pem",
        ),
        ("sslmode=require&sslcert=c.pem", "client certificates"),
    ] {
        let e = PostgresStore::open(&url(&scratch, "localhost", params))
            .err()
            .unwrap();
        assert!(e.0.contains(says), "{params}: {}", e.0);
    }
}
