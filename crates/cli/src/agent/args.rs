//! The command-line flags shared by `run`, `chat`, `tools` and `skills`, and what they override
//! of the configuration (the composition root, toolbridge-runtime, does the rest).

use std::path::PathBuf;

use toolbridge_agent::approval::{ApprovalPolicy, CallRisk};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_runtime::Overrides;

/// Command-line overrides shared by `run`, `chat`, `tools` and `skills`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct AgentArgs {
    /// The model: a `[[models]]` name from toolbridge.toml or `provider:model` (openai:gpt-4o-mini,
    /// anthropic:claude-sonnet-4-5, ollama:qwen2.5, openai:NAME@http://host:port/v1,
    /// scripted:FILE.json, …).
    #[arg(long, short = 'm', value_name = "MODEL")]
    pub model: Option<String>,
    /// How tools reach the model: native, prompt, verbatim or auto.
    #[arg(long, value_name = "MODE")]
    pub tool_mode: Option<ToolMode>,
    /// The configuration file (default: ./toolbridge.toml, then the user config folder).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The most model rounds with tools (default 12).
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<usize>,
    /// A folder of skills to offer (repeatable).
    #[arg(long = "skills", value_name = "DIR")]
    pub skill_dirs: Vec<PathBuf>,
    /// The system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// An MCP server over stdio (repeatable): `--mcp 'files=npx -y @modelcontextprotocol/server-filesystem /tmp'`.
    /// The command line is split like a shell would (quotes work; no variables or pipes).
    #[arg(long = "mcp", value_name = "NAME=COMMAND")]
    pub mcp: Vec<String>,
    /// Tighten the approval policy of one risk level of `run_in_terminal` calls (repeatable):
    /// `--approve-risk high=deny`, `--approve-risk low=ask`. Levels low, medium, high, unknown;
    /// policies allow, ask, deny. It can only tighten `[agent.approvals.risk]`, never loosen it.
    #[arg(long = "approve-risk", value_name = "LEVEL=POLICY", value_parser = crate::agent::approve::parse_risk_override)]
    pub approve_risk: Vec<(CallRisk, ApprovalPolicy)>,
    #[command(flatten)]
    pub log: crate::logging::VerboseArgs,
}

impl AgentArgs {
    /// What the flags override of `[agent]` and `[[mcp_servers]]`.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            model: self.model.clone(),
            tool_mode: self.tool_mode,
            max_rounds: self.max_rounds,
            skill_dirs: self.skill_dirs.clone(),
            system: self.system.clone(),
            mcp: self.mcp.clone(),
            approve_risk: self.approve_risk.clone(),
        }
    }

    /// Loads the configuration and makes the composition root (nothing started yet).
    pub fn runtime(&self) -> anyhow::Result<toolbridge_runtime::Runtime> {
        let loaded = crate::config::load(self.config.as_deref())?;
        Ok(self.runtime_from(&loaded))
    }

    /// The composition root of a configuration already loaded.
    pub fn runtime_from(&self, loaded: &crate::config::Loaded) -> toolbridge_runtime::Runtime {
        toolbridge_runtime::Runtime::new(
            loaded.runtime_config(),
            crate::providers::registry(),
            self.overrides(),
        )
    }
}
