//! The approval inbox: pending requests in the browser, decided by the signed-in operator.
//!
//! Server-rendered HTML with a little JavaScript, no build step. Every request is
//! authenticated by the app's [`HttpAuth`] hook (a table of bearer tokens by default, see
//! [`tokens`]); the browser's `tooljig_token` cookie, set at sign-in, reaches the hook as a
//! bearer token. The approver is the caller the hook answers, never a field of the page.
//! Decisions carry a CSRF token (an HMAC of the operator under a key made at start) and the
//! arguments hash the page showed, so a forged form or a request whose arguments changed is
//! refused. Everything shown is HTML-escaped. Binds to 127.0.0.1 by default.

mod audit;
mod html;
mod pending;
mod preferences;
mod runs;
mod state;

use state::Inbox;

use axum::extract::{Form, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::seal::SealKey;
use tooljig::{BearerTokens, Caller, Engine, HostData, HttpAuth, HttpRequest};

/// The simplest auth hook: bearer tokens, each standing for one operator. Refused without
/// any, so an inbox is never open to whoever reaches it.
pub fn tokens(tokens: HashMap<String, Caller>) -> Result<Arc<dyn HttpAuth>, String> {
    if tokens.is_empty() {
        return Err("the inbox needs at least one operator token".into());
    }
    Ok(Arc::new(BearerTokens(tokens)))
}

/// The inbox's routes, for an app to mount or `tooljig serve` to serve: `/` (pending and
/// recently decided requests), `/decide`, `/decide-many` (several at once), `/events`, `/runs/{id}`
/// (and `/runs/{id}/operate`: resume or roll back through the app's workers), `/audit`,
/// `/audit/verify`, `/preferences`, `/preferences/revoke`, `/signin`. `auth` tells who each
/// request is from; `host` is what it runs on, for a hook written in Python.
pub fn router(
    engine: Arc<Engine>,
    auth: Arc<dyn HttpAuth>,
    host: Option<HostData>,
) -> Result<axum::Router, String> {
    // Two random UUIDs: 244 random bits for the key of this server's CSRF tokens.
    let key: Vec<u8> = (0..2)
        .flat_map(|_| *uuid::Uuid::new_v4().as_bytes())
        .collect();
    let inbox = Arc::new(Inbox {
        engine,
        auth,
        host,
        csrf: SealKey::new(key)?,
    });
    let signed_in = axum::Router::new()
        .route("/", get(pending::page))
        .route("/decide", post(pending::decide))
        .route("/decide-many", post(pending::decide_many))
        .route("/events", get(pending::events))
        .route("/runs/{id}", get(runs::page))
        .route("/runs/{id}/operate", post(runs::operate))
        .route("/audit", get(audit::page))
        .route("/audit/verify", post(audit::verify))
        .route("/preferences", get(preferences::page))
        .route("/preferences/revoke", post(preferences::revoke))
        .route_layer(axum::middleware::from_fn_with_state(
            inbox.clone(),
            authenticate,
        ));
    Ok(axum::Router::new()
        .merge(signed_in)
        .route("/signin", post(signin))
        .with_state(inbox))
}

/// A running inbox server: [`serve`]'s answer.
pub struct Running {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// Ends when the server stopped (after `stop` fired and connections closed).
    pub task: tokio::task::JoinHandle<()>,
}

/// Listens on `bind` and serves `app` (the inbox's [`router`]) until `stop` fires: what
/// `tooljig serve` and the Python and Node packages' starters run.
pub async fn serve(
    app: axum::Router,
    bind: &str,
    stop: tooljig::CancellationToken,
) -> Result<Running, String> {
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

/// The cookie the browser keeps the operator's token in.
const COOKIE: &str = "tooljig_token";

/// What the hook sees of a request: its own headers, and the sign-in cookie as a bearer
/// token when it has no `Authorization` header.
fn seen(method: &str, path: &str, headers: &axum::http::HeaderMap) -> HttpRequest {
    let mut request = HttpRequest::new(
        method,
        path,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())),
    );
    if !request.headers.contains_key("authorization") {
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='));
        if let Some(token) = cookie {
            let bearer = format!("Bearer {token}");
            request.headers.insert("authorization".into(), bearer);
        }
    }
    request
}

/// Asks the hook who the request is from; the operator rides in the request's extensions to
/// the page. A refusal is `401` with the sign-in form.
async fn authenticate(
    State(inbox): State<Arc<Inbox>>,
    mut request: Request,
    next: Next,
) -> Response {
    let who = seen(
        request.method().as_str(),
        request.uri().path(),
        request.headers(),
    );
    match inbox.auth.authenticate(who, inbox.host.clone()).await {
        Ok(operator) => {
            request.extensions_mut().insert(operator);
            next.run(request).await
        }
        Err(why) => unauthorized(&why),
    }
}

/// `401` with a `Bearer` challenge, and a page to sign in on.
fn unauthorized(why: &str) -> Response {
    let challenge = [(header::WWW_AUTHENTICATE, "Bearer")];
    let body = html::bare("Sign in")
        + &format!(
            "<p id=refusal>{}</p><form method=post action=/signin>\
             <input name=token type=password placeholder=\"operator token\" autofocus>\
             <button>Sign in</button></form>",
            html::esc(why)
        );
    (StatusCode::UNAUTHORIZED, challenge, Html(body)).into_response()
}

/// The sign-in form.
#[derive(Deserialize)]
struct SignIn {
    token: String,
}

/// `POST /signin`: sets the cookie the browser sends from then on, if the hook accepts the
/// token.
async fn signin(State(inbox): State<Arc<Inbox>>, Form(form): Form<SignIn>) -> Response {
    let mut request = HttpRequest::new("POST", "/signin", []);
    let bearer = format!("Bearer {}", form.token);
    request.headers.insert("authorization".into(), bearer);
    if let Err(why) = inbox.auth.authenticate(request, inbox.host.clone()).await {
        return unauthorized(&why);
    }
    // The token goes back only as a cookie scripts cannot read; a token that would break
    // the header is refused rather than cut.
    if !form
        .token
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b';')
    {
        return unauthorized("this token cannot be kept in a cookie");
    }
    let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", form.token);
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}
