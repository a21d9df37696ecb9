//! The skills a conversation has loaded (issue 13 item 10).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::Message;

use super::SkillSet;

/// The skills a conversation has loaded, in load order: shared by every skill tool instance that
/// serves the conversation (a run rebuilds its skill tool when an MCP server's tool list changes),
/// and recovered from the conversation's messages when a later turn starts
/// ([`LoadedSkills::from_conversation`]). Clones share one set.
#[derive(Clone, Debug, Default)]
pub struct LoadedSkills(Arc<Mutex<Vec<String>>>);

impl LoadedSkills {
    /// An empty set (a new conversation).
    pub fn new() -> Self {
        LoadedSkills::default()
    }

    /// The skills whose body the conversation's messages already hold: a call to `skill_tool`
    /// naming a skill of `skills`, answered without an error and not skipped (a duplicate or
    /// budget note is no body). What the model has seen is what counts: a conversation whose
    /// earlier turns were dropped loads the skill again.
    pub fn from_conversation(messages: &[Message], skill_tool: &str, skills: &SkillSet) -> Self {
        let loaded = LoadedSkills::new();
        // Call id → the skill it asked for; ids can repeat across rounds, so the latest wins.
        let mut asked: HashMap<&str, String> = HashMap::new();
        for message in messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls.iter().filter(|c| c.name == skill_tool) {
                        let name = serde_json::from_str::<Value>(&call.arguments)
                            .ok()
                            .and_then(|args| args.get("name").cloned());
                        if let Some(Value::String(name)) = name {
                            asked.insert(call.id.as_str(), name);
                        }
                    }
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let Some(requested) = asked.remove(tool_call_id.as_str()) else {
                        continue;
                    };
                    let text = content.text();
                    let skipped = text == texts::TOOL_OUTPUT_DUPLICATE_SKIPPED
                        || text == texts::TOOL_OUTPUT_BUDGET_EXHAUSTED;
                    if *is_error || skipped {
                        continue;
                    }
                    let skill = skills
                        .get(&requested)
                        .or_else(|| skills.get(requested.trim()));
                    if let Some(skill) = skill {
                        loaded.insert(&skill.name);
                    }
                }
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        loaded
    }

    /// The names, in load order.
    pub fn names(&self) -> Vec<String> {
        // A poisoned lock only means a panic elsewhere while it was held; the list of names is
        // still consistent (pushes are atomic with respect to it), so it is used as is.
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|n| n == name)
    }

    /// Marks a skill loaded (once).
    pub fn insert(&self, name: &str) {
        let mut loaded = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !loaded.iter().any(|n| n == name) {
            loaded.push(name.to_owned());
        }
    }
}
