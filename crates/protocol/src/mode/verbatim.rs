//! Verbatim mode (seed 003): tools stay in the API field *and* go in-band as the provider-native JSON
//! array, for servers that accept `tools` but ignore it. Both halves — the tool block in the stable
//! reference zone and the nudge near the dialogue tail — sit behind one gate predicate.

use super::{merge_stop, EncodeOptions};
use crate::texts;
use crate::types::{ChatRequest, Content, Message, ToolChoice};

/// The single gate for both halves of verbatim mode: there are tools, and the choice allows calls.
pub fn verbatim_gate(request: &ChatRequest) -> bool {
    !request.tools.is_empty() && request.tool_choice != Some(ToolChoice::None)
}

/// Encodes a request for a verbatim-mode upstream. The history stays in its native form.
pub fn encode_verbatim(request: &ChatRequest, options: &EncodeOptions) -> ChatRequest {
    let mut out = request.clone();
    if !verbatim_gate(request) {
        return out;
    }
    // The reference zone: after the leading system messages, before the dialogue, so the block is
    // part of the cached prefix and never moves as the dialogue grows.
    let at = out
        .messages
        .iter()
        .take_while(|m| matches!(m, Message::System { .. }))
        .count();
    out.messages
        .insert(at, Message::user(texts::verbatim_block(&request.tools)));
    // The nudge goes at the end of the last user message of the dialogue (the block itself when
    // the dialogue has none).
    let nudge = options.format().verbatim_nudge();
    if let Some(Message::User { content, .. }) = out
        .messages
        .iter_mut()
        .rev()
        .find(|m| matches!(m, Message::User { .. }))
    {
        if content.text().is_empty() {
            *content = Content::Text(nudge);
        } else {
            content.push_text("\n\n");
            content.push_text(&nudge);
        }
    }
    if let Some(stop) = options.format().stop_sequence() {
        out.stop = merge_stop(&request.stop, stop);
    }
    out
}
