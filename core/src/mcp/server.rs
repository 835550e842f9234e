//! An engine's tools as an MCP server, over stdio, any reader/writer pair, or Streamable HTTP.

use super::options::McpServeOptions;
use super::progress::with_progress;
use super::{McpError, elicit, wire};
use crate::batch::BatchOptions;
use crate::call::{Call, CallResult, CallStatus};
use crate::caller::Caller;
use crate::engine::Engine;
use crate::envelope::Envelope;
use crate::handler::HostData;
use crate::http_auth::{BearerTokens, HttpAuth, HttpRequest};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How many times one `tools/call` asks the user for missing fields before it answers with
/// the `needs` envelope.
const NEEDS_ROUNDS: usize = 3;

/// Serves an engine's tools over MCP. Cheap to clone; every connection or HTTP session it
/// serves shares the engine.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

struct Shared {
    engine: Arc<Engine>,
    options: McpServeOptions,
    auth: Option<Arc<dyn HttpAuth>>,
    host: Option<HostData>,
}

impl McpServer {
    /// A server of `engine`'s tools.
    pub fn new(engine: Arc<Engine>, options: McpServeOptions) -> Self {
        McpServer {
            shared: Arc::new(Shared {
                engine,
                options,
                auth: None,
                host: None,
            }),
        }
    }

    /// Maps each HTTP request to its caller (see [`HttpAuth`]); replaces `options.tokens`.
    pub fn with_auth(self, auth: Arc<dyn HttpAuth>) -> Self {
        self.rebuild(|s| s.auth = Some(auth))
    }

    /// Handed to handlers and the auth hook as their host (a binding's event loop).
    pub fn with_host(self, host: HostData) -> Self {
        self.rebuild(|s| s.host = Some(host))
    }

    fn rebuild(self, change: impl FnOnce(&mut Shared)) -> Self {
        let s = &self.shared;
        let mut shared = Shared {
            engine: s.engine.clone(),
            options: s.options.clone(),
            auth: s.auth.clone(),
            host: s.host.clone(),
        };
        change(&mut shared);
        McpServer {
            shared: Arc::new(shared),
        }
    }

    /// Serves one client over a reader and a writer (newline-delimited JSON-RPC) until it
    /// closes them. Its calls run for `options.caller`, in a session of their own.
    pub async fn serve_io<R, W>(&self, read: R, write: W) -> Result<(), McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let mut caller = self.shared.options.caller.clone();
        caller
            .session
            .get_or_insert_with(|| crate::random_id::uuid().to_string());
        let session = Session {
            shared: self.shared.clone(),
            caller: Some(Arc::new(caller)),
        };
        let running = session
            .serve((read, write))
            .await
            .map_err(|e| McpError::new(format!("MCP initialization failed: {e}")))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| McpError::new(format!("MCP server stopped: {e}")))
    }

    /// Serves the client that started this process, over its stdin and stdout.
    pub async fn serve_stdio(&self) -> Result<(), McpError> {
        let (read, write) = rmcp::transport::io::stdio();
        self.serve_io(read, write).await
    }

    /// Listens for Streamable HTTP on `options.bind` and serves until the returned handle is
    /// stopped. Refused when the address is not loopback and nothing authenticates callers.
    pub async fn serve_http(&self) -> Result<McpHttpServer, McpError> {
        let options = &self.shared.options;
        let addr: SocketAddr = options
            .bind
            .parse()
            .map_err(|e| McpError::new(format!("bind {:?}: {e}", options.bind)))?;
        let auth = self.shared.auth.clone().or_else(|| {
            (!options.tokens.is_empty())
                .then(|| Arc::new(BearerTokens(options.tokens.clone())) as Arc<dyn HttpAuth>)
        });
        if !addr.ip().is_loopback() && auth.is_none() {
            return Err(McpError::new(format!(
                "serving MCP on {addr} needs an auth hook or bearer tokens: anyone who can reach \
                 the address could run the tools"
            )));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| McpError::new(format!("bind {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| McpError::new(format!("bind {addr}: {e}")))?;
        let stop = CancellationToken::new();
        let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
        if !addr.ip().is_unspecified() {
            hosts.push(addr.ip().to_string());
        }
        hosts.extend(options.allowed_hosts.iter().cloned());
        // Pages served from this machine may call; a site rebound to 127.0.0.1 keeps its own
        // origin, and is refused.
        let mut origins = vec![
            "http://localhost:*".to_string(),
            "http://127.0.0.1:*".into(),
            "http://[::1]:*".into(),
        ];
        origins.extend(options.allowed_origins.iter().cloned());
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_cancellation_token(stop.child_token());
        let shared = self.shared.clone();
        let service = StreamableHttpService::new(
            move || {
                Ok(Session {
                    shared: shared.clone(),
                    caller: None,
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let mut router = axum::Router::new().route_service(&options.path, service);
        if auth.is_some() {
            let gate = Arc::new(Gate {
                auth,
                host: self.shared.host.clone(),
            });
            router = router.layer(axum::middleware::from_fn_with_state(gate, authenticate));
        }
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await });
            if let Err(e) = served.await {
                tracing::error!(error = %e, "the MCP HTTP server stopped");
            }
        });
        let path = &options.path;
        Ok(McpHttpServer {
            url: format!("http://{local}{path}"),
            addr: local,
            stop,
            task,
        })
    }
}

/// A running Streamable HTTP server. Dropping it leaves it running; [`McpHttpServer::stop`]
/// ends it.
pub struct McpHttpServer {
    url: String,
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl McpHttpServer {
    /// The endpoint's URL, e.g. `http://127.0.0.1:38211/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address it listens on (the port chosen when `bind` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Fires to stop the server; for a binding that stops it from elsewhere.
    pub fn stopper(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Stops accepting, ends every session (their open streams close), and waits up to five
    /// seconds for connections to finish.
    pub async fn stop(self) {
        self.stop.cancel();
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(5), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

/// What the HTTP layer needs to authenticate a request.
struct Gate {
    auth: Option<Arc<dyn HttpAuth>>,
    host: Option<HostData>,
}

/// Asks the auth hook for the request's caller, which rides in the request's extensions to
/// the MCP session (`Session::caller`); a refusal is `401` with a `Bearer` challenge.
async fn authenticate(
    axum::extract::State(gate): axum::extract::State<Arc<Gate>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let Some(auth) = &gate.auth {
        // The last one that is text, as `HttpRequest::new` would keep it.
        let authorization = request.headers().get_all(http::header::AUTHORIZATION);
        let mut authorization = authorization.iter().rev();
        let authorization = authorization.find_map(|v| std::str::from_utf8(v.as_bytes()).ok());
        let answer = match auth.authenticate_header(authorization) {
            Some(answer) => answer,
            None => {
                let headers = request.headers().iter();
                let seen = HttpRequest::new(
                    request.method().as_str(),
                    request.uri().path(),
                    headers.map(|(k, v)| (k.as_str(), v.as_bytes())),
                );
                auth.authenticate(seen, gate.host.clone()).await
            }
        };
        match answer {
            Ok(caller) => {
                request.extensions_mut().insert(caller);
            }
            Err(why) => {
                let challenge = [(http::header::WWW_AUTHENTICATE, "Bearer")];
                return (http::StatusCode::UNAUTHORIZED, challenge, why).into_response();
            }
        }
    }
    next.run(request).await
}

/// One client's connection (stdio) or one HTTP session's handler.
#[derive(Clone)]
struct Session {
    shared: Arc<Shared>,
    /// A stdio connection's caller, its session set (the app's, or one made for the
    /// connection): every call runs for it, shared rather than copied a call. HTTP requests
    /// bring theirs, and their session in a header.
    caller: Option<Arc<Caller>>,
}

impl Session {
    /// Who this request runs for: the caller the auth hook found for its HTTP request (taken
    /// out of the request, which needs it no more, rather than copied), else the app's
    /// caller; its session is the MCP session unless the caller names one.
    fn caller(&self, context: &mut RequestContext<RoleServer>) -> Arc<Caller> {
        let mut parts = context.extensions.get_mut::<http::request::Parts>();
        if let (None, Some(caller)) = (&parts, &self.caller) {
            return caller.clone();
        }
        let mut caller = parts
            .as_mut()
            .and_then(|p| p.extensions.remove::<Caller>())
            .unwrap_or_else(|| self.shared.options.caller.clone());
        if caller.session.is_none() {
            caller.session = parts
                .and_then(|p| p.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
        }
        Arc::new(caller)
    }

    fn batch_options(&self, context: &RequestContext<RoleServer>) -> BatchOptions {
        BatchOptions {
            cancel: Some(context.ct.clone()),
            host: self.shared.host.clone(),
            deadline_ms: self.shared.options.deadline_ms,
            ..BatchOptions::default()
        }
    }

    /// Runs one call through the engine; asks the user for missing fields and approval when
    /// the client can be asked.
    async fn call(
        &self,
        tool: &str,
        mut arguments: Value,
        caller: Arc<Caller>,
        context: &RequestContext<RoleServer>,
    ) -> Answer {
        let engine = &self.shared.engine;
        let ask = self.shared.options.elicitation && elicit::supported(&context.peer);
        let mut id = format!("mcp-{}", context.id);
        let mut asked = 0;
        loop {
            // Kept for another round only when the client may be asked.
            let (id_now, arguments_now) = if ask {
                (id.clone(), arguments.clone())
            } else {
                (std::mem::take(&mut id), std::mem::take(&mut arguments))
            };
            let call = Call::new(id_now, tool, arguments_now);
            let options = self.batch_options(context);
            let out = with_progress(context, options, |options| {
                engine.run(vec![call], caller.clone(), options)
            })
            .await;
            let run_id = out.run_id;
            let Some(result) = out.results.into_iter().next() else {
                return Envelope::error(
                    crate::ErrorCode::InternalError,
                    "the engine returned no result",
                )
                .into();
            };
            if !ask {
                return result.into();
            }
            if result.status == CallStatus::PendingApproval {
                // Boxed, like asking for fields below: rare, and large inline.
                return Box::pin(self.approve(result, run_id, &caller, context)).await;
            }
            let Envelope::Needs(fields) = &result.envelope else {
                return result.into();
            };
            let spec = engine
                .registry()
                .snapshot()
                .get(tool)
                .map(|t| t.spec.clone());
            let answered = match spec {
                Some(spec) if asked < NEEDS_ROUNDS => {
                    Box::pin(elicit::fields(&context.peer, &spec, fields, &context.ct)).await
                }
                _ => None,
            };
            let (Some(answered), Value::Object(args)) = (answered, &mut arguments) else {
                return result.into();
            };
            args.extend(answered);
            asked += 1;
        }
    }

    /// Asks the user to decide a pending call, records the decision as theirs, and resumes
    /// the run; dismissed, the pending envelope goes back.
    async fn approve(
        &self,
        result: CallResult,
        run_id: Option<String>,
        caller: &Caller,
        context: &RequestContext<RoleServer>,
    ) -> Answer {
        let engine = &self.shared.engine;
        let (Some(info), Some(run_id)) = (result.approval.as_deref(), run_id) else {
            return result.into();
        };
        let Some(approval_id) = info.id.clone() else {
            return result.into();
        };
        let verdict = elicit::approval(
            &context.peer,
            &result.tool,
            result.arguments.as_ref(),
            info,
            &context.ct,
        )
        .await;
        let hash = info.arguments_hash.clone();
        let decided = match verdict {
            elicit::Verdict::Dismissed => return result.into(),
            elicit::Verdict::Approve => engine.approve(&approval_id, &hash, caller, None).await,
            elicit::Verdict::Reject(message) => {
                engine.reject(&approval_id, &hash, caller, message).await
            }
        };
        if let Err(refused) = decided {
            return Envelope::Error(refused).into();
        }
        match engine
            .resume_with(&run_id, self.batch_options(context))
            .await
        {
            Ok(out) => match out.results.into_iter().next() {
                Some(resumed) => resumed.into(),
                None => result.into(),
            },
            Err(refused) => Envelope::Error(refused).into(),
        }
    }
}

/// A `tools/call`'s outcome: its envelope and, when the tool shapes it (`to_model_output`, a
/// model output budget), what the model reads in place of the data.
struct Answer {
    envelope: Envelope,
    model_output: Option<Box<Value>>,
}

impl From<Envelope> for Answer {
    fn from(envelope: Envelope) -> Self {
        Answer {
            envelope,
            model_output: None,
        }
    }
}

impl From<CallResult> for Answer {
    fn from(result: CallResult) -> Self {
        Answer {
            envelope: result.envelope,
            model_output: result.model_output,
        }
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let options = &self.shared.options;
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(&options.name, &options.version));
        if let Some(instructions) = &options.instructions {
            config = config.with_instructions(instructions);
        }
        config
    }

    /// Follows the registry for this client: each change becomes `tools/list_changed`, until
    /// the client is gone.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.shared.engine.registry().changes();
        let peer = context.peer;
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        mut context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&mut context);
        let tools = self.shared.engine.specs_for(&caller);
        Ok(ListToolsResult::with_all_items(
            tools.iter().map(wire::tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self
            .shared
            .engine
            .registry()
            .snapshot()
            .get(&request.name)
            .is_none()
        {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let caller = self.caller(&mut context);
        // Boxed: rmcp runs every request in a task whose future is as large as the largest
        // handler's, and moves it whole as it spawns it; inline, this one made it 12 KB.
        let answer = Box::pin(self.call(&request.name, arguments, caller, &context)).await;
        Ok(wire::result(answer.envelope, answer.model_output.as_deref()).into())
    }
}
