//! MCP both ways (feature `mcp`), with the official SDK (`rmcp`).
//!
//! - **Serve** an engine's tools to any MCP client ([`McpServer`]): over stdio or Streamable
//!   HTTP. `tools/list` shows what the caller may use ([`crate::Engine::specs_for`]: hidden
//!   arguments removed, annotations derived from the policy); `tools/call` runs the whole path
//!   of one call, audit included, and its envelope becomes the MCP result ([`wire`]). A
//!   `needs` envelope or a pending approval is asked of the user through elicitation when the
//!   client supports it ([`elicit`]).
//! - **Use** any MCP server's tools under the engine's guardrails ([`McpClient`]): its tools
//!   are registered under a prefix with the app's policy, calls forward with timeout and
//!   cancellation, `structuredContent` is checked against the tool's `outputSchema` like any
//!   handler's output, and `tools/list_changed` refreshes the registry.
//!
//! Who calls comes from the transport: stdio uses the caller the app gives; HTTP asks the
//! app's [`crate::HttpAuth`] hook (or a table of bearer tokens) for each request. See `docs/mcp.md`.

pub mod client;
pub mod elicit;
pub mod options;
mod progress;
pub mod server;
pub mod wire;

pub use client::{McpClient, McpTarget};
pub use options::{McpClientOptions, McpServeOptions};
pub use server::{McpHttpServer, McpServer};

/// What went wrong setting up an MCP server or client: one line an app can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct McpError(pub String);

impl McpError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        McpError(message.into())
    }
}
