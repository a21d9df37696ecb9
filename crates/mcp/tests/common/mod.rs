//! Shared set-up for the MCP tests: the servers scripts/test.sh installs, and calling tools the
//! way the agent does (through a toolbox, with its validation, timeout and sanitizing).

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbridge_agent::approval::{AllowAll, Approvals};
use toolbridge_agent::toolbox::CallResult;
use toolbridge_agent::{ToolContext, Toolbox, ToolboxConfig};
use toolbridge_mcp::{McpManager, McpServerConfig};
use toolbridge_protocol::types::ToolCall;

fn env(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set: run the tests through scripts/test.sh, which installs the MCP test \
             servers (the Python `mcp` package and @modelcontextprotocol/server-everything) and sets it"
        ),
    }
}

/// The Python server written with the official SDK (tests/servers/py_server.py), over stdio.
pub fn py_server(name: &str) -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/py_server.py");
    let mut config = McpServerConfig::stdio(
        name,
        env("TOOLBRIDGE_MCP_PYTHON"),
        vec![script.display().to_string()],
    );
    config.start_timeout_secs = Some(60);
    config
}

fn everything_entry() -> PathBuf {
    PathBuf::from(env("TOOLBRIDGE_MCP_EVERYTHING")).join("dist/index.js")
}

/// The reference "everything" server from npm, over stdio.
pub fn everything_stdio(name: &str) -> McpServerConfig {
    let mut config = McpServerConfig::stdio(
        name,
        "node",
        vec![everything_entry().display().to_string(), "stdio".into()],
    );
    config.start_timeout_secs = Some(60);
    config
}

/// The "everything" server over streamable HTTP on a loopback port; killed when dropped.
pub struct EverythingHttp {
    child: tokio::process::Child,
    pub url: String,
}

impl EverythingHttp {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let preload = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/loopback.cjs");
        let child = tokio::process::Command::new("node")
            .arg("--require")
            .arg(preload)
            .arg(everything_entry())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting server-everything");
        let deadline = Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        EverythingHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Starts servers and fails the test when one does not start.
pub async fn start(configs: &[McpServerConfig]) -> Arc<McpManager> {
    let manager = McpManager::start(configs).await.unwrap();
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    for s in manager.started() {
        eprintln!("started {} in {} ms", s.server, s.elapsed.as_millis());
    }
    Arc::new(manager)
}

/// Runs a call through a toolbox holding the manager's tools, as the agent would, with a user who
/// approves every call (approval itself is tested in tests/approval.rs).
pub async fn call(
    manager: &Arc<McpManager>,
    name: &str,
    arguments: serde_json::Value,
    context: &ToolContext,
) -> CallResult {
    let mut toolbox = Toolbox::new(ToolboxConfig::default());
    toolbox.add_dynamic(Arc::clone(manager) as Arc<dyn toolbridge_agent::DynamicTools>);
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    };
    toolbox
        .resolve()
        .execute(
            &call,
            context,
            &Approvals::default(),
            &AllowAll,
            Duration::from_secs(120),
        )
        .await
}

pub fn names(manager: &McpManager) -> Vec<String> {
    manager
        .mcp_tools()
        .iter()
        .map(|t| toolbridge_agent::Tool::spec(t.as_ref()).name.clone())
        .collect()
}

/// A fresh workspace folder under the temp folder.
pub fn workspace(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tb-mcp-{tag}-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rand_suffix() -> u64 {
    use std::time::SystemTime;
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default()
}

pub fn process_alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; its state letter is Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until a process is gone (or a zombie), for at most `limit`.
pub async fn wait_gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process_alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}
