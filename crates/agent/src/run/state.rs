//! What a run leaves behind.

use serde::{Deserialize, Serialize};
use toolbridge_protocol::types::{Message, Usage};

use crate::events::Outcome;

/// The conversation and record a run leaves behind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The conversation as the model saw it (tool outputs truncated), to continue a chat.
    pub messages: Vec<Message>,
    /// The same with every tool output complete.
    pub transcript: Vec<Message>,
    pub usage: Usage,
    pub rounds: usize,
    pub tool_calls: usize,
    pub outcome: Option<Outcome>,
    pub answer: String,
    pub error: Option<String>,
    /// The answer ended at the token limit (`max_tokens`).
    #[serde(default)]
    pub cut_by_token_limit: bool,
}
