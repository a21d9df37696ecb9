//! The `[agent]` table of `toolbridge.toml`: the agent's model, limits, skills and approvals.
//! Unknown keys are errors, so a typo does not silently do nothing.

use std::path::PathBuf;

use serde::Deserialize;
use toolbridge_agent::approval::Approvals;
use toolbridge_protocol::mode::ToolMode;

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
    /// The most characters of the skill listing's entries (default 16,000); skills past it are
    /// left out whole, with a warning.
    pub skill_listing_budget: Option<usize>,
    #[serde(default)]
    pub approvals: Approvals,
}

/// `skill_tool`: `true`/`false`, or the skill tool's name.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SkillToolSetting {
    Enabled(bool),
    Named(String),
}

/// `builtin_skills`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuiltinSkills {
    /// Offered when `python_execute` is (the skill's scripts need it).
    #[default]
    Auto,
    Always,
    Never,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use toolbridge_agent::approval::ApprovalPolicy;

    use super::*;

    #[test]
    fn parses_the_section() {
        let s: AgentSection = toml::from_str(
            r#"
            model = "local"
            tool_mode = "prompt"
            max_rounds = 5
            skill_dirs = ["skills"]
            skill_tool = "load_skill"
            builtin_skills = "never"
            skill_listing_budget = 900
            [approvals.risk]
            low = "ask"
            "#,
        )
        .unwrap();
        assert_eq!(s.model.as_deref(), Some("local"));
        assert_eq!(s.tool_mode, Some(ToolMode::Prompt));
        assert_eq!(s.max_rounds, Some(5));
        assert_eq!(s.skill_dirs, [PathBuf::from("skills")]);
        assert!(matches!(s.skill_tool, Some(SkillToolSetting::Named(ref n)) if n == "load_skill"));
        assert_eq!(s.builtin_skills, Some(BuiltinSkills::Never));
        assert_eq!(s.skill_listing_budget, Some(900));
        assert_eq!(s.approvals.risk.low, ApprovalPolicy::Ask);
        let off: AgentSection = toml::from_str("skill_tool = false").unwrap();
        assert!(matches!(
            off.skill_tool,
            Some(SkillToolSetting::Enabled(false))
        ));
        let empty: AgentSection = toml::from_str("").unwrap();
        assert!(empty.model.is_none() && empty.skill_dirs.is_empty());
        assert_eq!(
            empty.builtin_skills.unwrap_or_default(),
            BuiltinSkills::Auto
        );
    }

    #[test]
    fn bad_input_gives_clear_errors() {
        for (toml, needle) in [
            ("max_round = 5", "unknown field `max_round`"),
            (
                "builtin_skills = \"sometimes\"",
                "unknown variant `sometimes`",
            ),
            ("max_rounds = \"five\"", "invalid type: string \"five\""),
            ("tool_mode = \"telepathy\"", "telepathy"),
            ("skill_tool = 3", "skill_tool"),
        ] {
            let e = toml::from_str::<AgentSection>(toml)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{toml}: {e}");
        }
    }
}
