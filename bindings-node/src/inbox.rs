//! The approval inbox from Node: `engine.serveInbox(...)` starts the command line's inbox
//! (`tooljig_cli::inbox`). It runs no JavaScript; a running inbox keeps Node alive (through
//! the promise of `stopped()`), like an `http.Server`, until it is stopped.

use crate::convert::{keys, shape};
use crate::engine::JsEngine;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use std::collections::HashMap;
use tokio::sync::watch;
use tooljig::{Caller, CancellationToken};

/// A running inbox.
#[napi(js_name = "NativeInboxServer")]
pub struct JsInboxServer {
    url: String,
    stop: CancellationToken,
    stopped: watch::Receiver<bool>,
}

#[napi]
impl JsInboxServer {
    /// The inbox's URL.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops the server.
    #[napi]
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Resolves once the server stopped.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stopped<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let mut stopped = self.stopped.clone();
        env.spawn_future(async move {
            let _ = stopped.wait_for(|done| *done).await;
            Ok(())
        })
    }
}

#[napi]
impl JsEngine {
    /// Starts the approval inbox on `bind` for the operators `tokens` names (token → caller).
    #[napi]
    pub fn serve_inbox(&self, tokens: Value, bind: String) -> napi::Result<JsInboxServer> {
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
        let (done, stopped) = watch::channel(false);
        napi::bindgen_prelude::spawn(async move {
            let _ = running.task.await;
            let _ = done.send(true);
        });
        Ok(JsInboxServer {
            url: format!("http://{}/", running.addr),
            stop,
            stopped,
        })
    }
}
