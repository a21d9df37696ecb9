//! A streamable HTTP server that a request names instead of the configuration (the Responses
//! API's `mcp` tool with a `server_url` the operator allow-listed): connected for that request
//! through an HTTP client the caller built (one that reaches only the addresses its SSRF guard
//! checked), its tools offered to that request's run. The connection closes when the server
//! and its tools are dropped, or at [`RemoteServer::shutdown`].

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::config::{validate_all, McpServerConfig};
use crate::server::Server;
use crate::tool::McpTool;

/// A connected server a request named.
pub struct RemoteServer {
    server: Arc<Server>,
}

impl RemoteServer {
    /// Connects within the configuration's start timeout and lists the tools. `config` must
    /// name a streamable HTTP server (`url`); `client` carries every request to it.
    pub async fn connect(config: McpServerConfig, client: reqwest::Client) -> Result<Self, String> {
        validate_all(std::slice::from_ref(&config)).map_err(|e| e.to_string())?;
        if config.url.is_none() {
            return Err(format!(
                "MCP server `{}`: a remote server needs a `url`",
                config.name
            ));
        }
        // Nothing watches the tool list of a one-request connection: its own version counter.
        let server = Server::with_http_client(config, client, Arc::new(AtomicU64::new(0)));
        if let Err(e) = server.start().await {
            server.shutdown().await;
            return Err(e);
        }
        Ok(RemoteServer { server })
    }

    pub fn name(&self) -> &str {
        self.server.name()
    }

    /// The server's tools, exposed as `mcp__<name>__<tool>`.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        McpTool::all_of(&self.server)
    }

    /// Closes the connection.
    pub async fn shutdown(&self) {
        self.server.shutdown().await;
    }
}
