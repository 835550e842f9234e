//! `tooljig resume` and `tooljig rollback`: the command asks, the app's worker (in this test's
//! process, with the handlers) carries it out, the command prints the answer; without a
//! worker the request is withdrawn and the command fails in one line.

mod support;

use serde_json::{Value, json};
use std::process::{Command, Output};
use std::sync::atomic::Ordering;
use tooljig::*;

fn tooljig(store: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tooljig"))
        .args(args)
        .env("TOOLJIG_STORE", store)
        .env_remove("TOOLJIG_AUDIT")
        .env_remove("TOOLJIG_SEAL_KEY")
        .output()
        .expect("the binary runs")
}

/// One line on stderr, exit code 1.
fn failed(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

/// Runs `args` on a blocking thread, so the worker on this runtime keeps serving meanwhile.
async fn tooljig_async(store: &str, args: &[&str]) -> Output {
    let store = store.to_string();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tooljig(&store, &args)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_resumes_and_rolls_back_through_the_apps_worker() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("store.db").display());
    let transfers = support::transfer_app(&store).await;
    let (app, run_id) = (transfers.engine.clone(), transfers.run_id.clone());

    // No worker yet: the command gives up, withdraws the request and says what to start.
    let none = tooljig_async(&store, &["resume", &run_id, "--wait-ms", "300"]).await;
    assert!(failed(&none).contains("no app worker took request"));
    assert!(failed(&tooljig(&store, &["resume", "nope"])).contains("not_found"));

    support::approve(&transfers).await;
    let stop = CancellationToken::new();
    let serving = {
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move { app.serve_operator_requests("app-1", stop).await })
    };
    let resumed = tooljig_async(&store, &["resume", &run_id, "--as", "olga", "--json"]).await;
    assert!(resumed.status.success(), "{resumed:?}");
    let answer: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(answer["state"], "answered", "{answer}");
    assert_eq!(answer["worker"], "app-1");
    assert_eq!(answer["asked_by"], "olga");
    assert_eq!(
        answer["result"]["results"][0]["envelope"]["ok"], true,
        "{answer}"
    );
    assert_eq!(transfers.sent.load(Ordering::SeqCst), 1);
    // The run the command shows afterwards is finished, and resuming again runs nothing.
    let again = tooljig_async(&store, &["resume", &run_id]).await;
    assert!(again.status.success(), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stdout).contains("resumed by worker app-1"));
    assert_eq!(transfers.sent.load(Ordering::SeqCst), 1);

    let rolled = tooljig_async(&store, &["rollback", &run_id]).await;
    assert!(rolled.status.success(), "{rolled:?}");
    let text = String::from_utf8_lossy(&rolled.stdout);
    assert!(
        text.contains("rolled back by worker app-1") && text.contains("compensated"),
        "{text}"
    );
    assert_eq!(
        *transfers.undone.lock().unwrap(),
        vec![json!({"transfer": "t-40"})]
    );
    // A call the run does not have: the engine's refusal is the command's one-line failure.
    let wrong = tooljig_async(&store, &["rollback", &run_id, "--call", "zz"]).await;
    assert!(failed(&wrong).contains("worker app-1"));

    stop.cancel();
    serving.await.unwrap();
}
