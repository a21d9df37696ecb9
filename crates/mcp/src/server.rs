//! One MCP server: starting it (stdio child process or streamable HTTP), its current tool list,
//! calls, restart after a crash, and shutdown.
//!
//! A failed transport marks the connection broken; the next call starts the server again
//! (re-initializes and re-lists its tools) before calling. A server that crashes between calls
//! is noticed the same way (its transport is closed).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use toolbridge_agent::ToolError;
use toolbridge_protocol::types::ToolSpec;

use crate::config::{McpServerConfig, Transport};
use crate::names::exposed_names;
use crate::stderr::{self, StderrTail};

/// How long shutting one server down may take (rmcp closes stdin, waits, sends SIGTERM, waits,
/// then kills).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a failed start waits for the rest of the server's stderr.
const STDERR_SETTLE: Duration = Duration::from_secs(2);

/// One tool of a server: the name the server knows, the spec the model sees, and whether the
/// server annotated it `readOnlyHint: true`.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    pub remote: String,
    pub spec: ToolSpec,
    pub read_only: bool,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    pid: Option<u32>,
    generation: u64,
}

pub struct Server {
    config: McpServerConfig,
    /// The HTTP client a streamable HTTP server is reached through, when the caller chose it (a
    /// server a request named: its client connects only to the addresses the SSRF guard
    /// checked); `None` builds rmcp's default client.
    http_client: Option<reqwest::Client>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    tools: Mutex<Vec<RemoteTool>>,
    /// Shared by every server of a manager; bumped when any tool list changes.
    version: Arc<AtomicU64>,
    generation: AtomicU64,
    /// Set once shut down: no restart after that.
    closed: std::sync::atomic::AtomicBool,
}

/// Receives the server's notifications; `list_changed` re-lists the tools.
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        let server = self.server.clone();
        // Re-listing is a request; it runs on its own task so the notification handler never
        // waits on the service loop that called it.
        tokio::spawn(async move {
            if let Some(server) = server.upgrade() {
                server.refresh_tools(&context.peer).await;
            }
        });
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("toolbridge", env!("CARGO_PKG_VERSION"));
        info
    }
}

impl Server {
    pub fn new(config: McpServerConfig, version: Arc<AtomicU64>) -> Arc<Self> {
        Self::build(config, None, version)
    }

    /// A streamable HTTP server reached through `client` (its connections, restarts included).
    pub fn with_http_client(
        config: McpServerConfig,
        client: reqwest::Client,
        version: Arc<AtomicU64>,
    ) -> Arc<Self> {
        Self::build(config, Some(client), version)
    }

    fn build(
        config: McpServerConfig,
        http_client: Option<reqwest::Client>,
        version: Arc<AtomicU64>,
    ) -> Arc<Self> {
        Arc::new(Server {
            config,
            http_client,
            connection: tokio::sync::Mutex::new(None),
            tools: Mutex::new(Vec::new()),
            version,
            generation: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The current tools.
    pub fn tools(&self) -> Vec<RemoteTool> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The process id of a stdio server's current process.
    pub async fn pid(&self) -> Option<u32> {
        self.connection.lock().await.as_ref().and_then(|c| c.pid)
    }

    /// Starts the server (within the start timeout) and lists its tools.
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        let mut slot = self.connection.lock().await;
        let connection = self.connect().await?;
        *slot = Some(connection);
        Ok(())
    }

    async fn connect(self: &Arc<Self>) -> Result<Connection, String> {
        let started = Instant::now();
        let limit = self.config.start_timeout();
        // A stdio server's last stderr lines, shown when the start fails.
        let tail = Arc::new(StderrTail::default());
        let connection = match tokio::time::timeout(limit, self.connect_inner(&tail)).await {
            Ok(result) => result?,
            Err(_) => {
                let message = format!(
                    "did not start within {} s (raise `start_timeout_secs` for this server if its first start downloads it)",
                    limit.as_secs()
                );
                return Err(match self.config.transport() {
                    Ok(Transport::Stdio { .. }) => tail.explain(&message),
                    _ => message,
                });
            }
        };
        tracing::info!(
            server = %self.config.name,
            elapsed_ms = started.elapsed().as_millis() as u64,
            tools = self.tools().len(),
            "MCP server started"
        );
        Ok(connection)
    }

    async fn connect_inner(self: &Arc<Self>, tail: &Arc<StderrTail>) -> Result<Connection, String> {
        let handler = Handler {
            server: Arc::downgrade(self),
        };
        let transport = self.config.transport().map_err(|e| e.to_string())?;
        let (service, pid) = match transport {
            Transport::Stdio { command, args } => {
                // Nothing of toolbridge's environment but the few inherited variables: it
                // holds the gateway's and the providers' keys.
                let env = self
                    .config
                    .child_environment(std::env::vars_os())
                    .map_err(|e| e.to_string())?;
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(env);
                if let Some(cwd) = &self.config.cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = CommandWrap::from(cmd);
                // Its own process group, so a launcher's children (npx → node) go with it.
                wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
                let (process, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot run `{command}`: {e}"))?;
                let pid = process.id();
                let reader =
                    stderr.map(|e| stderr::forward(self.config.name.clone(), e, Arc::clone(tail)));
                let service = match handler.serve(process).await {
                    Ok(service) => service,
                    Err(e) => {
                        // The server has usually exited: let its last words arrive.
                        stderr::settle(reader, STDERR_SETTLE).await;
                        let message = tail.explain(&format!("initialization failed: {e}"));
                        tracing::warn!(server = %self.config.name, "{message}");
                        return Err(message);
                    }
                };
                (service, pid)
            }
            Transport::Http { url } => {
                let headers = self.headers()?;
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
                let service = match &self.http_client {
                    Some(client) => {
                        let transport =
                            StreamableHttpClientTransport::with_client(client.clone(), config);
                        handler.serve(transport).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(config);
                        handler.serve(transport).await
                    }
                }
                .map_err(|e| format!("initialization failed: {e}"))?;
                (service, None)
            }
        };
        self.refresh_tools(service.peer()).await;
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(Connection {
            service,
            pid,
            generation,
        })
    }

    fn headers(&self) -> Result<HashMap<HeaderName, HeaderValue>, String> {
        let resolved = self
            .config
            .resolved_headers(|var| std::env::var(var).ok())
            .map_err(|e| e.to_string())?;
        let mut out = HashMap::new();
        for (name, value) in resolved {
            // The value is left out of the message: it may be a secret.
            let bad = || format!("header `{name}` is not a valid HTTP header");
            let header = HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
            let mut value = HeaderValue::try_from(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            out.insert(header, value);
        }
        Ok(out)
    }

    /// Lists the tools again; when the list differs, the manager's version moves.
    async fn refresh_tools(&self, peer: &Peer<RoleClient>) {
        let listed = match peer.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                tracing::warn!(server = %self.config.name, error = %e, "listing MCP tools failed");
                return;
            }
        };
        let names = exposed_names(&self.config.name, listed.iter().map(|t| t.name.as_ref()));
        let tools: Vec<RemoteTool> = listed
            .into_iter()
            .zip(names)
            .map(|(tool, name)| {
                let description = tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .unwrap_or_default()
                    .to_owned();
                let schema = serde_json::Value::Object((*tool.input_schema).clone());
                let read_only = tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false);
                RemoteTool {
                    remote: tool.name.into_owned(),
                    spec: ToolSpec::new(name, description, schema),
                    read_only,
                }
            })
            .collect();
        let changed = match self.tools.lock() {
            Ok(mut current) if *current != tools => {
                *current = tools;
                true
            }
            _ => false,
        };
        if changed {
            self.version.fetch_add(1, Ordering::SeqCst);
            tracing::info!(server = %self.config.name, "MCP tool list changed");
        }
    }

    /// A live connection's peer, starting the server again when it is down.
    async fn peer(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            if !c.service.is_transport_closed() && !c.service.is_closed() {
                return Ok((c.service.peer().clone(), c.generation));
            }
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(ToolError::internal(format!(
                "MCP server `{}` is shut down",
                self.config.name
            )));
        }
        if let Some(old) = slot.take() {
            close_in_background(old);
        }
        tracing::warn!(server = %self.config.name, "restarting MCP server");
        let connection = self.connect().await.map_err(|e| {
            ToolError::internal(format!(
                "MCP server `{}` could not be restarted: {e}",
                self.config.name
            ))
        })?;
        let peer = (connection.service.peer().clone(), connection.generation);
        *slot = Some(connection);
        Ok(peer)
    }

    /// Calls a tool. Transport failures mark the connection broken (restart on next use).
    pub async fn call(
        self: &Arc<Self>,
        remote: &str,
        arguments: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, ToolError> {
        let (peer, generation) = self.peer().await?;
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        let name = &self.config.name;
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            // The server is alive and answered with a JSON-RPC error.
            Ok(Err(ServiceError::McpError(e))) => Err(ToolError::internal(format!(
                "MCP server `{name}` refused tools/call {remote}: {e}"
            ))),
            Ok(Err(e)) => {
                self.mark_broken(generation).await;
                Err(ToolError::internal(format!(
                    "MCP server `{name}` failed during tools/call {remote}: {e}"
                )))
            }
            Err(_) => Err(ToolError::internal(format!(
                "MCP server `{name}`: tools/call {remote} took longer than {} s",
                timeout.as_secs()
            ))),
        }
    }

    async fn mark_broken(&self, generation: u64) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| c.generation == generation) {
            if let Some(old) = slot.take() {
                tracing::warn!(server = %self.config.name, "MCP server connection broken; it restarts on next use");
                close_in_background(old);
            }
        }
    }

    /// Closes the connection and waits for a stdio server's process to end.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let taken = self.connection.lock().await.take();
        if let Some(mut connection) = taken {
            if let Ok(None) = connection
                .service
                .close_with_timeout(SHUTDOWN_TIMEOUT)
                .await
            {
                tracing::warn!(server = %self.config.name, "MCP server did not shut down in time; killed");
            }
        }
    }
}

/// Closing reaps a dead process and kills a live one; nobody waits for it.
fn close_in_background(connection: Connection) {
    tokio::spawn(async move {
        let mut connection = connection;
        let _ = connection
            .service
            .close_with_timeout(SHUTDOWN_TIMEOUT)
            .await;
    });
}
