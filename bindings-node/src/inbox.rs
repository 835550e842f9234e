//! The approval inbox from Node: `engine.serveInbox(...)` starts the command line's inbox
//! (`tooljig_cli::inbox`). It runs no JavaScript.

use crate::convert::{keys, shape};
use crate::engine::JsEngine;
use crate::server::JsServer;
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use std::collections::HashMap;
use tooljig::{Caller, CancellationToken};

#[napi]
impl JsEngine {
    /// Starts the approval inbox on `bind` for the operators `tokens` names (token → caller).
    #[napi]
    pub fn serve_inbox(&self, tokens: Value, bind: String) -> napi::Result<JsServer> {
        let Value::Object(tokens) = tokens else {
            return Err(napi::Error::new(
                Status::InvalidArg,
                "tokens must map tokens to callers",
            ));
        };
        let tokens = tokens
            .into_iter()
            .map(|(token, caller)| {
                let caller: Caller = serde_json::from_value(keys::from_js(caller, shape::CALLER))
                    .map_err(|e| {
                    napi::Error::new(Status::InvalidArg, format!("tokens.{token}: {e}"))
                })?;
                Ok((token, caller))
            })
            .collect::<napi::Result<HashMap<_, _>>>()?;
        let stop = CancellationToken::new();
        let running = napi::bindgen_prelude::block_on(tooljig_cli::inbox::serve(
            self.core(),
            tokens,
            &bind,
            stop.clone(),
        ))
        .map_err(|e| napi::Error::new(Status::InvalidArg, format!("engine.serveInbox(): {e}")))?;
        let url = format!("http://{}/", running.addr);
        Ok(JsServer::new(url, stop, running.task))
    }
}
