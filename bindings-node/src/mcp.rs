//! MCP from Node: serving an engine's tools (Streamable HTTP, stdio) and registering an MCP
//! server's tools into an engine. Behaviour is the core's (`tooljig::mcp`); the JS layer is
//! `lib/mcp.mjs`. Long waits are promises, so a running server keeps Node alive the way an
//! `http.Server` does, until it is stopped.

use crate::convert::{keys, shape};
use crate::engine::JsEngine;
use crate::seams::JsHttpAuth;
use crate::server::JsServer;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use tooljig::mcp::{McpClient, McpClientOptions, McpServeOptions, McpServer, McpTarget};

fn invalid(what: &str, e: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(Status::InvalidArg, format!("{what}: {e}"))
}

fn failed(e: impl std::fmt::Display) -> String {
    json!({"error": {"code": "unavailable", "message": e.to_string(), "retryable": true}})
        .to_string()
}

/// A connection to an MCP server whose tools an engine runs.
#[napi(js_name = "NativeMcpClient")]
pub struct JsMcpClient {
    engine: Arc<tooljig::Engine>,
    target: McpTarget,
    options: McpClientOptions,
    client: Arc<Mutex<Option<Arc<McpClient>>>>,
}

impl JsMcpClient {
    fn client(&self) -> Option<Arc<McpClient>> {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[napi]
impl JsMcpClient {
    /// Connects and registers the tools; resolves with `{value: names}` or `{error}`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn connect<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        let (engine, target, options) = (
            self.engine.clone(),
            self.target.clone(),
            self.options.clone(),
        );
        let slot = self.client.clone();
        env.spawn_future(async move {
            let client = match McpClient::connect(target, options).await {
                Ok(client) => client,
                Err(e) => return Ok(failed(e)),
            };
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(client.clone());
            Ok(match client.register(&engine).await {
                Ok(names) => json!({"value": names}).to_string(),
                Err(e) => json!({"error": {"code": "invalid_request", "message": e.0, "retryable": false}}).to_string(),
            })
        })
    }

    /// Connects again, after the server died or restarted (`{value: null}` or `{error}`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn reconnect<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        let client = self.client();
        env.spawn_future(async move {
            Ok(match client {
                None => failed("the MCP client is not connected"),
                Some(client) => match client.reconnect().await {
                    Ok(()) => json!({"value": null}).to_string(),
                    Err(e) => failed(e),
                },
            })
        })
    }

    /// Closes the connection; the tools answer `unavailable` until reconnected.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let client = self.client();
        env.spawn_future(async move {
            if let Some(client) = client {
                client.close().await;
            }
            Ok(())
        })
    }
}

fn serve_options(options: Option<Value>) -> napi::Result<McpServeOptions> {
    let options = options.map_or(Value::Null, |o| keys::from_js(o, shape::MCP_SERVER_OPTIONS));
    McpServeOptions::from_value(options).map_err(|e| invalid("MCP server options", e))
}

#[napi]
impl JsEngine {
    /// Serves the engine's tools over Streamable HTTP; `auth` is the index of the auth hook
    /// in the JS layer's table. Returns once it listens.
    #[napi]
    pub fn serve_mcp_http(
        &self,
        options: Option<Value>,
        auth: Option<u32>,
    ) -> napi::Result<JsServer> {
        let mut server = McpServer::new(self.core(), serve_options(options)?);
        if let Some(index) = auth {
            server = server.with_auth(Arc::new(JsHttpAuth::new(self.dispatcher(), index)));
        }
        // Binding is immediate; no JS runs meanwhile.
        let running = napi::bindgen_prelude::block_on(server.serve_http())
            .map_err(|e| invalid("engine.serveMcp()", e))?;
        let stop = running.stopper();
        let url = running.url().to_string();
        let until = stop.clone();
        let task = napi::bindgen_prelude::spawn(async move {
            until.cancelled().await;
            running.stop().await;
        });
        Ok(JsServer::new(url, stop, task))
    }

    /// Serves the engine's tools over stdin and stdout; resolves (`{value: null}` or
    /// `{error}`) when the client disconnects.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn serve_mcp_stdio<'env>(
        &self,
        env: &'env Env,
        options: Option<Value>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let server = McpServer::new(self.core(), serve_options(options)?);
        env.spawn_future(async move {
            Ok(match server.serve_stdio().await {
                Ok(()) => json!({"value": null}).to_string(),
                Err(e) => failed(e),
            })
        })
    }

    /// A client of the MCP server `target` (`{url, headers}` or `{command, env, cwd}`), not
    /// yet connected: `connect()` connects and registers its tools into this engine.
    #[napi]
    pub fn mcp_client(&self, target: Value, options: Option<Value>) -> napi::Result<JsMcpClient> {
        let target = McpTarget::from_value(target).map_err(|e| invalid("MCP server", e))?;
        let mut options = match options.map(|o| keys::from_js(o, shape::MCP_CLIENT_OPTIONS)) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(invalid("MCP client options", "must be an object")),
        };
        if let Some(Value::Object(tools)) = options.get_mut("tools") {
            for policy in tools.values_mut() {
                *policy = keys::from_js(std::mem::take(policy), shape::MCP_POLICY);
            }
        }
        let options = McpClientOptions::from_value(Value::Object(options))
            .map_err(|e| invalid("MCP client options", e))?;
        Ok(JsMcpClient {
            engine: self.core(),
            target,
            options,
            client: Arc::default(),
        })
    }
}
