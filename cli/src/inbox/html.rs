//! What every page of the inbox shares: the frame, escaping, errors, and how an edit is
//! shown (the changes between the asked and the approved arguments).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
pub use html_escape::encode_double_quoted_attribute as attr;
pub use html_escape::encode_text as esc;
use serde_json::Value;
use std::fmt::Write;

const STYLE: &str = "<style>body{font:14px system-ui;margin:2em;max-width:70em}\
     pre{background:#f4f4f4;padding:.5em;overflow:auto}\
     .request{border:1px solid #ccc;padding:1em;margin:1em 0}td,th{padding:2px 8px;text-align:left}\
     .refused{color:#a00;font-weight:bold}del{background:#fdd}ins{background:#dfd}\
     nav a{margin-right:1em}form div{margin:.4em 0}button{margin-right:.5em}</style>";

/// A page's top without navigation: the sign-in page.
pub fn bare(title: &str) -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>{t} · tooljig</title>{STYLE}<h1>{t}</h1>",
        t = esc(title)
    )
}

/// The top of every signed-in page: title, style, navigation.
pub fn head(title: &str) -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>{t} · tooljig</title>{STYLE}\
         <nav><a href=/>Pending</a><a href=/preferences>Preferences</a>\
         <a href=/audit>Audit log</a></nav><h1>{t}</h1>",
        t = esc(title)
    )
}

/// A store that could not answer: `500` with its message.
pub fn failure(message: &str) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, esc(message).to_string()).into_response()
}

/// A JSON value as a compact, escaped snippet.
pub fn json(value: &Value) -> String {
    esc(&value.to_string()).to_string()
}

/// The changes an edit made, one line each (RFC 6902 operations: the pointer, the value
/// asked struck through, the value approved inserted).
pub fn diff(asked: &Value, approved: &Value) -> String {
    let mut out = String::from("<ul class=diff>");
    for op in json_patch::diff(asked, approved).0 {
        use json_patch::PatchOperation::{Add, Remove, Replace};
        let (path, old, new) = match &op {
            Replace(r) => (
                r.path.to_string(),
                asked.pointer(r.path.as_str()),
                Some(&r.value),
            ),
            Add(a) => (a.path.to_string(), None, Some(&a.value)),
            Remove(r) => (r.path.to_string(), asked.pointer(r.path.as_str()), None),
            // diff() answers only the three above.
            other => (other.to_string(), None, None),
        };
        let path = if path.is_empty() { "/".into() } else { path };
        let _ = write!(out, "<li><code>{}</code> ", esc(&path));
        if let Some(old) = old {
            let _ = write!(out, "<del>{}</del> ", json(old));
        }
        if let Some(new) = new {
            let _ = write!(out, "<ins>{}</ins>", json(new));
        }
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_shows_each_change_escaped() {
        let asked = json!({"to": "a@x", "amount": 500, "cc": "b@x"});
        let approved = json!({"to": "a@x", "amount": 50, "note": "<b>"});
        let shown = diff(&asked, &approved);
        assert!(
            shown.contains("<code>/amount</code> <del>500</del> <ins>50</ins>"),
            "{shown}"
        );
        assert!(
            shown.contains("<code>/cc</code> <del>\"b@x\"</del>"),
            "{shown}"
        );
        assert!(shown.contains("<ins>\"&lt;b&gt;\"</ins>"), "{shown}");
        assert!(!shown.contains("/to"), "{shown}");
    }
}
