//! `/preferences`: the learned "always allow" preferences of the operator's tenant, each
//! revocable.

use super::html::{self, attr, esc};
use super::state::Inbox;
use axum::extract::{Extension, Form, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::fmt::Write;
use std::sync::Arc;
use tooljig::Caller;

/// `GET /preferences`.
pub async fn page(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
) -> Response {
    let preferences = match inbox
        .engine
        .every_preference(operator.tenant.as_deref())
        .await
    {
        Ok(preferences) => preferences,
        Err(e) => return html::failure(&e.message),
    };
    let csrf = inbox.csrf_for(&operator);
    let mut body = html::head("Always allow");
    let _ = write!(
        body,
        "<p>{} preferences. A preference approves a principal's calls of a tool without asking \
         (only those with the values shown, when any).</p>\
         <table id=preferences><tr><th>principal<th>tenant<th>tool<th>only when<th>since (ms)<th></tr>",
        preferences.len()
    );
    for p in &preferences {
        let _ = write!(
            body,
            "<tr id=\"{id}\"><td>{principal}<td>{tenant}<td>{tool}<td><code>{values}</code><td>{since}\
             <td><form method=post action=/preferences/revoke><input type=hidden name=id value=\"{id}\">\
             <input type=hidden name=csrf value=\"{csrf}\"><button>Revoke</button></form></tr>",
            id = attr(&p.id),
            principal = esc(&p.principal),
            tenant = esc(p.tenant.as_deref().unwrap_or_default()),
            tool = esc(&p.tool),
            values = html::json(&serde_json::Value::Object(p.values.clone())),
            since = p.created_at_ms,
            csrf = attr(&csrf),
        );
    }
    body.push_str("</table>");
    Html(body).into_response()
}

/// The revoke action's form.
#[derive(Deserialize)]
pub struct RevokeForm {
    id: String,
    csrf: String,
}

/// `POST /preferences/revoke`: revokes one preference of the operator's tenant.
pub async fn revoke(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Form(form): Form<RevokeForm>,
) -> Response {
    if let Err(refused) = inbox.check_form(&operator, &form.csrf) {
        return refused;
    }
    let engine = &inbox.engine;
    let found = match engine.every_preference(operator.tenant.as_deref()).await {
        Ok(every) => every.into_iter().find(|p| p.id == form.id),
        Err(e) => return html::failure(&e.message),
    };
    let Some(preference) = found else {
        return (StatusCode::NOT_FOUND, "no such preference").into_response();
    };
    match engine
        .revoke_preference(&preference.owner(), &preference.id)
        .await
    {
        Ok(_) => Redirect::to("/preferences").into_response(),
        Err(e) => html::failure(&e.message),
    }
}
