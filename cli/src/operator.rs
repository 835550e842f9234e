//! `tooljig resume` and `tooljig rollback`: requests the app's workers carry out, since only
//! they have the handlers and compensations (`Engine::ask_operator`).

use crate::args::Ask;
use crate::output::{cell, json, refused, table};
use serde_json::Value;
use std::time::Duration;
use tooljig::{Engine, OperatorAction, OperatorRequest, RequestState};

/// Asks for `action` on `run_id`, waits for a worker's answer and prints it. A failure when
/// the engine refused it, no worker took it in time (it is withdrawn), or the worker is
/// still at it when the wait ends.
pub async fn ask(
    engine: &Engine,
    action: OperatorAction,
    run_id: &str,
    call_id: Option<&str>,
    ask: &Ask,
    as_json: bool,
) -> Result<(), String> {
    let request = engine
        .ask_operator(action, run_id, call_id, ask.principal.as_deref())
        .await
        .map_err(refused)?;
    let wait = Duration::from_millis(ask.wait_ms);
    let answered = engine
        .wait_operator_request(&request.id, wait)
        .await
        .map_err(refused)?;
    if as_json {
        json(&answered)?;
    }
    match answered.state {
        RequestState::Queued => Err(format!(
            "no app worker took request {} within {} ms, so it was withdrawn: start the app \
             with its operator-request worker (serve_operator_requests) on the same store",
            answered.id, ask.wait_ms
        )),
        RequestState::Taken => Err(format!(
            "worker {} is still carrying out request {}; `tooljig run {run_id}` shows the run",
            answered.worker.as_deref().unwrap_or("?"),
            answered.id
        )),
        RequestState::Answered => answer(&answered, as_json),
    }
}

/// Prints what the worker did; the engine's refusal, if it refused, is the failure.
fn answer(request: &OperatorRequest, as_json: bool) -> Result<(), String> {
    let worker = request.worker.as_deref().unwrap_or("?");
    if let Some(e) = &request.error {
        return Err(format!("worker {worker}: {}", refused(e.clone())));
    }
    if as_json {
        return Ok(());
    }
    let result = request.result.clone().unwrap_or(Value::Null);
    match request.action {
        OperatorAction::Resume => {
            println!("run {} resumed by worker {worker}", request.run_id);
            let rows = rows(&result["results"], |r| {
                vec![
                    text(&r["call_id"]),
                    text(&r["tool"]),
                    cell(&r["status"], 18),
                    cell(&r["envelope"], 70),
                ]
            });
            table(&["CALL", "TOOL", "STATUS", "ENVELOPE"], &rows);
        }
        OperatorAction::Rollback => {
            println!("run {} rolled back by worker {worker}", request.run_id);
            let rows = rows(&result["entries"], |e| {
                vec![
                    text(&e["call_id"]),
                    text(&e["tool"]),
                    cell(&e["outcome"], 20),
                    cell(&e["message"], 70),
                ]
            });
            table(&["CALL", "TOOL", "OUTCOME", "WHAT HAPPENED"], &rows);
        }
    }
    Ok(())
}

fn rows(list: &Value, row: impl Fn(&Value) -> Vec<String>) -> Vec<Vec<String>> {
    list.as_array()
        .map(|items| items.iter().map(row).collect())
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    cell(v, 40)
}
