//! A streamable HTTP server that a request names instead of the configuration (the Responses
//! API's `mcp` tool with a `server_url` the operator allow-listed): connected for that request
//! through an HTTP client the caller built (one that reaches only the addresses its SSRF guard
//! checked), its tools offered to that request's run. Each tool holds the connection; it closes
//! when the last of them is dropped.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::config::{validate_all, McpServerConfig};
use crate::server::Server;
use crate::tool::McpTool;

/// Connects within the configuration's start timeout and lists the tools, exposed as
/// `mcp__<name>__<tool>`. `config` must name a streamable HTTP server (`url`); `client` carries
/// every request to it.
pub async fn connect_remote(
    config: McpServerConfig,
    client: reqwest::Client,
) -> Result<Vec<Arc<McpTool>>, String> {
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
    Ok(McpTool::all_of(&server))
}
