//! MCP servers: `[[mcp_servers]]` plus the caller's `NAME=COMMAND [ARGS…]` flags, started before
//! agents are built and shut down at the end.

use std::sync::Arc;

use toolbridge_agent::{DynamicTools, Toolbox};
use toolbridge_mcp::{parse_flag, McpManager, McpServerConfig};

use crate::error::RuntimeError;

/// Starts the configured servers on the caller's async runtime (they live on it); a server that
/// does not start is a warning on stderr, not an error.
pub async fn start(
    configured: &[McpServerConfig],
    flags: &[String],
) -> Result<Arc<McpManager>, RuntimeError> {
    let mut servers = configured.to_vec();
    for flag in flags {
        servers.push(parse_flag(flag).map_err(RuntimeError::McpFlag)?);
    }
    if servers.is_empty() {
        return Ok(Arc::new(McpManager::empty()));
    }
    let manager = McpManager::start(&servers)
        .await
        .map_err(RuntimeError::Mcp)?;
    for failure in manager.failures() {
        eprintln!(
            "toolbridge: warning: MCP server `{}` did not start: {}",
            failure.server, failure.error
        );
    }
    Ok(Arc::new(manager))
}

/// Offers the servers' tools in the toolbox (after the built-in tools; the list follows the
/// servers' list_changed notifications between rounds).
pub fn add_to(toolbox: &mut Toolbox, manager: &Arc<McpManager>) {
    if !manager.is_empty() {
        toolbox.add_dynamic(Arc::clone(manager) as Arc<dyn DynamicTools>);
    }
}
