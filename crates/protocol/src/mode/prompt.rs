//! Prompt mode: tools out of the API field, the seed's preamble in the system prompt, the close tag
//! as a stop sequence, and the history re-encoded as text.

use std::collections::HashMap;

use super::{merge_stop, offered_tools, EncodeOptions};
use crate::texts::{self, CallTag, ToolResultText};
use crate::types::{ChatRequest, Content, Message, ToolChoice, ToolSpec};

/// What prompt mode adds to the system prompt: the preamble for the offered tools, and for a
/// `required` or named tool choice our note asking for a call. Empty when no tool is offered.
pub fn prompt_addition(tools: &[ToolSpec], choice: Option<&ToolChoice>, tag: CallTag) -> String {
    let offered: Vec<ToolSpec> = offered_tools(tools, choice).into_iter().cloned().collect();
    if offered.is_empty() {
        return String::new();
    }
    let mut text = texts::preamble(&offered, tag);
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
    let addition = prompt_addition(&request.tools, request.tool_choice.as_ref(), options.tag);
    let mut messages = reencode_history(&request.messages, options.tag);
    if !addition.is_empty() {
        append_to_system(&mut messages, &addition);
    }
    let stop = if addition.is_empty() {
        request.stop.clone()
    } else {
        merge_stop(&request.stop, options.tag.stop_sequence())
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

/// Re-encodes a history for a model without native tools: assistant calls become call blocks in
/// the assistant's text, and each run of consecutive tool results becomes one user message of the
/// seed's wrappers.
pub fn reencode_history(messages: &[Message], tag: CallTag) -> Vec<Message> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let mut text = content
                    .as_ref()
                    .map(|c| c.text().into_owned())
                    .unwrap_or_default();
                for call in tool_calls {
                    names.insert(&call.id, &call.name);
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&texts::call_block(&call.name, &call.arguments, tag));
                }
                out.push(Message::assistant(text));
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
                out.push(Message::user(texts::tool_results_message(&results)));
            }
            other => {
                out.push(other.clone());
                i += 1;
            }
        }
    }
    out
}
