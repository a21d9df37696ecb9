//! An MCP server's tool as a toolbridge [`Tool`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::types::ToolSpec;

use crate::content;
use crate::server::Server;

/// A backstop beyond the call timeout: the toolbox stops the call at the timeout itself (with the
/// seed's timed-out sentence); this only bounds calls made outside a toolbox.
const BACKSTOP: Duration = Duration::from_secs(1);

pub struct McpTool {
    spec: ToolSpec,
    remote: String,
    /// The server annotated the tool `readOnlyHint: true`.
    read_only: bool,
    server: Arc<Server>,
}

impl McpTool {
    pub(crate) fn new(
        spec: ToolSpec,
        remote: String,
        read_only: bool,
        server: Arc<Server>,
    ) -> Self {
        McpTool {
            spec,
            remote,
            read_only,
            server,
        }
    }

    /// Every current tool of `server`, in its order.
    pub(crate) fn all_of(server: &Arc<Server>) -> Vec<Arc<McpTool>> {
        server
            .tools()
            .into_iter()
            .map(|t| {
                Arc::new(McpTool::new(
                    t.spec,
                    t.remote,
                    t.read_only,
                    Arc::clone(server),
                ))
            })
            .collect()
    }

    /// Whether the server annotated the tool read-only (`readOnlyHint: true`).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &str {
        self.server.name()
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, arguments: Value, context: ToolContext) -> ToolFuture {
        let server = Arc::clone(&self.server);
        let remote = self.remote.clone();
        Box::pin(async move {
            let arguments = match arguments {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            let limit = server.config().call_timeout() + BACKSTOP;
            let result = tokio::select! {
                result = server.call(&remote, arguments, limit) => result?,
                () = context.cancel.cancelled() => {
                    return Err(ToolError::internal("MCP call cancelled"));
                }
            };
            let dir = content::output_dir(context.workspace.as_deref());
            let text = content::render(&result, server.name(), &dir).await;
            if result.is_error == Some(true) {
                Err(ToolError::Tool(text))
            } else {
                Ok(text)
            }
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.server.config().call_timeout())
    }

    /// By the server's `approval` setting: with `annotations` (the default) every tool not
    /// annotated read-only requires approval, so a write goes through `[agent.approvals]`.
    fn requires_approval(&self) -> bool {
        self.server
            .config()
            .approval
            .requires_approval(self.read_only)
    }
}
