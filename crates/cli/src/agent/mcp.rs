//! MCP servers for `run`, `chat` and `tools`: `[[mcp_servers]]` from toolbridge.toml plus
//! `--mcp NAME=COMMAND [ARGS…]`, started before the agent is built and shut down at the end.

use std::sync::Arc;

use anyhow::Context;
use toolbridge_agent::{DynamicTools, Toolbox};
use toolbridge_mcp::{parse_flag, McpManager, McpServerConfig};

/// Starts the configured servers on `runtime` (they live on it); a server that does not start is
/// a warning on stderr, not an error.
pub fn start(
    runtime: &tokio::runtime::Runtime,
    configured: &[McpServerConfig],
    flags: &[String],
) -> anyhow::Result<Arc<McpManager>> {
    let mut servers = configured.to_vec();
    for flag in flags {
        servers.push(parse_flag(flag)?);
    }
    if servers.is_empty() {
        return Ok(Arc::new(McpManager::empty()));
    }
    let manager = runtime
        .block_on(McpManager::start(&servers))
        .context("MCP servers")?;
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

/// Ends the servers (stdio processes are stopped and reaped).
pub fn shutdown(runtime: &tokio::runtime::Runtime, manager: &McpManager) {
    runtime.block_on(manager.shutdown());
}
