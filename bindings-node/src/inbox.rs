//! The approval inbox from Node: `engine.serveInbox(...)` starts the command line's inbox
//! (`tooljig_cli::inbox`). With bearer tokens it runs no JavaScript; an app's auth hook runs
//! through the dispatcher, like the MCP server's.

use crate::convert::{keys, shape};
use crate::engine::JsEngine;
use crate::seams::JsHttpAuth;
use crate::server::JsServer;
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tooljig::{Caller, CancellationToken, HttpAuth};

fn invalid(message: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(Status::InvalidArg, message.to_string())
}

/// The operators `tokens` names (token → caller).
fn tokens(tokens: Option<Value>) -> napi::Result<Arc<dyn HttpAuth>> {
    let Some(Value::Object(tokens)) = tokens else {
        return Err(invalid("tokens must map tokens to callers"));
    };
    let tokens = tokens
        .into_iter()
        .map(|(token, caller)| {
            let caller: Caller = serde_json::from_value(keys::from_js(caller, shape::CALLER))
                .map_err(|e| invalid(format!("tokens.{token}: {e}")))?;
            Ok((token, caller))
        })
        .collect::<napi::Result<HashMap<_, _>>>()?;
    tooljig_cli::inbox::tokens(tokens).map_err(|e| invalid(format!("engine.serveInbox(): {e}")))
}

#[napi]
impl JsEngine {
    /// Starts the approval inbox on `bind` for the operators the auth hook at index `auth`
    /// of the JS layer's table accepts, or else those `tokens` names.
    #[napi]
    pub fn serve_inbox(
        &self,
        tokens: Option<Value>,
        bind: String,
        auth: Option<u32>,
    ) -> napi::Result<JsServer> {
        let auth: Arc<dyn HttpAuth> = match auth {
            Some(index) => Arc::new(JsHttpAuth::new(self.dispatcher(), index)),
            None => self::tokens(tokens)?,
        };
        let app = tooljig_cli::inbox::router(self.core(), auth, None)
            .map_err(|e| invalid(format!("engine.serveInbox(): {e}")))?;
        let stop = CancellationToken::new();
        // Binding is immediate; no JS runs meanwhile.
        let running =
            napi::bindgen_prelude::block_on(tooljig_cli::inbox::serve(app, &bind, stop.clone()))
                .map_err(|e| invalid(format!("engine.serveInbox(): {e}")))?;
        let url = format!("http://{}/", running.addr);
        Ok(JsServer::new(url, stop, running.task))
    }
}
