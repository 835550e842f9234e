//! The approval inbox: pending requests in the browser, decided by the signed-in operator.
//!
//! Server-rendered HTML, no build step. Every request is authenticated (a bearer token in the
//! `Authorization` header, or the `tooljig_token` cookie the sign-in link sets); the approver is
//! the caller the token stands for, never a field of the page. Decisions carry a CSRF token
//! (an HMAC of the approver under a key made at start) and the arguments hash the page showed,
//! so a forged form or a request whose arguments changed is refused. Everything shown is
//! HTML-escaped. Binds to 127.0.0.1 by default.

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use html_escape::encode_text as esc;
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use tooljig::seal::SealKey;
use tooljig::{ApprovalRecord, Caller, Engine};

/// What the inbox serves from.
pub struct Inbox {
    engine: Arc<Engine>,
    tokens: HashMap<String, Caller>,
    csrf: SealKey,
}

/// The inbox's routes (`/`, `/decide`, `/signin`), for an app to mount or `tooljig serve` to
/// serve. `tokens` map bearer tokens to the operators they stand for; refused without any.
pub fn router(
    engine: Arc<Engine>,
    tokens: HashMap<String, Caller>,
) -> Result<axum::Router, String> {
    if tokens.is_empty() {
        return Err("the inbox needs at least one operator token".into());
    }
    // Two random UUIDs: 244 random bits for the key of this server's CSRF tokens.
    let key: Vec<u8> = (0..2)
        .flat_map(|_| *uuid::Uuid::new_v4().as_bytes())
        .collect();
    let inbox = Arc::new(Inbox {
        engine,
        tokens,
        csrf: SealKey::new(key)?,
    });
    Ok(axum::Router::new()
        .route("/", get(page))
        .route("/decide", post(decide))
        .route("/signin", get(signin))
        .with_state(inbox))
}

impl Inbox {
    /// The operator this request is from: its bearer token or its cookie.
    fn operator(&self, headers: &HeaderMap) -> Option<Caller> {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix("tooljig_token="));
        self.caller_of(bearer.or(cookie)?)
    }

    /// The operator a token stands for (compared in constant time).
    fn caller_of(&self, token: &str) -> Option<Caller> {
        self.tokens
            .iter()
            .find(|(known, _)| constant_time_eq(known.as_bytes(), token.as_bytes()))
            .map(|(_, caller)| caller.clone())
    }

    fn csrf_for(&self, operator: &Caller) -> String {
        let who = operator.principal.as_deref().unwrap_or_default();
        self.csrf.mac(&[b"csrf", who.as_bytes()])
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> Response {
    let challenge = [(header::WWW_AUTHENTICATE, "Bearer")];
    (
        StatusCode::UNAUTHORIZED,
        challenge,
        "sign in with your operator token",
    )
        .into_response()
}

/// `/signin?token=...`: sets the cookie the browser sends from then on, if the token is known.
#[derive(Deserialize)]
struct SignIn {
    token: String,
}

async fn signin(State(inbox): State<Arc<Inbox>>, Query(q): Query<SignIn>) -> Response {
    if inbox.caller_of(&q.token).is_none() {
        return unauthorized();
    }
    let cookie = format!(
        "tooljig_token={}; HttpOnly; SameSite=Strict; Path=/",
        q.token
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// `/`: the pending requests, each with its decision form.
async fn page(State(inbox): State<Arc<Inbox>>, headers: HeaderMap) -> Response {
    let Some(operator) = inbox.operator(&headers) else {
        return unauthorized();
    };
    let pending = match inbox.engine.pending(operator.tenant.as_deref()).await {
        Ok(pending) => pending,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                esc(&e.message).to_string(),
            )
                .into_response();
        }
    };
    let csrf = inbox.csrf_for(&operator);
    let mut body = String::new();
    let who = operator.principal.as_deref().unwrap_or("?");
    let _ = write!(
        body,
        "<!doctype html><meta charset=utf-8><title>tooljig inbox</title>\
         <style>body{{font:14px system-ui;margin:2em}}pre{{background:#f4f4f4;padding:.5em}}\
         .request{{border:1px solid #ccc;padding:1em;margin:1em 0}}</style>\
         <h1>Pending approvals</h1><p>Signed in as <b>{}</b>. {} pending.</p>",
        esc(who),
        pending.len()
    );
    for record in &pending {
        write_request(&mut body, record, &csrf);
    }
    Html(body).into_response()
}

fn write_request(body: &mut String, r: &ApprovalRecord, csrf: &str) {
    let arguments = serde_json::to_string_pretty(&r.arguments).unwrap_or_default();
    let risk = serde_json::to_value(r.risk).unwrap_or_default();
    let _ = write!(
        body,
        "<section class=request id=\"{id}\"><h2>{tool}</h2>\
         <p>risk <b>{risk}</b> · asked by {asker} · run {run}</p><pre>{arguments}</pre>\
         <form method=post action=/decide>\
         <input type=hidden name=id value=\"{id}\"><input type=hidden name=hash value=\"{hash}\">\
         <input type=hidden name=csrf value=\"{csrf}\">\
         <input name=message placeholder=\"message (for a rejection)\">\
         <button name=decision value=approve>Approve</button>\
         <button name=decision value=reject>Reject</button></form></section>",
        id = esc(&r.id),
        tool = esc(&r.tool),
        risk = esc(risk.as_str().unwrap_or_default()),
        asker = esc(r.requested_by.principal.as_deref().unwrap_or("?")),
        run = esc(&r.run_id),
        arguments = esc(&arguments),
        hash = esc(&r.arguments_hash),
        csrf = esc(csrf),
    );
}

/// A decision as the form sends it.
#[derive(Deserialize)]
struct DecisionForm {
    id: String,
    hash: String,
    csrf: String,
    decision: String,
    #[serde(default)]
    message: String,
}

/// `POST /decide`: records the signed-in operator's decision, then back to the inbox.
async fn decide(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    let Some(operator) = inbox.operator(&headers) else {
        return unauthorized();
    };
    let who = operator.principal.as_deref().unwrap_or_default();
    if !inbox.csrf.verify(&[b"csrf", who.as_bytes()], &form.csrf) {
        return (StatusCode::FORBIDDEN, "this form was not issued to you").into_response();
    }
    let engine = &inbox.engine;
    let decided = match form.decision.as_str() {
        "approve" => engine.approve(&form.id, &form.hash, &operator, None).await,
        "reject" => {
            let message = Some(form.message).filter(|m| !m.is_empty());
            engine
                .reject(&form.id, &form.hash, &operator, message)
                .await
        }
        other => {
            let why = format!("unknown decision {:?}", esc(other));
            return (StatusCode::BAD_REQUEST, why).into_response();
        }
    };
    match decided {
        Ok(_) => Redirect::to("/").into_response(),
        Err(e) => (
            StatusCode::CONFLICT,
            format!("refused: {}", esc(&e.message)),
        )
            .into_response(),
    }
}
