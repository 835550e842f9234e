//! `/audit`: the newest records of the audit log, filtered, and the "verify chain" action.

use super::html::{self, attr, esc};
use super::state::Inbox;
use axum::extract::{Extension, Form, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use std::fmt::Write;
use std::sync::Arc;
use tooljig::Caller;

/// How many records the page shows.
const SHOWN: usize = 200;

/// The page's filters.
#[derive(Deserialize, Default)]
pub struct AuditFilter {
    principal: Option<String>,
    tool: Option<String>,
}

/// `GET /audit`.
pub async fn page(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Query(filter): Query<AuditFilter>,
) -> Response {
    let Some(sink) = inbox.engine.audit() else {
        return Html(
            html::head("Audit log") + "<p>No audit log was given (<code>--audit URL</code>).</p>",
        )
        .into_response();
    };
    let query = tooljig::AuditQuery {
        principal: filter.principal.clone().filter(|p| !p.is_empty()),
        tool: filter.tool.clone().filter(|t| !t.is_empty()),
        limit: Some(SHOWN),
        ..tooljig::AuditQuery::all()
    };
    let records = match sink.query(query).await {
        Ok(records) => records,
        Err(e) => return html::failure(&e.to_string()),
    };
    let mut body = html::head("Audit log");
    let _ = write!(
        body,
        "<form method=get><input name=principal placeholder=principal value=\"{}\">\
         <input name=tool placeholder=tool value=\"{}\"><button>Filter</button></form>\
         <form method=post action=/audit/verify><input type=hidden name=csrf value=\"{}\">\
         <button>Verify chain</button></form><table id=records><tr><th>seq<th>time (ms)<th>principal<th>session<th>tool<th>outcome<th>code</tr>",
        attr(filter.principal.as_deref().unwrap_or_default()),
        attr(filter.tool.as_deref().unwrap_or_default()),
        attr(&inbox.csrf_for(&operator))
    );
    for r in &records {
        let outcome = serde_json::to_value(r.outcome).unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td>{}<td>{}<td>{}<td>{}<td>{}<td>{}<td>{}</tr>",
            r.seq,
            r.time_ms,
            esc(r.principal.as_deref().unwrap_or_default()),
            esc(r.session.as_deref().unwrap_or_default()),
            esc(&r.tool),
            esc(outcome.as_str().unwrap_or_default()),
            r.code.map(|c| c.as_str()).unwrap_or_default()
        );
    }
    body.push_str("</table>");
    Html(body).into_response()
}

/// The verify action's form.
#[derive(Deserialize)]
pub struct VerifyForm {
    csrf: String,
}

/// `POST /audit/verify`: checks the chain and names the first broken link.
pub async fn verify(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Form(form): Form<VerifyForm>,
) -> Response {
    if let Err(refused) = inbox.check_form(&operator, &form.csrf) {
        return refused;
    }
    let Some(sink) = inbox.engine.audit() else {
        return (StatusCode::NOT_FOUND, "no audit log was given").into_response();
    };
    let verdict = match sink.verify().await {
        Ok(report) => match report.broken {
            None => format!("<p id=verdict>Intact: {} records.</p>", report.records),
            Some(link) => format!(
                "<p id=verdict>Broken at record {}: {}</p>",
                link.seq,
                esc(&link.reason)
            ),
        },
        Err(e) => format!(
            "<p id=verdict>Could not verify: {}</p>",
            esc(&e.to_string())
        ),
    };
    Html(html::head("Audit chain") + &verdict).into_response()
}
