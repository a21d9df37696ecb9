//! `/save FILE`: the conversation as Markdown (`.md`, `.markdown`) for reading, or as JSON
//! (`.json`: the model's name and the messages in the Chat Completions format) for programs.

use std::path::Path;

use anyhow::Context;
use toolbridge_protocol::types::Message;

/// Writes the conversation to `path` in the format its extension names (an existing file is
/// replaced).
pub fn save(path: &Path, model: &str, messages: &[Message]) -> anyhow::Result<()> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let text = match extension.as_deref() {
        Some("json") => {
            let value = serde_json::json!({"model": model, "messages": messages});
            serde_json::to_string_pretty(&value).context("encoding the conversation")? + "\n"
        }
        Some("md" | "markdown") => markdown(model, messages),
        _ => anyhow::bail!(
            "{}: name a .md file (Markdown) or a .json file (JSON)",
            path.display()
        ),
    };
    // The whole conversation: owner-only, like every file of users' data.
    toolbridge_sandbox::private::write(path, text)
        .with_context(|| format!("writing {}", path.display()))
}

/// The conversation for reading: who said what, tool calls and results in code blocks. The
/// system messages (the system prompt, the skill listing) are left out.
pub fn markdown(model: &str, messages: &[Message]) -> String {
    let mut out = format!("# Conversation with {model}\n");
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content, .. } => {
                out.push_str("\n## You\n\n");
                out.push_str(content.text().trim_end());
                out.push('\n');
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                out.push_str("\n## Assistant\n");
                if let Some(text) = content.as_ref().map(|c| c.text()) {
                    if !text.trim().is_empty() {
                        out.push('\n');
                        out.push_str(text.trim_end());
                        out.push('\n');
                    }
                }
                for call in tool_calls {
                    out.push_str(&format!("\nTool call `{}`:\n\n", call.name));
                    out.push_str(&fenced("json", &call.arguments));
                }
            }
            Message::Tool {
                content,
                name,
                is_error,
                ..
            } => {
                let what = if *is_error {
                    "Tool error"
                } else {
                    "Tool result"
                };
                match name {
                    Some(name) => out.push_str(&format!("\n{what} of `{name}`:\n\n")),
                    None => out.push_str(&format!("\n{what}:\n\n")),
                }
                out.push_str(&fenced("text", &content.text()));
            }
        }
    }
    out
}

/// `text` in a code block whose fence is longer than any run of backticks in it.
fn fenced(language: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{language}\n{}\n{fence}\n", text.trim_end())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use toolbridge_protocol::types::ToolCall;

    use super::*;

    #[test]
    fn markdown_shows_the_turns_and_fences_tool_output_safely() {
        let messages = vec![
            Message::system("hidden"),
            Message::user("What is in a.txt?"),
            Message::assistant_calls(
                None,
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a.txt\"}".into(),
                }],
            ),
            Message::tool_result("c1", "has ``` inside", false),
            Message::assistant("It holds a fence."),
        ];
        let md = markdown("local", &messages);
        assert!(!md.contains("hidden"), "{md}");
        assert!(
            md.starts_with("# Conversation with local\n\n## You\n\nWhat is in a.txt?\n"),
            "{md}"
        );
        assert!(
            md.contains("Tool call `read`:\n\n```json\n{\"path\":\"a.txt\"}\n```\n"),
            "{md}"
        );
        assert!(md.contains("````text\nhas ``` inside\n````\n"), "{md}");
        assert!(md.ends_with("## Assistant\n\nIt holds a fence.\n"), "{md}");
    }
}
