//! The skills of an agent: order, the built-in skill, validation, inline bodies.

use std::collections::HashMap;
use std::fmt;

use toolbridge_protocol::texts;

use super::{Skill, SkillError, DEFAULT_LISTING_BUDGET};

/// The skills of an agent, in a stable order.
#[derive(Clone)]
pub struct SkillSet {
    pub(super) skills: Vec<Skill>,
    pub(super) listing_budget: usize,
}

impl Default for SkillSet {
    fn default() -> Self {
        SkillSet::new(Vec::new())
    }
}

impl fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.skills).finish()
    }
}

impl SkillSet {
    pub fn new(skills: Vec<Skill>) -> Self {
        SkillSet {
            skills,
            listing_budget: DEFAULT_LISTING_BUDGET,
        }
    }

    /// The same skills with another listing budget (characters of the entries; see
    /// [`DEFAULT_LISTING_BUDGET`]).
    pub fn with_listing_budget(mut self, chars: usize) -> Self {
        self.listing_budget = chars;
        self
    }

    /// The most characters of the listing's entries.
    pub fn listing_budget(&self) -> usize {
        self.listing_budget
    }

    /// The configured skills plus the built-in document-generation skill when `include_builtin`
    /// (first, so it is never cut from the listing); a configured skill with the same name shadows
    /// the built-in, which is then left out.
    pub fn with_builtin(configured: Vec<Skill>, include_builtin: bool) -> Self {
        let mut skills = Vec::with_capacity(configured.len() + 1);
        if include_builtin {
            let builtin = Skill::document_generation();
            if configured.iter().any(|s| s.name == builtin.name) {
                tracing::debug!(skill = %builtin.name, "a configured skill shadows the built-in one");
            } else {
                skills.push(builtin);
            }
        }
        skills.extend(configured);
        SkillSet::new(skills)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }

    /// Refused when the run starts: two skills with the same name, a skill with an empty (or
    /// whitespace-only) name, or a tool in `tool_names` already called `skill_tool` (checked only
    /// when the set is non-empty and `skill_tool` is not empty).
    pub fn validate(&self, tool_names: &[&str], skill_tool: &str) -> Result<(), SkillError> {
        let mut seen: HashMap<&str, &Skill> = HashMap::with_capacity(self.skills.len());
        for skill in &self.skills {
            if skill.name.trim().is_empty() {
                return Err(SkillError::EmptyName {
                    origin: skill.origin(),
                });
            }
            if let Some(first) = seen.insert(skill.name.as_str(), skill) {
                return Err(SkillError::Duplicate {
                    name: skill.name.clone(),
                    first: first.origin(),
                    second: skill.origin(),
                });
            }
        }
        if !self.skills.is_empty() && !skill_tool.is_empty() && tool_names.contains(&skill_tool) {
            return Err(SkillError::ToolNameTaken(skill_tool.to_owned()));
        }
        Ok(())
    }

    /// For a model without the skill tool: `SKILLS_INLINE_HEADER`, a blank line, then the bodies
    /// in order separated by blank lines. A body that fails to load (or is empty) is left out, with
    /// a warning in the log; empty when there is no body.
    pub async fn inline_bodies(&self) -> String {
        // One after the other, in order (a plain loop keeps the future `Send` for any caller).
        let mut bodies = Vec::with_capacity(self.skills.len());
        for skill in &self.skills {
            match skill.body().await {
                Ok(body) if body.trim().is_empty() => {
                    tracing::warn!(skill = %skill.name, "skill body is empty; left out");
                }
                Ok(body) => bodies.push(body),
                Err(error) => {
                    tracing::warn!(skill = %skill.name, %error, "skill body could not be loaded; left out");
                }
            }
        }
        if bodies.is_empty() {
            return String::new();
        }
        let mut out = String::from(texts::SKILLS_INLINE_HEADER);
        out.push_str("\n\n");
        out.push_str(&bodies.join("\n\n"));
        out
    }
}
