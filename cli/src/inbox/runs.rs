//! `/runs/{id}`: a run's timeline: its calls with their latest results, then its step log.

use super::html::{self, esc};
use super::state::Inbox;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;
use std::fmt::Write;
use std::sync::Arc;

/// `GET /runs/{id}`.
pub async fn page(State(inbox): State<Arc<Inbox>>, Path(id): Path<String>) -> Response {
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
    Html(body).into_response()
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
