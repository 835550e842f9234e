//! Another MCP server's tools, run by an engine under its guardrails.
//!
//! [`McpClient::connect`] starts a server (a command speaking stdio) or reaches one
//! (a Streamable HTTP URL with headers), and [`McpClient::register`] puts its tools into an
//! engine under a prefix and the app's policy. A call then takes the engine's whole path
//! (access, approval, rate limits, audit, ...) and its handler forwards it: the tool's timeout
//! and the batch's cancellation cancel the request on the server, and `structuredContent` is
//! checked against the tool's `outputSchema` in step 10 like any handler's output. When the
//! server says its tools changed, the registry follows. A server that died gives calls a
//! retryable `unavailable` error until [`McpClient::reconnect`] brings it back.

use super::options::McpClientOptions;
use super::{McpError, wire};
use crate::engine::Engine;
use crate::envelope::ToolError;
use crate::error_code::ErrorCode;
use crate::handler::{BoxFuture, Handler, HandlerError, HandlerResult, ToolContext};
use crate::spec::ToolSpec;
use crate::tool::Tool;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceError};
use rmcp::{ClientHandler, ServiceExt};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

/// Where an MCP server is. In JSON: `{"command": ["node", "server.mjs"], "env": {...},
/// "cwd": "..."}` or `{"url": "http://...", "headers": {"authorization": "Bearer ..."}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum McpTarget {
    /// A program started as a child process, speaking MCP over its stdin and stdout.
    Command {
        /// The program and its arguments.
        command: Vec<String>,
        /// Environment variables set for it (added to this process's own).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Its working directory.
        #[serde(default)]
        cwd: Option<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (`authorization`, ...).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl McpTarget {
    /// Reads a target from JSON.
    pub fn from_value(value: Value) -> Result<Self, McpError> {
        serde_json::from_value(value).map_err(|_| {
            McpError::new(
                "an MCP server is {\"command\": [program, ...args], \"env\"?, \"cwd\"?} or \
                 {\"url\": \"http://...\", \"headers\"?}",
            )
        })
    }
}

type Running = RunningService<RoleClient, Listener>;

/// A connection to one MCP server, whose tools engines can run. The tools it registers hold
/// it, so the app need not: the connection closes (a started command is stopped) on
/// [`McpClient::close`], or once no engine has its tools and the app holds no `Arc` of it.
pub struct McpClient {
    target: McpTarget,
    options: McpClientOptions,
    running: tokio::sync::Mutex<Option<Running>>,
    peer: Mutex<Option<Peer<RoleClient>>>,
    /// Engines its tools are registered in, and under which names.
    engines: Mutex<Vec<(Weak<Engine>, Vec<String>)>>,
}

impl McpClient {
    /// Connects (starting the command, or opening the HTTP session) and initializes.
    pub async fn connect(
        target: McpTarget,
        options: McpClientOptions,
    ) -> Result<Arc<McpClient>, McpError> {
        let client = Arc::new(McpClient {
            target,
            options,
            running: tokio::sync::Mutex::new(None),
            peer: Mutex::new(None),
            engines: Mutex::new(Vec::new()),
        });
        client.reconnect().await?;
        Ok(client)
    }

    /// Connects again: after the server died, or to a restarted one. The old connection is
    /// closed first; registered tools keep their names and use the new connection.
    pub async fn reconnect(self: &Arc<Self>) -> Result<(), McpError> {
        let mut running = self.running.lock().await;
        if let Some(mut old) = running.take() {
            let _ = old.close().await;
        }
        let listener = Listener {
            client: Arc::downgrade(self),
        };
        let connecting = async {
            match &self.target {
                McpTarget::Command { command, env, cwd } => {
                    let Some((program, args)) = command.split_first() else {
                        return Err(McpError::new("an MCP server command cannot be empty"));
                    };
                    let mut cmd = tokio::process::Command::new(program);
                    cmd.args(args).envs(env);
                    if let Some(cwd) = cwd {
                        cmd.current_dir(cwd);
                    }
                    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
                        .stderr(std::process::Stdio::inherit())
                        .spawn()
                        .map_err(|e| McpError::new(format!("cannot start {program}: {e}")))?;
                    listener.serve(transport).await.map_err(initialize_failed)
                }
                McpTarget::Http { url, headers } => {
                    if rustls::crypto::CryptoProvider::get_default().is_none() {
                        // Lost a race with another thread installing one: theirs serves as well.
                        let _ = rustls::crypto::ring::default_provider().install_default();
                    }
                    let config = http_config(url, headers, &self.options)?;
                    let transport =
                        rmcp::transport::StreamableHttpClientTransport::from_config(config);
                    listener.serve(transport).await.map_err(initialize_failed)
                }
            }
        };
        let limit = std::time::Duration::from_millis(self.options.connect_timeout_ms);
        let service = tokio::time::timeout(limit, connecting)
            .await
            .map_err(|_| {
                McpError::new(format!(
                    "MCP server did not initialize within {} ms",
                    self.options.connect_timeout_ms
                ))
            })??;
        *lock(&self.peer) = Some(service.peer().clone());
        *running = Some(service);
        Ok(())
    }

    /// The server's tools as the engine would register them (prefixed, with the policy).
    pub async fn specs(&self) -> Result<Vec<ToolSpec>, McpError> {
        Ok(self
            .listed()
            .await?
            .into_iter()
            .map(|(spec, _)| spec)
            .collect())
    }

    /// Each tool's spec, with the server's own name for it.
    async fn listed(&self) -> Result<Vec<(ToolSpec, String)>, McpError> {
        let peer = self.peer().map_err(|e| McpError::new(e.message))?;
        let tools = peer
            .list_all_tools()
            .await
            .map_err(|e| McpError::new(format!("tools/list failed: {e}")))?;
        let o = &self.options;
        Ok(tools
            .iter()
            .filter(|t| {
                o.include
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| n == t.name.as_ref()))
            })
            .map(|t| {
                let (policy, trusted) = match o.tools.get(t.name.as_ref()) {
                    Some(own) => (own.clone(), false),
                    None => (o.policy.clone(), o.trusted),
                };
                (
                    wire::spec_of(t, &o.prefix, policy, trusted),
                    t.name.to_string(),
                )
            })
            .collect())
    }

    /// Registers the server's tools into `engine`; returns their names there. Refused as a
    /// whole when one cannot be registered (a name taken, a schema that does not compile).
    pub async fn register(self: &Arc<Self>, engine: &Arc<Engine>) -> Result<Vec<String>, McpError> {
        let specs = self.listed().await?;
        let names = self.install(engine, specs, &[])?;
        lock(&self.engines).push((Arc::downgrade(engine), names.clone()));
        Ok(names)
    }

    /// Replaces `old` names in `engine` by `specs`.
    fn install(
        self: &Arc<Self>,
        engine: &Engine,
        specs: Vec<(ToolSpec, String)>,
        old: &[String],
    ) -> Result<Vec<String>, McpError> {
        for name in old {
            engine.registry().unregister(name);
        }
        let mut names: Vec<String> = Vec::new();
        for (spec, remote) in specs {
            let name = spec.name.clone();
            let handler = Forward {
                client: self.clone(),
                remote,
            };
            if let Err(e) = engine.register(Tool::new(spec, Arc::new(handler))) {
                for done in names.iter() {
                    engine.registry().unregister(done);
                }
                return Err(McpError::new(e.to_string()));
            }
            names.push(name);
        }
        Ok(names)
    }

    /// Reads the tool list again and brings every engine's registry in step.
    pub async fn refresh(self: &Arc<Self>) -> Result<(), McpError> {
        let specs = self.listed().await?;
        let engines = std::mem::take(&mut *lock(&self.engines));
        let mut kept = Vec::new();
        let mut failed = None;
        for (weak, old) in engines {
            let Some(engine) = weak.upgrade() else {
                continue;
            };
            match self.install(&engine, specs.clone(), &old) {
                Ok(names) => kept.push((weak, names)),
                Err(e) => failed = Some(e),
            }
        }
        lock(&self.engines).extend(kept);
        failed.map_or(Ok(()), Err)
    }

    /// Closes the connection (a started command is stopped). Registered tools stay and answer
    /// `unavailable` until [`McpClient::reconnect`].
    pub async fn close(&self) {
        lock(&self.peer).take();
        if let Some(mut running) = self.running.lock().await.take() {
            let _ = running.close().await;
        }
    }

    fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        match &*lock(&self.peer) {
            Some(peer) if !peer.is_transport_closed() => Ok(peer.clone()),
            _ => Err(unavailable("the MCP server is not connected")),
        }
    }

    async fn call(&self, tool: &str, arguments: Value, ctx: &ToolContext) -> HandlerResult {
        let peer = self.peer()?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // Dropping the request (timeout, cancellation) sends `notifications/cancelled`.
        let answer = tokio::select! {
            answer = peer.call_tool(params) => answer,
            _ = ctx.cancel.cancelled() => {
                return Err(HandlerError::tool(ErrorCode::Cancelled, "the call was cancelled"));
            }
        };
        match answer {
            Ok(result) => wire::outcome(result),
            Err(ServiceError::McpError(e)) => Err(HandlerError::Tool(
                ToolError::new(ErrorCode::ExternalApiError, e.message.to_string()).retryable(false),
            )),
            Err(e) => Err(HandlerError::Tool(unavailable(&format!(
                "the MCP server did not answer: {e}"
            )))),
        }
    }
}

fn initialize_failed(e: impl std::fmt::Display) -> McpError {
    McpError::new(format!("MCP server did not initialize: {e}"))
}

fn unavailable(message: &str) -> ToolError {
    ToolError::new(ErrorCode::Unavailable, message).retryable(true)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn http_config(
    url: &str,
    headers: &BTreeMap<String, String>,
    options: &McpClientOptions,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, McpError>
{
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    for (name, value) in headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| McpError::new(format!("header {name:?}: {e}")))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|e| McpError::new(format!("header {name}: {e}")))?;
        config.custom_headers.insert(name, value);
    }
    if let Some(bytes) = options.max_response_bytes {
        config.max_json_response_size = bytes;
    }
    Ok(config)
}

/// Forwards a call to the server's tool. It holds the client, so the connection lasts as long
/// as an engine has its tools, whether or not the app kept the client: an app that registers a
/// server's tools and lets go of the handle still has working tools, and the connection (a
/// started command with it) closes once no engine has them and the app holds no handle.
struct Forward {
    client: Arc<McpClient>,
    remote: String,
}

impl Handler for Forward {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let client = self.client.clone();
        let remote = self.remote.clone();
        Box::pin(async move { client.call(&remote, args, &ctx).await })
    }
}

/// The client's side of the session: follows `tools/list_changed`.
struct Listener {
    client: Weak<McpClient>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        // The newest version that still has `initialize` (2026-07-28 has none), which every
        // server written since late 2025 speaks.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tooljig", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(client) = self.client.upgrade() {
            // Not awaited here: the refresh asks the server, whose answer this task delivers.
            tokio::spawn(async move {
                if let Err(e) = client.refresh().await {
                    tracing::warn!(error = %e, "refreshing an MCP server's tools failed");
                }
            });
        }
    }
}
