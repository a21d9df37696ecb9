//! The chat template: the GGUF's `tokenizer.chat_template` (Jinja, rendered with `minijinja`), or
//! ChatML when the file has none or its template does not render.
//!
//! The messages given here are plain role/text pairs: tool calls and results have already been
//! re-encoded as text by `toolbridge_protocol::mode::reencode_history`, exactly as prompt mode
//! does, so any template that renders `role` and `content` works.

use minijinja::{context, Environment};
use serde::Serialize;

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

    /// Whether the GGUF's own template is used (false: ChatML).
    pub fn is_native(&self) -> bool {
        self.source.is_some()
    }

    /// Renders a conversation followed by the assistant's generation prompt.
    pub fn render(&self, messages: &[TemplateMessage]) -> String {
        match &self.source {
            Some(src) => match self.render_jinja(src, messages) {
                Ok(text) => text,
                Err(err) => {
                    tracing::warn!(error = %err, "the model's chat template does not render; using ChatML");
                    chatml(messages)
                }
            },
            None => chatml(messages),
        }
    }

    fn render_jinja(
        &self,
        src: &str,
        messages: &[TemplateMessage],
    ) -> Result<String, minijinja::Error> {
        let mut env = Environment::new();
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
