//! Scripted handlers: the README's script table, implemented in Rust.

use super::vector::Script;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tooljig::{BoxFuture, ErrorCode, Handler, HandlerError, HandlerResult, ToolContext, ToolError};

/// Prefix of the panics scripts ask for; the runner's panic hook keeps them off stderr.
pub const SCRIPTED_PANIC: &str = "scripted panic: ";

/// Installs (once) a panic hook that silences scripted panics and passes every other panic
/// to the hook that was there before, so real failures still print.
fn quiet_scripted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            if !text.is_some_and(|t| t.starts_with(SCRIPTED_PANIC)) {
                previous(info);
            }
        }));
    });
}

/// Handler invocations per tool name, shared by the handlers of one vector.
#[derive(Debug, Default, Clone)]
pub struct Invocations(Arc<std::sync::Mutex<BTreeMap<String, Arc<AtomicU32>>>>);

impl Invocations {
    /// The counter of one tool (created at zero).
    pub fn counter(&self, tool: &str) -> Arc<AtomicU32> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tool.to_string()).or_default().clone()
    }

    /// How often the tool's handler was invoked.
    pub fn get(&self, tool: &str) -> u32 {
        self.counter(tool).load(Ordering::SeqCst)
    }
}

/// A handler that does what its script says.
pub struct ScriptedHandler {
    script: Script,
    calls: Arc<AtomicU32>,
}

impl ScriptedHandler {
    /// A handler for `script`, counting its invocations in `calls`.
    pub fn new(script: Script, calls: Arc<AtomicU32>) -> Self {
        ScriptedHandler { script, calls }
    }
}

impl Handler for ScriptedHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let script = self.script.clone();
        Box::pin(async move {
            if let Some(ms) = script.sleep_ms {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if script.fail_times.is_some_and(|n| ctx.attempt <= n) {
                return Err(HandlerError::tool(
                    ErrorCode::ExternalApiError,
                    "transient failure",
                ));
            }
            if let Some(v) = script.returns {
                return Ok(v);
            }
            if let Some(e) = script.error {
                let mut err = ToolError::new(e.code, e.message);
                if let Some(r) = e.retryable {
                    err = err.retryable(r);
                }
                return Err(HandlerError::Tool(err));
            }
            if let Some(fields) = script.needs {
                return Err(HandlerError::needs(fields));
            }
            if let Some(msg) = script.panic {
                quiet_scripted_panics();
                panic!("{SCRIPTED_PANIC}{msg}");
            }
            if script.hang.is_some() {
                std::future::pending::<()>().await;
            }
            Ok(args)
        })
    }
}
