//! The one skill tool (`use_skill` by default) that loads a body on demand.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use super::{LoadedSkills, SkillSet};
use crate::tool::{Tool, ToolContext, ToolError, ToolFuture};

/// The one skill tool (progressive disclosure). It remembers what was loaded in a
/// [`LoadedSkills`] set: its own ([`SkillTool::new`]) or the conversation's
/// ([`SkillTool::sharing`]).
pub struct SkillTool {
    spec: ToolSpec,
    state: Arc<SkillToolState>,
}

struct SkillToolState {
    skills: Arc<SkillSet>,
    /// The names loaded so far, in load order.
    loaded: LoadedSkills,
    /// One gate per skill: concurrent loads of the same skill run one after the other, so the
    /// second sees the first's result (the note, or a retry after a failure).
    gates: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
}

impl fmt::Debug for SkillTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillTool")
            .field("name", &self.spec.name)
            .field("skills", &self.state.skills.names())
            .field("loaded", &self.loaded())
            .finish()
    }
}

impl SkillTool {
    /// `name` is the tool's name ([`DEFAULT_SKILL_TOOL`](super::DEFAULT_SKILL_TOOL) by default); the description and schema
    /// are the seed's `use_skill` texts exactly. The tool starts with a loaded set of its own.
    pub fn new(name: &str, skills: Arc<SkillSet>) -> Self {
        SkillTool::sharing(name, skills, LoadedSkills::new())
    }

    /// A skill tool that records loads in `loaded` (the conversation's set), so a new instance
    /// knows what an earlier one loaded.
    pub fn sharing(name: &str, skills: Arc<SkillSet>, loaded: LoadedSkills) -> Self {
        let schema = serde_json::from_str(texts::USE_SKILL_SCHEMA).unwrap_or_else(|e| {
            // The schema is a seed constant covered by tests; this cannot happen.
            tracing::error!(error = %e, "the use_skill schema does not parse");
            Value::Object(serde_json::Map::new())
        });
        let gates = skills
            .iter()
            .map(|s| (s.name.clone(), Arc::new(tokio::sync::Mutex::new(()))))
            .collect();
        SkillTool {
            spec: ToolSpec::new(name, texts::USE_SKILL_DESCRIPTION, schema),
            state: Arc::new(SkillToolState {
                skills,
                loaded,
                gates,
            }),
        }
    }

    /// The tool's spec, owned.
    pub fn spec_owned(&self) -> ToolSpec {
        self.spec.clone()
    }

    /// Names loaded so far (in this tool's set), in load order.
    pub fn loaded(&self) -> Vec<String> {
        self.state.loaded.names()
    }
}

impl SkillToolState {
    fn is_loaded(&self, name: &str) -> bool {
        self.loaded.contains(name)
    }

    fn mark_loaded(&self, name: &str) {
        self.loaded.insert(name);
    }

    async fn load(&self, arguments: Value, context: ToolContext) -> Result<String, ToolError> {
        let requested = match arguments.get("name") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let skill = self
            .skills
            .get(&requested)
            .or_else(|| self.skills.get(requested.trim()));
        let Some(skill) = skill else {
            return Err(ToolError::Tool(texts::skill_not_found(
                &requested,
                &self.skills.names(),
            )));
        };
        let work = async {
            let _gate = match self.gates.get(&skill.name) {
                Some(gate) => Some(gate.lock().await),
                None => None,
            };
            if self.is_loaded(&skill.name) {
                return Ok(texts::skill_already_loaded(&skill.name));
            }
            match skill.body().await {
                Ok(body) => {
                    self.mark_loaded(&skill.name);
                    Ok(body)
                }
                Err(error) => {
                    tracing::warn!(skill = %skill.name, %error, "skill body could not be loaded");
                    Err(ToolError::Transient(texts::skill_load_failed(&skill.name)))
                }
            }
        };
        tokio::select! {
            biased;
            () = context.cancel.cancelled() => Err(ToolError::Tool(texts::ERROR_CANCELED.to_owned())),
            result = work => result,
        }
    }
}

impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// `{"name": …}`: the body the first time in the conversation, a note after that. An unknown name is
    /// answered with the valid names; a body that fails to load is reported and not marked loaded.
    fn invoke(&self, arguments: Value, context: ToolContext) -> ToolFuture {
        let state = Arc::clone(&self.state);
        Box::pin(async move { state.load(arguments, context).await })
    }
}
