//! What `run` and `chat` start before the first prompt: the configuration, a runtime, the MCP
//! servers, the toolbox and the agent — and what they stop at the end.

use std::sync::Arc;

use anyhow::Context;
use toolbridge_agent::{Agent, ToolContext};
use toolbridge_mcp::McpManager;
use toolbridge_tools::ToolsConfig;

use crate::agent::approve::TerminalApprover;
use crate::agent::mcp;
use crate::agent::setup::{self, AgentArgs};
use crate::config;

pub struct Session {
    pub runtime: tokio::runtime::Runtime,
    pub agent: Agent,
    pub model_name: String,
    tools: ToolsConfig,
    mcp: Arc<McpManager>,
}

impl Session {
    /// Loads the configuration and builds the agent. Approval questions go to the terminal when
    /// there is one (`ask_always` keeps the terminal approver even without one, as `chat` reads
    /// its input from the terminal anyway).
    pub fn start(args: &AgentArgs, ask_always: bool) -> anyhow::Result<Session> {
        let loaded = config::load(args.config.as_deref())?;
        let section = &loaded.config.agent;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let mcp = mcp::start(&runtime, &loaded.config.mcp_servers, &args.mcp)?;
        let mut toolbox = setup::toolbox(section, &loaded.config.tools)?;
        mcp::add_to(&mut toolbox, &mcp);
        let setup = setup::build(
            section,
            args,
            &loaded.config.models,
            toolbox,
            setup::memories(&loaded.config.tools, &ToolContext::default().user),
        )?;
        let agent = if ask_always || TerminalApprover::available() {
            setup.agent.with_approver(Arc::new(TerminalApprover))
        } else {
            setup.agent
        };
        Ok(Session {
            runtime,
            agent,
            model_name: setup.model_name,
            tools: loaded.config.tools,
            mcp,
        })
    }

    /// The context of one run of a conversation (workspace, user, a fresh cancellation token).
    pub fn context(&self, conversation: &str) -> ToolContext {
        setup::context(&self.tools, conversation)
    }

    /// `[tools]` of the configuration.
    pub fn tools(&self) -> &ToolsConfig {
        &self.tools
    }

    /// Stops the MCP servers.
    pub fn shutdown(&self) {
        mcp::shutdown(&self.runtime, &self.mcp);
    }
}
