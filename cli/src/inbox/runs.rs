//! `/runs/{id}`: a run's timeline: its calls with their latest results, then its step log;
//! and its *Resume* and *Roll back* buttons, which leave an operator request the app's
//! workers carry out (`Engine::ask_operator`), as `tooljig resume` and `tooljig rollback` do.

use super::html::{self, attr, esc};
use super::state::Inbox;
use crate::output::refused;
use axum::extract::{Extension, Form, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;
use tooljig::{Caller, OperatorAction, OperatorRequest, RequestState};

/// How long the page waits for a worker's answer unless the form says otherwise, and the most
/// it may say.
const WAIT: Duration = Duration::from_secs(20);
const MOST_WAIT: Duration = Duration::from_secs(120);

/// `GET /runs/{id}`.
pub async fn page(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let run = match inbox.engine.run_record(&id).await {
        Ok(Some(run)) => run,
        Ok(None) => return (StatusCode::NOT_FOUND, "no such run").into_response(),
        Err(e) => return html::failure(&e.message),
    };
    let mut body = html::head(&format!("Run {id}"));
    let state = serde_json::to_value(run.state).unwrap_or_default();
    let _ = write!(
        body,
        "<p>state <b>{}</b> · passes {}</p><table><tr><th>call<th>tool<th>status<th>envelope</tr>",
        esc(state.as_str().unwrap_or_default()),
        run.passes
    );
    for r in &run.results {
        let status = serde_json::to_value(r.status).unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td>{}<td>{}<td>{}<td><code>{}</code></tr>",
            esc(&r.call_id),
            esc(&r.tool),
            esc(status.as_str().unwrap_or_default()),
            html::json(&r.envelope.to_value())
        );
    }
    body.push_str(
        "</table><h2>Timeline</h2><table id=timeline>\
         <tr><th>after<th>pass<th>step<th>call<th>what happened<th>detail</tr>",
    );
    let start = run.steps.first().map_or(0, |s| s.at_ms);
    for step in &run.steps {
        let _ = write!(
            body,
            "<tr><td>+{} ms<td>{}<td>{}<td>{}<td>{}<td><details><summary>JSON</summary><code>{}</code></details></tr>",
            step.at_ms.saturating_sub(start),
            step.pass,
            esc(&step.what),
            esc(step.call_id.as_deref().unwrap_or_default()),
            esc(&happened(&step.detail)),
            html::json(&step.detail)
        );
    }
    body.push_str("</table>");
    let _ = write!(
        body,
        "<form id=\"operate\" method=post action=\"/runs/{run}/operate\">\
         <input type=hidden name=csrf value=\"{csrf}\">\
         <button name=action value=resume>Resume</button>\
         <button name=action value=rollback>Roll back</button> \
         carried out by the app's own worker, with its handlers and compensations</form>",
        run = attr(&id),
        csrf = attr(&inbox.csrf_for(&operator)),
    );
    Html(body).into_response()
}

/// The *Resume* / *Roll back* form.
#[derive(Deserialize)]
pub struct Operate {
    csrf: String,
    action: String,
    /// How long to wait for a worker's answer (default 20 s, at most 120 s).
    #[serde(default)]
    wait_ms: Option<u64>,
}

/// `POST /runs/{id}/operate`: asks the app's workers to resume or roll back the run, waits for
/// the answer and shows it. A request no worker took in time is withdrawn (it never runs later
/// by surprise), and the page says to start the app's worker.
pub async fn operate(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Path(id): Path<String>,
    Form(form): Form<Operate>,
) -> Response {
    if let Err(refusal) = inbox.check_form(&operator, &form.csrf) {
        return refusal;
    }
    let action = match form.action.as_str() {
        "resume" => OperatorAction::Resume,
        "rollback" => OperatorAction::Rollback,
        other => {
            let why = format!("unknown action {other:?}: resume or rollback");
            return (StatusCode::BAD_REQUEST, why).into_response();
        }
    };
    let engine = &inbox.engine;
    let asked = engine
        .ask_operator(action, &id, None, operator.principal.as_deref())
        .await;
    let request = match asked {
        Ok(request) => request,
        Err(e) => return (StatusCode::NOT_FOUND, esc(&refused(e)).to_string()).into_response(),
    };
    let wait = form
        .wait_ms
        .map_or(WAIT, Duration::from_millis)
        .min(MOST_WAIT);
    match engine.wait_operator_request(&request.id, wait).await {
        Ok(answered) => answer(&id, &answered, wait),
        Err(e) => html::failure(&refused(e)),
    }
}

/// The page of a request's outcome: what the worker did, or why nothing was done.
fn answer(run: &str, request: &OperatorRequest, waited: Duration) -> Response {
    let what = match request.action {
        OperatorAction::Resume => "Resume",
        OperatorAction::Rollback => "Roll back",
    };
    let mut body = html::head(&format!("{what} run {run}"));
    let worker = esc(request.worker.as_deref().unwrap_or("?")).to_string();
    let status = match (&request.state, &request.error) {
        (RequestState::Queued, _) => {
            let _ = write!(
                body,
                "<p class=refused id=outcome>No app worker took the request within {} s, so it \
                 was withdrawn: start the app with its operator-request worker \
                 (<code>serve_operator_requests</code>) on the same store.</p>",
                waited.as_secs_f64()
            );
            StatusCode::SERVICE_UNAVAILABLE
        }
        (RequestState::Taken, _) => {
            let _ = write!(
                body,
                "<p id=outcome>Worker <b>{worker}</b> is still carrying it out; this run's \
                 page shows how far it got.</p>"
            );
            StatusCode::ACCEPTED
        }
        (RequestState::Answered, Some(e)) => {
            let _ = write!(
                body,
                "<p class=refused id=outcome>Worker <b>{worker}</b> refused: {}</p>",
                esc(&refused(e.clone()))
            );
            StatusCode::CONFLICT
        }
        (RequestState::Answered, None) => {
            let result = request.result.clone().unwrap_or(Value::Null);
            let done = match request.action {
                OperatorAction::Resume => "resumed",
                OperatorAction::Rollback => "rolled back",
            };
            let _ = write!(
                body,
                "<p id=outcome>Run {done} by worker <b>{worker}</b>.</p><table id=answer>"
            );
            let (rows, cells, headers) = match request.action {
                OperatorAction::Resume => (
                    "results",
                    ["call_id", "tool", "status", "envelope"],
                    "<tr><th>call<th>tool<th>status<th>envelope</tr>",
                ),
                OperatorAction::Rollback => (
                    "entries",
                    ["call_id", "tool", "outcome", "message"],
                    "<tr><th>call<th>tool<th>outcome<th>what happened</tr>",
                ),
            };
            body.push_str(headers);
            for row in result[rows].as_array().into_iter().flatten() {
                body.push_str("<tr>");
                for key in cells {
                    let cell = match &row[key] {
                        Value::String(s) => esc(s).to_string(),
                        Value::Null => String::new(),
                        other => format!("<code>{}</code>", html::json(other)),
                    };
                    let _ = write!(body, "<td>{cell}");
                }
                body.push_str("</tr>");
            }
            body.push_str("</table>");
            StatusCode::OK
        }
    };
    let _ = write!(
        body,
        "<p><a href=\"/runs/{}\">Back to the run</a></p>",
        attr(run)
    );
    (status, Html(body)).into_response()
}

/// One line for a step's detail: the call's status and code, and its approval's status, who
/// decided and why.
fn happened(detail: &Value) -> String {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let approval = detail.get("approval").unwrap_or(&Value::Null);
    let decided = text(approval, "decided_by").map(|by| format!("by {by}"));
    [
        text(detail, "status"),
        text(detail, "code"),
        text(approval, "status").map(|s| format!("approval {s}")),
        decided,
        text(approval, "reason").map(|r| format!("({r})")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ")
}
