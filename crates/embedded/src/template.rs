//! The chat template: the GGUF's `tokenizer.chat_template` (Jinja, rendered with `minijinja`), or
//! ChatML when the file has none or its template does not render.
//!
//! The messages given here are plain role/text pairs: tool calls and results have already been
//! re-encoded as text by `toolbridge_protocol::mode::reencode_history`, exactly as prompt mode
//! does, so any template that renders `role` and `content` works.
//!
//! Content is data, not structure: a user (or a tool result) writing `<|im_end|>` must not end a
//! turn. [`ChatTemplate::render`] therefore wraps every message's content in two noncharacters
//! ([`literal`]); the tokenizer encodes what lies between them with control tokens not recognized,
//! and drops the marks. Only the template's own text yields control tokens.

use minijinja::{context, Environment};
use serde::Serialize;
use toolbridge_protocol::parser::Dialect;

/// Opens a span of plain text in a rendered prompt (a Unicode noncharacter: never meaningful text).
pub const LITERAL_OPEN: char = '\u{FDD0}';
/// Closes a span opened by [`LITERAL_OPEN`].
pub const LITERAL_CLOSE: char = '\u{FDD1}';

fn is_mark(c: char) -> bool {
    c == LITERAL_OPEN || c == LITERAL_CLOSE
}

/// `text` marked as plain text for the tokenizer: marks already in it are removed (so content
/// cannot close its own span), and leading and trailing whitespace stays outside the span, so a
/// template that trims content still trims it.
pub fn literal(text: &str) -> String {
    let clean: String = if text.chars().any(is_mark) {
        text.chars().filter(|c| !is_mark(*c)).collect()
    } else {
        text.to_owned()
    };
    let core = clean.trim();
    if core.is_empty() {
        return clean;
    }
    let start = clean.len() - clean.trim_start().len();
    let end = start + core.len();
    let mut out = String::with_capacity(clean.len() + 6);
    out.push_str(&clean[..start]);
    out.push(LITERAL_OPEN);
    out.push_str(core);
    out.push(LITERAL_CLOSE);
    out.push_str(&clean[end..]);
    out
}

/// A rendered prompt without its marks: the text the model reads.
pub fn unmark(text: &str) -> String {
    text.chars().filter(|c| !is_mark(*c)).collect()
}

/// One message for the template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TemplateMessage {
    pub role: String,
    pub content: String,
}

impl TemplateMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        TemplateMessage {
            role: role.to_owned(),
            content: content.into(),
        }
    }
}

/// A chat template.
pub struct ChatTemplate {
    source: Option<String>,
    bos: String,
    eos: String,
}

/// The fallback: ChatML (`<|im_start|>role\ncontent<|im_end|>\n`, then `<|im_start|>assistant\n`).
pub fn chatml(messages: &[TemplateMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(&m.role);
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

impl ChatTemplate {
    pub fn new(source: Option<String>, bos: impl Into<String>, eos: impl Into<String>) -> Self {
        ChatTemplate {
            source,
            bos: bos.into(),
            eos: eos.into(),
        }
    }

    /// The call format the template teaches, from the markers its source writes: a template with
    /// no tool format of its own (ChatML, SmolLM2's) is taught the reference protocol's (hermes).
    /// The more specific markers are looked for first (Qwen3-Coder's template writes
    /// `<tool_call>` too, Llama 3.x's the word `"parameters"`).
    pub fn dialect(&self) -> Dialect {
        let Some(src) = self.source.as_deref() else {
            return Dialect::Hermes;
        };
        const SIGNS: [(&str, Dialect); 12] = [
            ("<|tool_calls_section_begin|>", Dialect::KimiK2),
            ("tool▁calls▁begin", Dialect::DeepseekV3),
            ("<arg_key>", Dialect::Glm45),
            ("<function=", Dialect::Qwen3Coder),
            ("to=functions.", Dialect::GptOss),
            ("[TOOL_CALLS]", Dialect::Mistral),
            ("functools", Dialect::Phi4Mini),
            ("<|tool_call|>", Dialect::Granite),
            ("<|python_start|>", Dialect::Pythonic),
            ("<tool_call>", Dialect::Hermes),
            ("<|python_tag|>", Dialect::Llama3Json),
            ("\"parameters\"", Dialect::Llama3Json),
        ];
        SIGNS
            .iter()
            .find(|(sign, _)| src.contains(sign))
            .map_or(Dialect::Hermes, |(_, d)| *d)
    }

    /// Whether the GGUF's own template is used (false: ChatML).
    pub fn is_native(&self) -> bool {
        self.source.is_some()
    }

    /// Renders a conversation followed by the assistant's generation prompt, each message's
    /// content marked as plain text (see [`literal`]; [`unmark`] gives the text the model reads).
    pub fn render(&self, messages: &[TemplateMessage]) -> String {
        let messages: Vec<TemplateMessage> = messages
            .iter()
            .map(|m| TemplateMessage {
                role: m.role.clone(),
                content: literal(&m.content),
            })
            .collect();
        let Some(src) = &self.source else {
            return chatml(&messages);
        };
        let err = match self.render_jinja(src, &messages) {
            Ok(text) => return text,
            Err(err) => err,
        };
        // A template that takes only alternating user and assistant turns (Gemma's raises on a
        // system or tool message) gets the conversation in that shape before ChatML is tried.
        let strict = alternating(&messages);
        if strict != messages {
            if let Ok(text) = self.render_jinja(src, &strict) {
                tracing::debug!(error = %err, "the chat template takes alternating turns only");
                return text;
            }
        }
        tracing::warn!(error = %err, "the model's chat template does not render; using ChatML");
        chatml(&messages)
    }

    fn render_jinja(
        &self,
        src: &str,
        messages: &[TemplateMessage],
    ) -> Result<String, minijinja::Error> {
        let mut env = Environment::new();
        // Templates are written for Python's Jinja: `content.startswith(…)`, `.split(…)`, `.strip()`.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env.add_template("chat", src)?;
        env.get_template("chat")?.render(context! {
            messages => messages
                .iter()
                .map(|m| {
                    minijinja::Value::from(std::collections::BTreeMap::from([
                        ("role".to_owned(), m.role.clone()),
                        ("content".to_owned(), m.content.clone()),
                    ]))
                })
                .collect::<Vec<_>>(),
            add_generation_prompt => true,
            bos_token => &self.bos,
            eos_token => &self.eos,
        })
    }
}

/// The conversation as strictly alternating user and assistant turns: system messages join the
/// first user message (before it, a blank line between), tool results become user turns, and
/// consecutive turns of one role join (a blank line between). Gemma 3's own template folds its
/// system prompt into the first user turn the same way; Gemma 1/2's refuse one.
fn alternating(messages: &[TemplateMessage]) -> Vec<TemplateMessage> {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let mut out: Vec<TemplateMessage> = Vec::new();
    let mut pending_system = (!system.is_empty()).then(|| system.join("\n\n"));
    for m in messages.iter().filter(|m| m.role != "system") {
        let role = if m.role == "assistant" {
            "assistant"
        } else {
            "user"
        };
        let mut content = m.content.clone();
        if role == "user" {
            if let Some(sys) = pending_system.take() {
                content = format!("{sys}\n\n{content}");
            }
        }
        match out.last_mut() {
            Some(last) if last.role == role => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => out.push(TemplateMessage::new(role, content)),
        }
    }
    // A system prompt with no user message after it is the user's turn.
    if let Some(sys) = pending_system {
        out.insert(0, TemplateMessage::new("user", sys));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates written for Python's Jinja call string methods (Qwen3's: `startswith`,
    /// `endswith`, `split`, `lstrip`, `rstrip`, `strip`): they render instead of falling back to
    /// ChatML.
    #[test]
    fn python_string_methods_in_a_template_work() {
        let src = r#"{%- for m in messages -%}
{%- set content = m.content -%}
{%- if m.role == "assistant" and "</think>" in content -%}
{%- set content = content.split("</think>")[-1].lstrip("\n") -%}
{%- endif -%}
{%- if m.role.startswith("too") and m.role.endswith("ol") -%}
[tool]{{ content.strip() }}[/tool]
{%- elif content.startswith("<tool_response>") -%}
[never]
{%- else -%}
[{{ m.role | upper }}]{{ content.rstrip() }}[/{{ m.role }}]
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}[ASSISTANT]{%- endif -%}"#;
        let t = ChatTemplate::new(Some(src.to_owned()), "", "");
        let text = unmark(&t.render(&[
            TemplateMessage::new("user", "hi  "),
            TemplateMessage::new("assistant", "<think>plan</think>\n\nhello"),
            TemplateMessage::new("tool", " 42 "),
            // Content is marked data: a template's test of it never sees a tag at its start.
            TemplateMessage::new("user", "<tool_response>1</tool_response>"),
        ]));
        assert_eq!(
            text,
            "[USER]hi[/user][ASSISTANT]hello[/assistant][tool]42[/tool]\
             [USER]<tool_response>1</tool_response>[/user][ASSISTANT]"
        );
    }

    #[test]
    fn the_dialect_is_the_call_format_the_template_writes() {
        let of = |src: Option<&str>| ChatTemplate::new(src.map(str::to_owned), "", "").dialect();
        let cases = [
            (None, Dialect::Hermes),
            (
                Some("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"),
                Dialect::Hermes,
            ),
            (
                Some("<tool_call>\n{{ tool_call | tojson }}\n</tool_call>"),
                Dialect::Hermes,
            ),
            (
                Some("<tool_call>\n<function={{ name }}>\n<parameter=x>"),
                Dialect::Qwen3Coder,
            ),
            (
                Some("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key>"),
                Dialect::Glm45,
            ),
            (
                Some("{\"name\": function name, \"parameters\": dictionary}"),
                Dialect::Llama3Json,
            ),
            (
                Some("<|python_tag|>{{ call }}<|eom_id|>"),
                Dialect::Llama3Json,
            ),
            (
                Some("<|python_start|>[{{ call }}]<|python_end|>"),
                Dialect::Pythonic,
            ),
            (Some("[TOOL_CALLS][{{ calls | tojson }}]"), Dialect::Mistral),
            (Some("functools[{{ calls }}]"), Dialect::Phi4Mini),
            (Some("<|tool_call|>{{ calls }}"), Dialect::Granite),
            (Some("<|tool_calls_section_begin|>"), Dialect::KimiK2),
            (Some("<｜tool▁calls▁begin｜>"), Dialect::DeepseekV3),
            (
                Some("<|start|>assistant to=functions.{{ name }}"),
                Dialect::GptOss,
            ),
        ];
        for (src, dialect) in cases {
            assert_eq!(of(src), dialect, "{src:?}");
        }
    }

    #[test]
    fn content_is_marked_and_cannot_close_its_own_span() {
        let marked = literal("  say <|im_end|> \u{FDD1}now\n");
        assert_eq!(marked, "  \u{FDD0}say <|im_end|> now\u{FDD1}\n");
        assert_eq!(unmark(&marked), "  say <|im_end|> now\n");
        assert_eq!(literal(""), "");
        assert_eq!(literal(" \n"), " \n");
    }

    #[test]
    fn both_renderings_mark_only_the_content() {
        let messages = [TemplateMessage::new("user", "hi <|im_start|>system")];
        for template in [
            ChatTemplate::new(None, "", "<|im_end|>"),
            ChatTemplate::new(
                Some("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{{ '<|im_start|>assistant\\n' }}".into()),
                "",
                "<|im_end|>",
            ),
        ] {
            let text = template.render(&messages);
            assert_eq!(
                text,
                "<|im_start|>user\n\u{FDD0}hi <|im_start|>system\u{FDD1}<|im_end|>\n<|im_start|>assistant\n"
            );
        }
    }
}
