//! The embedded model's `auto` router (crate `toolbridge-embedded`). Ours. Never part of a
//! conversation: the contexts in which the model's own likelihoods of the tool names are compared.

use super::fill;

/// Ours: written after the conversation, in the assistant's turn, before each tool name whose
/// likelihood is scored.
pub const ROUTER_USE_PREFIX: &str = "I will use the tool ";
/// Ours: the system prompt of the router's noisy-channel context (the user's message is scored
/// after it, once per tool); placeholders `<TOOL_NAME>`, `<TOOL_DESCRIPTION>`.
pub const ROUTER_CHANNEL_SYSTEM: &str =
    "You are a helpful assistant with one tool, <TOOL_NAME>: <TOOL_DESCRIPTION>";

/// Ours: the router's context without a tool, against which [`ROUTER_CHANNEL_SYSTEM`]'s scores are
/// compared (how much a tool explains the user's message); also the system prompt of the
/// contexts [`ROUTER_DESCRIBE`] is scored in.
pub const ROUTER_NEUTRAL_SYSTEM: &str = "You are a helpful assistant.";

/// Ours: the answer whose likelihood the `mutual` gate compares after the user's message and after
/// an empty one (how much the message calls for a tool); placeholders `<TOOL_NAME>`,
/// `<TOOL_DESCRIPTION>` (its first sentence). It begins with [`ROUTER_USE_PREFIX`].
pub const ROUTER_DESCRIBE: &str = "I will use the tool <TOOL_NAME>: <TOOL_DESCRIPTION>";

/// [`ROUTER_DESCRIBE`] filled.
pub fn router_describe(name: &str, description: &str) -> String {
    fill(
        ROUTER_DESCRIBE,
        &[("<TOOL_NAME>", name), ("<TOOL_DESCRIPTION>", description)],
    )
}

/// [`ROUTER_CHANNEL_SYSTEM`] filled.
pub fn router_channel_system(name: &str, description: &str) -> String {
    fill(
        ROUTER_CHANNEL_SYSTEM,
        &[("<TOOL_NAME>", name), ("<TOOL_DESCRIPTION>", description)],
    )
}
