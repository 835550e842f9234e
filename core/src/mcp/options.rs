//! The options of an MCP server and of an MCP client, as data: the one parser every binding
//! hands its options to (snake_case keys; unknown keys refused with the key named).

use crate::caller::Caller;
use crate::policy::Policy;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Largest request body the HTTP server reads by default: 4 MiB. A tool's arguments are
/// limited to 1 MiB further in (`Limits`), so this only keeps a hostile body out of memory.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How an engine's tools are served over MCP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServeOptions {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// Instructions for the model, sent at initialization.
    pub instructions: Option<String>,
    /// The caller over stdio, and over HTTP when there is no auth hook and no `tokens`.
    pub caller: Caller,
    /// Ask the user through elicitation, when the client supports it, for the fields a call
    /// `needs` and for approvals; otherwise the envelope goes back as the result.
    pub elicitation: bool,
    /// Wall-time budget of one `tools/call`, in milliseconds (the tool's timeout still applies).
    pub deadline_ms: Option<u64>,
    /// HTTP: the address to listen on. Loopback by default; any other address needs an
    /// auth hook or `tokens`.
    pub bind: String,
    /// HTTP: the path of the MCP endpoint.
    pub path: String,
    /// HTTP: `Host` values accepted besides loopback names (DNS rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// HTTP: browser origins allowed besides this machine's own (`http://localhost:*`,
    /// `http://127.0.0.1:*`, `http://[::1]:*`), e.g. `"https://app.example.com:443"`. A request
    /// carrying any other `Origin` is refused (DNS rebinding protection).
    pub allowed_origins: Vec<String>,
    /// HTTP: the largest request body read, in bytes; larger ones get `413`.
    pub max_body_bytes: usize,
    /// HTTP: bearer tokens, each standing for one caller (used when no auth hook is given).
    pub tokens: HashMap<String, Caller>,
}

impl Default for McpServeOptions {
    fn default() -> Self {
        McpServeOptions {
            name: "tooljig".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            caller: Caller::default(),
            elicitation: true,
            deadline_ms: None,
            bind: "127.0.0.1:0".into(),
            path: "/mcp".into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            tokens: HashMap::new(),
        }
    }
}

impl McpServeOptions {
    /// Reads options from JSON (`null` = defaults).
    pub fn from_value(value: Value) -> Result<Self, String> {
        if value.is_null() {
            return Ok(Self::default());
        }
        serde_json::from_value(value).map_err(|e| format!("MCP server options: {e}"))
    }
}

/// How an MCP server's tools are registered into an engine.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpClientOptions {
    /// Put before each tool's name (`"files_"` makes `read` into `files_read`), so two
    /// servers' tools cannot collide. Names are made safe for every provider.
    pub prefix: String,
    /// The policy of every tool of this server (timeout, access, approval, limits, audit).
    pub policy: Policy,
    /// Policies of single tools, by the server's name for them; they replace `policy`.
    pub tools: BTreeMap<String, Policy>,
    /// Only these tools (the server's names); all of them when unset.
    pub include: Option<Vec<String>>,
    /// Take the server's annotations as the policy's defaults (a read-only tool becomes
    /// `effect: read`, one marked not destructive and idempotent is retried freely). Only for
    /// servers the app trusts: annotations are the server's claims.
    pub trusted: bool,
    /// Largest JSON response accepted from an HTTP server, in bytes.
    pub max_response_bytes: Option<usize>,
    /// How long connecting (and initializing) may take, in milliseconds (10 s by default): a
    /// command that never speaks MCP, or prints something else, fails instead of hanging.
    pub connect_timeout_ms: u64,
}

impl Default for McpClientOptions {
    fn default() -> Self {
        McpClientOptions {
            prefix: String::new(),
            policy: Policy::default(),
            tools: BTreeMap::new(),
            include: None,
            trusted: false,
            max_response_bytes: None,
            connect_timeout_ms: 10_000,
        }
    }
}

impl McpClientOptions {
    /// Reads options from JSON (`null` = defaults).
    pub fn from_value(value: Value) -> Result<Self, String> {
        if value.is_null() {
            return Ok(Self::default());
        }
        serde_json::from_value(value).map_err(|e| format!("MCP client options: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_read_from_data_and_refuse_unknown_keys() {
        let o = McpServeOptions::from_value(
            json!({"bind": "0.0.0.0:9000", "tokens": {"t": {"principal": "ada"}}}),
        )
        .unwrap();
        assert_eq!(o.bind, "0.0.0.0:9000");
        assert_eq!(o.path, "/mcp");
        assert!(o.elicitation);
        assert_eq!(o.tokens["t"].principal.as_deref(), Some("ada"));
        let e = McpServeOptions::from_value(json!({"bnd": "x"})).unwrap_err();
        assert!(e.contains("unknown field `bnd`"), "{e}");
        let c =
            McpClientOptions::from_value(json!({"prefix": "fs_", "policy": {"timeout_ms": 500}}))
                .unwrap();
        assert_eq!(c.policy.timeout_ms, Some(500));
        assert!(McpClientOptions::from_value(json!({"prefx": 1})).is_err());
    }
}
