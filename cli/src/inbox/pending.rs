//! `/`: the pending requests, each with its decision form, and the recently decided ones (an
//! edit shown as what it changed); `/decide` records a decision; `/events` tells an open
//! page when the pending set changed.

use super::html::{self, attr, esc};
use super::state::Inbox;
use axum::extract::{Extension, Form, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::fmt::Write;
use std::sync::Arc;
use tooljig::{ApprovalRecord, Caller, ErrorCode, Remember};

/// How many decided requests the page looks back on.
const DECIDED_SHOWN: usize = 20;

/// A decision the page refused, shown at its request with what the operator typed.
struct Refusal {
    id: String,
    message: String,
    arguments: String,
}

/// `GET /`.
pub async fn page(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
) -> Response {
    render(&inbox, &operator, None, None).await
}

/// The page, with a refused decision shown at its request, or a notice above them all.
async fn render(
    inbox: &Inbox,
    operator: &Caller,
    refusal: Option<Refusal>,
    notice: Option<String>,
) -> Response {
    let tenant = operator.tenant.as_deref();
    let (pending, decided) = match tokio::try_join!(
        inbox.engine.pending(tenant),
        inbox.engine.decided_approvals(tenant, DECIDED_SHOWN)
    ) {
        Ok(both) => both,
        Err(e) => return html::failure(&e.message),
    };
    let csrf = inbox.csrf_for(operator);
    let mut body = html::head("Pending approvals");
    let _ = write!(
        body,
        "<p>Signed in as <b>{}</b>. <span id=count>{}</span> pending.</p>\
         <script>new EventSource('/events').addEventListener('pending', () => location.reload())</script>",
        esc(operator.principal.as_deref().unwrap_or("?")),
        pending.len()
    );
    if let Some(notice) = &notice {
        let _ = write!(body, "<p id=notice class=refused>{}</p>", esc(notice));
    }
    if !pending.is_empty() {
        // Several at once: each request's checkbox belongs to this form (`form=bulk`).
        let _ = write!(
            body,
            "<form id=bulk method=post action=/decide-many><input type=hidden name=csrf value=\"{csrf}\">\
             <button name=decision value=approve>Approve selected</button> \
             <button name=decision value=reject>Reject selected</button> \
             <input name=message size=40 placeholder=\"why, for a rejection (the model reads it)\"></form>",
            csrf = attr(&csrf)
        );
    }
    for record in &pending {
        let refused = refusal.as_ref().filter(|r| r.id == record.id);
        write_request(&mut body, record, &csrf, refused);
    }
    body.push_str("<h2>Recently decided</h2><table id=decided><tr><th>tool<th>decision<th>by<th>asked by<th>run<th>changes / message</tr>");
    for record in &decided {
        write_decided(&mut body, record);
    }
    body.push_str("</table>");
    let status = if refusal.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else if notice.is_some() {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    (status, Html(body)).into_response()
}

fn write_request(body: &mut String, r: &ApprovalRecord, csrf: &str, refused: Option<&Refusal>) {
    let arguments = serde_json::to_string_pretty(&r.arguments).unwrap_or_default();
    let risk = serde_json::to_value(r.risk).unwrap_or_default();
    let asker = r.requested_by.principal.as_deref().unwrap_or("?");
    let (refusal, edited) = match refused {
        Some(r) => (
            format!("<p class=refused>{}</p>", esc(&r.message)),
            r.arguments.as_str(),
        ),
        None => (String::new(), arguments.as_str()),
    };
    let _ = write!(
        body,
        "<section class=request id=\"{id}\"><h2>{tool}</h2>\
         <label class=pick><input type=checkbox form=bulk name=pick value=\"{id} {hash}\"> select</label>\
         <p>risk <b>{risk}</b> · asked by <b>{asker}</b> · run <a href=\"/runs/{run}\">{run_text}</a></p>\
         <pre class=arguments>{arguments}</pre>{refusal}\
         <form method=post action=/decide>\
         <input type=hidden name=id value=\"{id}\"><input type=hidden name=hash value=\"{hash}\">\
         <input type=hidden name=csrf value=\"{csrf}\">\
         <div><button name=decision value=approve>Approve</button>\
         <label><input type=checkbox name=remember value=always> and always allow {tool} for {asker}</label></div>\
         <div><button name=decision value=reject>Reject</button>\
         <input name=message size=40 placeholder=\"why (the model reads it)\"></div>\
         <details{open}><summary>Edit</summary>\
         <textarea name=arguments rows=6 cols=60>{edited}</textarea>\
         <button name=decision value=edit>Approve with these arguments</button></details></form></section>",
        id = attr(&r.id),
        tool = esc(&r.tool),
        risk = esc(risk.as_str().unwrap_or_default()),
        asker = esc(asker),
        run = attr(&r.run_id),
        run_text = esc(&r.run_id),
        arguments = esc(&arguments),
        edited = esc(edited),
        open = if refused.is_some() { " open" } else { "" },
        hash = attr(&r.arguments_hash),
        csrf = attr(csrf),
    );
}

fn write_decided(body: &mut String, r: &ApprovalRecord) {
    let Some(decision) = &r.decision else { return };
    let status = serde_json::to_value(r.status).unwrap_or_default();
    let detail = match (&decision.approved_arguments, &decision.message) {
        (Some(approved), _) if approved != &r.arguments => html::diff(&r.arguments, approved),
        (_, Some(message)) => esc(message).to_string(),
        _ => String::new(),
    };
    let _ = write!(
        body,
        "<tr id=\"decided-{id}\"><td>{tool}<td>{status}<td>{by}<td>{asker}<td><a href=\"/runs/{run}\">{run_text}</a><td>{detail}</tr>",
        id = attr(&r.id),
        tool = esc(&r.tool),
        status = esc(status.as_str().unwrap_or_default()),
        by = esc(&decision.by),
        asker = esc(r.requested_by.principal.as_deref().unwrap_or("?")),
        run = attr(&r.run_id),
        run_text = esc(&r.run_id),
    );
}

/// A decision as the form sends it.
#[derive(Deserialize)]
pub struct DecisionForm {
    id: String,
    hash: String,
    csrf: String,
    decision: String,
    #[serde(default)]
    message: String,
    /// `always`: remember the approval for the principal who asked.
    #[serde(default)]
    remember: String,
    /// The edited arguments (JSON), for `edit`.
    #[serde(default)]
    arguments: String,
}

/// `POST /decide`: records the signed-in operator's decision, then back to the inbox. An
/// edit that is not JSON or fails the tool's schema is shown on the page, unrecorded.
pub async fn decide(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Form(form): Form<DecisionForm>,
) -> Response {
    if let Err(refused) = inbox.check_form(&operator, &form.csrf) {
        return refused;
    }
    let engine = &inbox.engine;
    let decided = match form.decision.as_str() {
        "approve" => {
            let remember = (form.remember == "always").then(Remember::default);
            engine
                .approve(&form.id, &form.hash, &operator, remember)
                .await
        }
        "reject" => {
            let message = Some(form.message.clone()).filter(|m| !m.is_empty());
            engine
                .reject(&form.id, &form.hash, &operator, message)
                .await
        }
        "edit" => match serde_json::from_str(&form.arguments) {
            Ok(arguments) => {
                engine
                    .edit(&form.id, &form.hash, &operator, arguments)
                    .await
            }
            Err(e) => Err(tooljig::ToolError::new(
                ErrorCode::InvalidArguments,
                format!("the edited arguments are not JSON: {e}"),
            )),
        },
        other => {
            let why = format!("unknown decision {:?}", esc(other));
            return (StatusCode::BAD_REQUEST, why).into_response();
        }
    };
    match decided {
        Ok(_) => Redirect::to("/").into_response(),
        Err(e) if e.code == ErrorCode::InvalidArguments => {
            let refusal = Refusal {
                id: form.id,
                message: format!("Edit refused: {}", e.message),
                arguments: form.arguments,
            };
            render(&inbox, &operator, Some(refusal), None).await
        }
        Err(e) => (
            StatusCode::CONFLICT,
            format!("refused: {}", esc(&e.message)),
        )
            .into_response(),
    }
}

/// `POST /decide-many`: one decision, approve or reject, on every selected request (`pick`:
/// its id and the arguments hash the page showed), each checked as `/decide` checks one.
/// Back to the inbox when all were decided; otherwise the page says which were refused and
/// why (the others stay decided: each decision stands on its own).
pub async fn decide_many(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    if let Err(refused) = inbox.check_form(&operator, field("csrf")) {
        return refused;
    }
    let picks: Vec<(&str, &str)> = fields
        .iter()
        .filter(|(k, _)| k == "pick")
        .filter_map(|(_, v)| v.split_once(' '))
        .collect();
    if picks.is_empty() {
        return (StatusCode::BAD_REQUEST, "select at least one request").into_response();
    }
    let message = Some(field("message").to_string()).filter(|m| !m.is_empty());
    let mut refused = Vec::new();
    for (id, hash) in picks {
        let decided = match field("decision") {
            "approve" => inbox.engine.approve(id, hash, &operator, None).await,
            "reject" => {
                inbox
                    .engine
                    .reject(id, hash, &operator, message.clone())
                    .await
            }
            other => {
                let why = format!("unknown decision {:?}", esc(other));
                return (StatusCode::BAD_REQUEST, why).into_response();
            }
        };
        if let Err(e) = decided {
            refused.push(format!("{id}: {}", e.message));
        }
    }
    if refused.is_empty() {
        return Redirect::to("/").into_response();
    }
    let notice = format!("Not decided: {}", refused.join("; "));
    render(&inbox, &operator, None, Some(notice)).await
}

/// `GET /events`: `ready` once the pending requests are known, then `pending` whenever their
/// set changes, so the page shows new ones without a reload by hand (the store is read every
/// second).
pub async fn events(
    State(inbox): State<Arc<Inbox>>,
    Extension(operator): Extension<Caller>,
) -> Response {
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
