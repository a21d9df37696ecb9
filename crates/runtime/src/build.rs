//! Putting an agent together from `[agent]`, `[tools]` and the caller's overrides: its toolbox,
//! skills (with the built-in skill's `auto` rule), limits, memories and approvals.

use std::time::Duration;

use toolbridge_agent::approval::{ApprovalPolicy, Approvals, CallRisk};
use toolbridge_agent::skills::{load_dirs, SkillSet, DEFAULT_LISTING_BUDGET, DEFAULT_SKILL_TOOL};
use toolbridge_agent::{Agent, AgentConfig, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_providers::Model;
use toolbridge_tools::ToolsConfig;

use crate::error::RuntimeError;
use crate::runtime::Overrides;
use crate::section::{AgentSection, BuiltinSkills, SkillToolSetting};

/// The toolbox a run offers: the built-in tools enabled under `[tools]`, with `[agent]`'s
/// timeout and output cap (MCP tools are added by the caller).
pub fn toolbox(section: &AgentSection, tools: &ToolsConfig) -> Result<Toolbox, RuntimeError> {
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
    toolbridge_tools::register(&mut toolbox, tools).map_err(RuntimeError::Tools)?;
    Ok(toolbox)
}

/// The agent: the model, the toolbox, the skills of `[agent] skill_dirs` and the overrides'
/// folders, and the limits (an override wins over `[agent]`, which wins over the defaults).
pub fn agent(
    section: &AgentSection,
    overrides: &Overrides,
    model: Model,
    toolbox: Toolbox,
    memories: Vec<String>,
) -> Result<Agent, RuntimeError> {
    let mut dirs = section.skill_dirs.clone();
    dirs.extend(overrides.skill_dirs.iter().cloned());
    let configured = load_dirs(&dirs).map_err(RuntimeError::Skills)?;
    // `auto`: the built-in skill's scripts need python_execute.
    let builtin = match section.builtin_skills.unwrap_or_default() {
        BuiltinSkills::Always => true,
        BuiltinSkills::Never => false,
        BuiltinSkills::Auto => toolbox.get("python_execute").is_some(),
    };
    let skills = SkillSet::with_builtin(configured, builtin).with_listing_budget(
        section
            .skill_listing_budget
            .unwrap_or(DEFAULT_LISTING_BUDGET),
    );
    let skill_tool = match &section.skill_tool {
        None | Some(SkillToolSetting::Enabled(true)) => Some(DEFAULT_SKILL_TOOL.to_owned()),
        Some(SkillToolSetting::Enabled(false)) => None,
        Some(SkillToolSetting::Named(n)) => Some(n.clone()),
    };
    let defaults = AgentConfig::default();
    let config = AgentConfig {
        max_rounds: overrides
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
        system_prompt: overrides
            .system
            .clone()
            .or_else(|| section.system_prompt.clone()),
        skill_tool,
        approvals: with_overrides(&section.approvals, &overrides.approve_risk),
        memories,
    };
    Ok(Agent::new(model, toolbox, skills, config)?)
}

/// The configured approvals tightened by the overrides (never loosened).
pub fn with_overrides(config: &Approvals, overrides: &[(CallRisk, ApprovalPolicy)]) -> Approvals {
    let mut over = Approvals::loosest();
    for (level, policy) in overrides {
        over.risk.set(*level, *policy);
    }
    config.tightened_by(&over)
}

/// The user's ACTIVE memories (when `save_memory` is enabled), loaded on the caller's async
/// runtime. A store that cannot be read is reported and the run goes on without them.
pub async fn memories(tools: &ToolsConfig, user: &str) -> Vec<String> {
    match toolbridge_tools::memories_for(tools, user).await {
        Ok(lines) => lines,
        Err(e) => {
            eprintln!(
                "toolbridge: warning: memories not loaded: {}",
                crate::models::error_line(&e)
            );
            Vec::new()
        }
    }
}

/// The tool context of a run: the user, the conversation and its workspace.
pub fn context(tools: &ToolsConfig, user: &str, conversation: &str) -> ToolContext {
    ToolContext {
        workspace: toolbridge_tools::workspace_for(tools, conversation),
        conversation: conversation.to_owned(),
        user: user.to_owned(),
        ..ToolContext::default()
    }
}
