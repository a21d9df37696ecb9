//! What `run` and `chat` start before the first prompt: the configuration, the process's one
//! async runtime, the composition root (its MCP servers) and the session's agent — and what they
//! stop at the end.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context;
use toolbridge_agent::approval::Approver;
use toolbridge_agent::ToolContext;
use toolbridge_runtime::Runtime;

use crate::agent::approve::TerminalApprover;
use crate::agent::args::AgentArgs;
use crate::term::spinner::Spinner;

/// A spinner saying what start-up waits for, on a terminal only (cleared when dropped).
fn progress(message: &str) -> Option<Spinner> {
    std::io::stderr()
        .is_terminal()
        .then(|| Spinner::start(message))
}

pub struct Session {
    /// The process's async runtime: the MCP servers, memory loading and the runs live on it.
    pub runtime: tokio::runtime::Runtime,
    pub root: Runtime,
    pub session: toolbridge_runtime::Session,
}

impl Session {
    /// Loads the configuration and builds the agent for the local user in `conversation`.
    /// Approval questions go to the terminal when there is one (`ask_always` keeps the terminal
    /// approver even without one, as `chat` reads its input from the terminal anyway).
    pub fn start(
        args: &AgentArgs,
        conversation: &str,
        ask_always: bool,
    ) -> anyhow::Result<Session> {
        let loaded = crate::config::load(args.config.as_deref())?;
        crate::logging::init(&args.log, Some(&loaded.config.telemetry));
        let mut root = args.runtime_from(&loaded);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let approver: Option<Arc<dyn Approver>> = if ask_always || TerminalApprover::available() {
            Some(Arc::new(TerminalApprover))
        } else {
            None
        };
        let has_mcp = !loaded.config.mcp_servers.is_empty() || !args.mcp.is_empty();
        let model = args
            .model
            .as_deref()
            .or(loaded.config.agent.model.as_deref())
            .unwrap_or(toolbridge_runtime::DEFAULT_MODEL_LABEL);
        let session = runtime.block_on(async {
            {
                let _progress = has_mcp.then(|| progress("starting the MCP servers"));
                root.start_mcp().await?;
            }
            // Loading a local model takes seconds: the terminal shows what is waited for.
            let _progress = progress(&format!("loading the model {model}"));
            let started = std::time::Instant::now();
            let session = root
                .session(&ToolContext::default().user, conversation, approver)
                .await;
            tracing::info!(target: "toolbridge::run", model, duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX), "model ready");
            session
        })?;
        Ok(Session {
            runtime,
            root,
            session,
        })
    }

    /// Stops the MCP servers.
    pub fn shutdown(&self) {
        self.runtime.block_on(self.root.shutdown());
    }
}
