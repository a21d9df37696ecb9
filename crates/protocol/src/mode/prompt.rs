//! Prompt mode: tools out of the API field, the preamble of the arm's call format in the system
//! prompt, the format's closing marker as a stop sequence, and the history re-encoded as text in
//! that format. For hermes every text is the reference protocol's.

use std::collections::HashMap;

use super::{merge_stop, offered_tools, EncodeOptions};
use crate::texts::{self, CallFormat, ToolResultText};
use crate::types::{ChatRequest, Content, Message, ToolChoice, ToolSpec};

/// What prompt mode adds to the system prompt: the preamble for the offered tools in `format`
/// (a [`CallTag`](crate::texts::CallTag) is hermes with that tag), and for a `required` or named
/// tool choice our note asking for a call. Empty when no tool is offered.
pub fn prompt_addition(
    tools: &[ToolSpec],
    choice: Option<&ToolChoice>,
    format: impl Into<CallFormat>,
) -> String {
    let offered: Vec<ToolSpec> = offered_tools(tools, choice).into_iter().cloned().collect();
    if offered.is_empty() {
        return String::new();
    }
    let mut text = format.into().preamble(&offered);
    match choice {
        Some(ToolChoice::Required) => {
            text.push_str("\n\n");
            text.push_str(&texts::prompt_choice_note(None));
        }
        Some(ToolChoice::Named(name)) => {
            text.push_str("\n\n");
            text.push_str(&texts::prompt_choice_note(Some(name)));
        }
        _ => {}
    }
    text
}

/// Encodes a request for a prompt-mode upstream.
pub fn encode_prompt(request: &ChatRequest, options: &EncodeOptions) -> ChatRequest {
    let format = options.format();
    let addition = prompt_addition(&request.tools, request.tool_choice.as_ref(), format);
    let mut messages = reencode_history(&request.messages, format);
    if !addition.is_empty() {
        append_to_system(&mut messages, &addition);
    }
    let stop = match format.stop_sequence() {
        Some(ours) if !addition.is_empty() => merge_stop(&request.stop, ours),
        _ => request.stop.clone(),
    };
    // Field by field: `..request.clone()` would copy the whole history and tool set only to
    // drop them again (this runs on every request of a prompt-mode arm).
    ChatRequest {
        model: request.model.clone(),
        messages,
        tools: Vec::new(),
        tool_choice: None,
        parallel_tool_calls: None,
        stop,
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        top_p: request.top_p,
        stream: request.stream,
        extra: request.extra.clone(),
    }
}

/// Appends to the first system message (separated by a blank line), or creates one at the start.
fn append_to_system(messages: &mut Vec<Message>, addition: &str) {
    for m in messages.iter_mut() {
        if let Message::System { content, .. } = m {
            if content.text().is_empty() {
                *content = Content::Text(addition.to_owned());
            } else {
                content.push_text("\n\n");
                content.push_text(addition);
            }
            return;
        }
    }
    messages.insert(0, Message::system(addition));
}

/// Re-encodes a history for a model without native tools: assistant calls become text in
/// `format` after the assistant's text (hermes: call blocks), and each run of consecutive tool
/// results becomes one user message (hermes: the reference protocol's wrappers; see
/// [`CallFormat::results_message`]).
pub fn reencode_history(messages: &[Message], format: impl Into<CallFormat>) -> Vec<Message> {
    let format = format.into();
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::Assistant {
                content,
                tool_calls,
                thinking_blocks,
            } if !tool_calls.is_empty() => {
                let text = content
                    .as_ref()
                    .map(|c| c.text().into_owned())
                    .unwrap_or_default();
                for call in tool_calls {
                    names.insert(&call.id, &call.name);
                }
                out.push(Message::Assistant {
                    content: Some(crate::types::Content::Text(
                        format.assistant_text(&text, tool_calls),
                    )),
                    tool_calls: Vec::new(),
                    thinking_blocks: thinking_blocks.clone(),
                });
                i += 1;
            }
            Message::Tool { .. } => {
                let start = i;
                while i < messages.len() && matches!(messages[i], Message::Tool { .. }) {
                    i += 1;
                }
                let outputs: Vec<(String, String, bool)> = messages[start..i]
                    .iter()
                    .filter_map(|m| match m {
                        Message::Tool {
                            tool_call_id,
                            content,
                            name,
                            is_error,
                        } => {
                            let name = names
                                .get(tool_call_id.as_str())
                                .copied()
                                .or(name.as_deref())
                                .unwrap_or("tool");
                            Some((name.to_owned(), content.text().into_owned(), *is_error))
                        }
                        _ => None,
                    })
                    .collect();
                let results: Vec<ToolResultText<'_>> = outputs
                    .iter()
                    .map(|(name, output, is_error)| ToolResultText {
                        name,
                        output,
                        is_error: *is_error,
                    })
                    .collect();
                out.push(Message::user(format.results_message(&results)));
            }
            other => {
                out.push(other.clone());
                i += 1;
            }
        }
    }
    out
}
