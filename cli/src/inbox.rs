//! The approval inbox: pending requests in the browser, decided by the signed-in operator.
//!
//! Server-rendered HTML, no build step. Every request is authenticated (a bearer token in the
//! `Authorization` header, or the `tooljig_token` cookie the sign-in link sets); the approver is
//! the caller the token stands for, never a field of the page. Decisions carry a CSRF token
//! (an HMAC of the approver under a key made at start) and the arguments hash the page showed,
//! so a forged form or a request whose arguments changed is refused. Everything shown is
//! HTML-escaped. Binds to 127.0.0.1 by default.

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use html_escape::encode_text as esc;
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use tooljig::seal::SealKey;
use tooljig::{ApprovalRecord, BearerTokens, Caller, Engine};

/// What the inbox serves from.
pub struct Inbox {
    engine: Arc<Engine>,
    tokens: BearerTokens,
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
        tokens: BearerTokens(tokens),
        csrf: SealKey::new(key)?,
    });
    Ok(axum::Router::new()
        .route("/", get(page))
        .route("/decide", post(decide))
        .route("/signin", get(signin))
        .route("/events", get(events))
        .route("/runs/{id}", get(run_page))
        .route("/audit", get(audit_page))
        .route("/audit/verify", post(verify))
        .with_state(inbox))
}

/// A running inbox server: [`serve`]'s answer.
pub struct Running {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// Ends when the server stopped (after `stop` fired and connections closed).
    pub task: tokio::task::JoinHandle<()>,
}

/// Listens on `bind` and serves the inbox until `stop` fires: what `tooljig serve` and the
/// Python and Node packages' starters run.
pub async fn serve(
    engine: Arc<Engine>,
    tokens: HashMap<String, Caller>,
    bind: &str,
    stop: tooljig::CancellationToken,
) -> Result<Running, String> {
    let app = router(engine, tokens)?;
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await });
        if let Err(e) = served.await {
            eprintln!("tooljig: the inbox stopped: {e}");
        }
    });
    Ok(Running { addr, task })
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
        self.tokens.caller_of(bearer.or(cookie)?)
    }

    /// The operator of a POST: authenticated, and holding the form's CSRF token issued to
    /// them (a forged form, or one issued to someone else, is refused).
    #[allow(clippy::result_large_err)] // the refusal is the response itself
    fn poster(&self, headers: &HeaderMap, csrf: &str) -> Result<Caller, Response> {
        let operator = self.operator(headers).ok_or_else(unauthorized)?;
        let who = operator.principal.as_deref().unwrap_or_default();
        if !self.csrf.verify(&[b"csrf", who.as_bytes()], csrf) {
            return Err((StatusCode::FORBIDDEN, "this form was not issued to you").into_response());
        }
        Ok(operator)
    }

    fn csrf_for(&self, operator: &Caller) -> String {
        let who = operator.principal.as_deref().unwrap_or_default();
        self.csrf.mac(&[b"csrf", who.as_bytes()])
    }
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
    if inbox.tokens.caller_of(&q.token).is_none() {
        return unauthorized();
    }
    let cookie = format!(
        "tooljig_token={}; HttpOnly; SameSite=Strict; Path=/",
        q.token
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

const STYLE: &str = "<style>body{font:14px system-ui;margin:2em}pre{background:#f4f4f4;padding:.5em}\
     .request{border:1px solid #ccc;padding:1em;margin:1em 0}td,th{padding:2px 8px;text-align:left}</style>";

/// The top of every page: title, style, navigation.
fn head(title: &str) -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>{t} · tooljig</title>{STYLE}\
         <nav><a href=/>Pending</a> · <a href=/audit>Audit log</a></nav><h1>{t}</h1>",
        t = esc(title)
    )
}

/// `/events`: `ready` once the pending requests are known, then `pending` whenever their set
/// changes, so the page shows new ones without a reload by hand (the store is read every
/// second).
async fn events(State(inbox): State<Arc<Inbox>>, headers: HeaderMap) -> Response {
    let Some(operator) = inbox.operator(&headers) else {
        return unauthorized();
    };
    let stream = futures::stream::unfold(None::<Vec<String>>, move |seen| {
        let inbox = inbox.clone();
        let tenant = operator.tenant.clone();
        async move {
            let mut seen = seen;
            loop {
                let now: Vec<String> = match inbox.engine.pending(tenant.as_deref()).await {
                    Ok(pending) => pending.into_iter().map(|r| r.id).collect(),
                    Err(_) => Vec::new(),
                };
                if seen.as_ref() != Some(&now) {
                    // The first event only says what the page already shows (`ready`); the
                    // page reloads on `pending`, a change after that.
                    let kind = if seen.is_none() { "ready" } else { "pending" };
                    let event = Event::default().event(kind).data(now.len().to_string());
                    seen = Some(now);
                    return Some((Ok::<_, std::convert::Infallible>(event), seen));
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `/runs/{id}`: a run's calls, latest results and step log.
async fn run_page(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if inbox.operator(&headers).is_none() {
        return unauthorized();
    }
    let run = match inbox.engine.run_record(&id).await {
        Ok(Some(run)) => run,
        Ok(None) => return (StatusCode::NOT_FOUND, "no such run").into_response(),
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                esc(&e.message).to_string(),
            )
                .into_response();
        }
    };
    let mut body = head(&format!("Run {id}"));
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
            esc(&r.envelope.to_value().to_string())
        );
    }
    body.push_str("</table><h2>Steps</h2><ol>");
    for step in &run.steps {
        let step = serde_json::to_string(step).unwrap_or_default();
        let _ = write!(body, "<li><code>{}</code>", esc(&step));
    }
    body.push_str("</ol>");
    Html(body).into_response()
}

/// The audit page's filters.
#[derive(Deserialize, Default)]
struct AuditFilter {
    principal: Option<String>,
    tool: Option<String>,
}

/// `/audit`: the newest records, filtered by principal and tool, and the "verify chain" action.
async fn audit_page(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    Query(filter): Query<AuditFilter>,
) -> Response {
    let Some(operator) = inbox.operator(&headers) else {
        return unauthorized();
    };
    let Some(sink) = inbox.engine.audit() else {
        return Html(
            head("Audit log") + "<p>No audit log was given (<code>--audit URL</code>).</p>",
        )
        .into_response();
    };
    let query = tooljig::AuditQuery {
        principal: filter.principal.clone().filter(|p| !p.is_empty()),
        tool: filter.tool.clone().filter(|t| !t.is_empty()),
        limit: Some(200),
        ..tooljig::AuditQuery::all()
    };
    let records = match sink.query(query).await {
        Ok(records) => records,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                esc(&e.to_string()).to_string(),
            )
                .into_response();
        }
    };
    let mut body = head("Audit log");
    let _ = write!(
        body,
        "<form method=get><input name=principal placeholder=principal value=\"{}\">\
         <input name=tool placeholder=tool value=\"{}\"><button>Filter</button></form>\
         <form method=post action=/audit/verify><input type=hidden name=csrf value=\"{}\">\
         <button>Verify chain</button></form><table><tr><th>seq<th>time (ms)<th>principal<th>session<th>tool<th>outcome<th>code</tr>",
        esc(filter.principal.as_deref().unwrap_or_default()),
        esc(filter.tool.as_deref().unwrap_or_default()),
        esc(&inbox.csrf_for(&operator))
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
struct VerifyForm {
    csrf: String,
}

/// `POST /audit/verify`: checks the chain and names the first broken link.
async fn verify(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    Form(form): Form<VerifyForm>,
) -> Response {
    if let Err(refused) = inbox.poster(&headers, &form.csrf) {
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
    Html(head("Audit chain") + &verdict).into_response()
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
    body.push_str(&head("Pending approvals"));
    let _ = write!(
        body,
        "<p>Signed in as <b>{}</b>. {} pending.</p>\
         <script>new EventSource('/events').addEventListener('pending', () => location.reload())</script>",
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
         <p>risk <b>{risk}</b> · asked by {asker} · run <a href=\"/runs/{run}\">{run}</a></p><pre>{arguments}</pre>\
         <form method=post action=/decide>\
         <input type=hidden name=id value=\"{id}\"><input type=hidden name=hash value=\"{hash}\">\
         <input type=hidden name=csrf value=\"{csrf}\">\
         <input name=message placeholder=\"message (for a rejection)\">\
         <button name=decision value=approve>Approve</button>\
         <button name=decision value=reject>Reject</button>\
         <details><summary>Edit</summary><textarea name=arguments rows=6 cols=60>{arguments}</textarea>\
         <button name=decision value=edit>Approve with these arguments</button></details></form></section>",
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
    /// The edited arguments (JSON), for `edit`.
    #[serde(default)]
    arguments: String,
}

/// `POST /decide`: records the signed-in operator's decision, then back to the inbox.
async fn decide(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    let operator = match inbox.poster(&headers, &form.csrf) {
        Ok(operator) => operator,
        Err(refused) => return refused,
    };
    let engine = &inbox.engine;
    let decided = match form.decision.as_str() {
        "approve" => engine.approve(&form.id, &form.hash, &operator, None).await,
        "reject" => {
            let message = Some(form.message).filter(|m| !m.is_empty());
            engine
                .reject(&form.id, &form.hash, &operator, message)
                .await
        }
        "edit" => {
            let arguments = match serde_json::from_str(&form.arguments) {
                Ok(arguments) => arguments,
                Err(e) => {
                    let why = format!("the edited arguments are not JSON: {}", esc(&e.to_string()));
                    return (StatusCode::UNPROCESSABLE_ENTITY, why).into_response();
                }
            };
            match engine
                .edit(&form.id, &form.hash, &operator, arguments)
                .await
            {
                Err(e) if e.code == tooljig::ErrorCode::InvalidArguments => {
                    let why = format!("refused: {}", esc(&e.message));
                    return (StatusCode::UNPROCESSABLE_ENTITY, why).into_response();
                }
                decided => decided,
            }
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
