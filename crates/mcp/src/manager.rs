//! All configured MCP servers: started concurrently, their tools offered to the agent as one
//! dynamic tool source, shut down together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbridge_agent::{DynamicTools, Tool};

use crate::config::{validate_all, ConfigError, McpServerConfig};
use crate::server::Server;
use crate::tool::McpTool;

/// A server that did not start; the others and the run go on without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartFailure {
    pub server: String,
    pub error: String,
}

/// A server that started, and how long it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    pub server: String,
    pub elapsed: Duration,
}

/// The running MCP servers.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
    failures: Vec<StartFailure>,
    started: Vec<Started>,
    version: Arc<AtomicU64>,
}

impl McpManager {
    /// Checks the configuration (bad or duplicate names are errors), then starts every enabled
    /// server at once, each within its start timeout. A server that fails is reported in
    /// [`McpManager::failures`] and left out.
    pub async fn start(configs: &[McpServerConfig]) -> Result<Self, ConfigError> {
        validate_all(configs)?;
        let version = Arc::new(AtomicU64::new(0));
        let starts = configs.iter().filter(|c| c.enabled).map(|config| {
            let server = Server::new(config.clone(), Arc::clone(&version));
            async move {
                let began = Instant::now();
                let outcome = server.start().await;
                (server, outcome, began.elapsed())
            }
        });
        let mut servers = Vec::new();
        let mut failures = Vec::new();
        let mut started = Vec::new();
        for (server, outcome, elapsed) in futures::future::join_all(starts).await {
            match outcome {
                Ok(()) => {
                    started.push(Started {
                        server: server.name().to_owned(),
                        elapsed,
                    });
                    servers.push(server);
                }
                Err(error) => {
                    tracing::warn!(server = %server.name(), %error, "MCP server did not start");
                    server.shutdown().await;
                    failures.push(StartFailure {
                        server: server.name().to_owned(),
                        error,
                    });
                }
            }
        }
        Ok(McpManager {
            servers,
            failures,
            started,
            version,
        })
    }

    /// No servers (nothing configured).
    pub fn empty() -> Self {
        McpManager {
            servers: Vec::new(),
            failures: Vec::new(),
            started: Vec::new(),
            version: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn failures(&self) -> &[StartFailure] {
        &self.failures
    }

    pub fn started(&self) -> &[Started] {
        &self.started
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The current tools, server by server in configuration order, each server's in its order.
    pub fn mcp_tools(&self) -> Vec<Arc<McpTool>> {
        self.servers.iter().flat_map(McpTool::all_of).collect()
    }

    /// The server an exposed tool name belongs to.
    pub fn server_of(&self, tool: &str) -> Option<&str> {
        self.servers.iter().find_map(|server| {
            server
                .tools()
                .iter()
                .any(|t| t.spec.name == tool)
                .then(|| server.name())
        })
    }

    /// The process id of a stdio server's current process (for tests and diagnostics).
    pub async fn pid(&self, server: &str) -> Option<u32> {
        match self.servers.iter().find(|s| s.name() == server) {
            Some(s) => s.pid().await,
            None => None,
        }
    }

    /// Stops every server (stdio processes are ended and reaped).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

impl DynamicTools for McpManager {
    fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.mcp_tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }
}
