//! What every page of the inbox serves from: the engine, the auth hook and its host, and the
//! key of this server's CSRF tokens; and the check every form goes through.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tooljig::seal::SealKey;
use tooljig::{Caller, Engine, HostData, HttpAuth};

/// What the inbox serves from.
pub(super) struct Inbox {
    pub(super) engine: Arc<Engine>,
    pub(super) auth: Arc<dyn HttpAuth>,
    /// The host the auth hook runs on (a binding's event loop), if it needs one.
    pub(super) host: Option<HostData>,
    pub(super) csrf: SealKey,
}

impl Inbox {
    /// Whether a POST's CSRF token was issued to its operator (a forged form, or one issued
    /// to someone else, is refused).
    #[allow(clippy::result_large_err)] // the refusal is the response itself
    pub(super) fn check_form(&self, operator: &Caller, csrf: &str) -> Result<(), Response> {
        let who = operator.principal.as_deref().unwrap_or_default();
        if self.csrf.verify(&[b"csrf", who.as_bytes()], csrf) {
            Ok(())
        } else {
            Err((StatusCode::FORBIDDEN, "this form was not issued to you").into_response())
        }
    }

    /// The CSRF token of `operator`'s forms.
    pub(super) fn csrf_for(&self, operator: &Caller) -> String {
        let who = operator.principal.as_deref().unwrap_or_default();
        self.csrf.mac(&[b"csrf", who.as_bytes()])
    }
}
