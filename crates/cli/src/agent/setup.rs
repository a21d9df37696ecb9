//! Building an agent from `[agent]` in `toolbridge.toml`, `[[models]]` and the command line.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use toolbridge_agent::approval::{ApprovalPolicy, Approvals, CallRisk};
use toolbridge_agent::skills::{load_dirs, SkillSet, DEFAULT_SKILL_TOOL};
use toolbridge_agent::{Agent, AgentConfig, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_providers::config::{model_from_spec, ModelConfig, ProcessEnv};
use toolbridge_providers::Model;
use toolbridge_tools::ToolsConfig;

/// The `[agent]` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// A `[[models]]` name or a `provider:model` name.
    pub model: Option<String>,
    /// The tool mode for a `provider:model` name (default auto).
    pub tool_mode: Option<ToolMode>,
    pub system_prompt: Option<String>,
    pub max_rounds: Option<usize>,
    pub max_tool_calls: Option<usize>,
    pub max_duration_secs: Option<u64>,
    pub tool_timeout_secs: Option<u64>,
    pub max_output_chars: Option<usize>,
    pub parallel_calls: Option<usize>,
    /// Folders of skills (`SKILL.md` folders, the Agent Skills convention).
    #[serde(default)]
    pub skill_dirs: Vec<PathBuf>,
    /// The skill tool's name; `false` gives the model the skill bodies inline instead.
    pub skill_tool: Option<SkillToolSetting>,
    /// The built-in document-generation skill: `auto` (with python_execute), `always`, `never`.
    pub builtin_skills: Option<BuiltinSkills>,
    #[serde(default)]
    pub approvals: Approvals,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SkillToolSetting {
    Enabled(bool),
    Named(String),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuiltinSkills {
    #[default]
    Auto,
    Always,
    Never,
}

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
}

/// Everything a run needs, resolved.
pub struct Setup {
    pub agent: Agent,
    pub model_name: String,
}

/// Resolves the model: the command line wins over `[agent] model`; a `[[models]]` name wins over a
/// `provider:model` reading of the same text.
pub fn resolve_model(
    name: Option<&str>,
    mode: Option<ToolMode>,
    models: &[ModelConfig],
) -> anyhow::Result<Model> {
    use crate::commands::model as embedded;
    let Some(name) = name else {
        // No model configured: the embedded default (pulled on first use).
        return embedded::embedded_model("embedded", mode).context(
            "no model configured: pass --model (for example --model openai:gpt-4o-mini, --model ollama:qwen2.5 or --model scripted:FILE.json) or set `model` under [agent] in toolbridge.toml",
        );
    };
    if let Some(config) = models.iter().find(|m| m.name == name) {
        return embedded::build_configured(config).with_context(|| format!("model `{name}`"));
    }
    if embedded::is_embedded(name) {
        return embedded::embedded_model(name, mode);
    }
    model_from_spec(name, mode, &ProcessEnv).map_err(anyhow::Error::from)
}

/// Builds the agent.
/// `memories` are the run's user's saved facts (see [`memories`]).
pub fn build(
    section: &AgentSection,
    args: &AgentArgs,
    models: &[ModelConfig],
    toolbox: Toolbox,
    memories: Vec<String>,
) -> anyhow::Result<Setup> {
    let model_name = args.model.clone().or_else(|| section.model.clone());
    let mode = args.tool_mode.or(section.tool_mode);
    let model = resolve_model(model_name.as_deref(), mode, models)?;
    assemble(section, args, model, model_name, toolbox, memories)
}

/// Builds the agent for listing its tools and skills: no model is needed (none is called).
pub fn build_for_listing(
    section: &AgentSection,
    args: &AgentArgs,
    models: &[ModelConfig],
    toolbox: Toolbox,
) -> anyhow::Result<Setup> {
    let model_name = args.model.clone().or_else(|| section.model.clone());
    let mode = args.tool_mode.or(section.tool_mode);
    let model = match model_name.as_deref() {
        Some(name) => resolve_model(Some(name), mode, models)?,
        None => Model::new("(none)", Vec::new()),
    };
    assemble(section, args, model, model_name, toolbox, Vec::new())
}

fn assemble(
    section: &AgentSection,
    args: &AgentArgs,
    model: Model,
    model_name: Option<String>,
    toolbox: Toolbox,
    memories: Vec<String>,
) -> anyhow::Result<Setup> {
    let mut dirs = section.skill_dirs.clone();
    dirs.extend(args.skill_dirs.iter().cloned());
    let configured = load_dirs(&dirs).context("loading skills")?;
    let builtin = match section.builtin_skills.unwrap_or_default() {
        BuiltinSkills::Always => true,
        BuiltinSkills::Never => false,
        BuiltinSkills::Auto => toolbox.get("python_execute").is_some(),
    };
    let skills = SkillSet::with_builtin(configured, builtin);
    let skill_tool = match &section.skill_tool {
        None | Some(SkillToolSetting::Enabled(true)) => Some(DEFAULT_SKILL_TOOL.to_owned()),
        Some(SkillToolSetting::Enabled(false)) => None,
        Some(SkillToolSetting::Named(n)) => Some(n.clone()),
    };
    let defaults = AgentConfig::default();
    let config = AgentConfig {
        max_rounds: args
            .max_rounds
            .or(section.max_rounds)
            .unwrap_or(defaults.max_rounds),
        max_tool_calls: section.max_tool_calls.unwrap_or(defaults.max_tool_calls),
        max_duration: section
            .max_duration_secs
            .map(Duration::from_secs)
            .unwrap_or(defaults.max_duration),
        parallel_calls: section.parallel_calls.unwrap_or(defaults.parallel_calls),
        max_malformed_retries: defaults.max_malformed_retries,
        system_prompt: args
            .system
            .clone()
            .or_else(|| section.system_prompt.clone()),
        skill_tool,
        approvals: crate::agent::approve::with_overrides(&section.approvals, &args.approve_risk),
        memories,
    };
    let agent = Agent::new(model, toolbox, skills, config)?;
    Ok(Setup {
        agent,
        model_name: model_name.unwrap_or_default(),
    })
}

/// The toolbox a run offers.
pub fn toolbox(section: &AgentSection, tools: &ToolsConfig) -> anyhow::Result<Toolbox> {
    let defaults = ToolboxConfig::default();
    let mut toolbox = Toolbox::new(ToolboxConfig {
        timeout: section
            .tool_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(defaults.timeout),
        max_output_chars: section
            .max_output_chars
            .unwrap_or(defaults.max_output_chars),
    });

    // Built-in tools (crate toolbridge-tools): the ones enabled under [tools].
    toolbridge_tools::register(&mut toolbox, tools).context("setting up the built-in tools")?;

    Ok(toolbox)
}

/// The run's user's ACTIVE memories (when `save_memory` is enabled). A store that cannot be read
/// is reported and the run goes on without them.
pub fn memories(tools: &ToolsConfig, user: &str) -> Vec<String> {
    let loaded = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| {
            rt.block_on(toolbridge_tools::memories_for(tools, user))
                .map_err(anyhow::Error::from)
        });
    match loaded {
        Ok(lines) => lines,
        Err(e) => {
            eprintln!("toolbridge: warning: memories not loaded: {e:#}");
            Vec::new()
        }
    }
}

/// The tool context of a CLI run: the local user, the conversation and its workspace.
pub fn context(tools: &ToolsConfig, conversation: &str) -> ToolContext {
    ToolContext {
        workspace: toolbridge_tools::workspace_for(tools, conversation),
        conversation: conversation.to_owned(),
        ..ToolContext::default()
    }
}
