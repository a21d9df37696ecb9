//! The `chat {model}` span of each model call, with the field names of OpenTelemetry's GenAI
//! semantic conventions, so an OpenTelemetry layer (the CLI's `[telemetry]`) exports it as is.
//!
//! The spans are plain `tracing` spans: without such a layer they cost one disabled-span check.
//! Message content goes into a span only when [`set_capture_content`] turned it on (the CLI does
//! for `capture_content = true`): prompts and answers are the users' data, off by default.

use toolbridge_protocol::decode::ModelEvent;
use toolbridge_protocol::types::ChatRequest;
use tracing::field::Empty;
use tracing::Span;

pub use toolbridge_protocol::telemetry::{capture_content, set_capture_content};

/// The span of one model call (all its arms), a child of the current span.
pub(crate) fn chat_span(request: &ChatRequest) -> Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %request.model,
        gen_ai.provider.name = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
    );
    if capture_content() && !span.is_disabled() {
        if let Ok(messages) = serde_json::to_string(&request.messages) {
            span.record("gen_ai.input.messages", messages);
        }
    }
    span
}

/// What a chat span records as the stream goes by.
#[derive(Default)]
pub(crate) struct ChatRecorder {
    /// The answer's text, kept only when content is captured.
    text: Option<String>,
}

impl ChatRecorder {
    pub(crate) fn new() -> Self {
        ChatRecorder {
            text: capture_content().then(String::new),
        }
    }

    pub(crate) fn event(&mut self, span: &Span, event: &ModelEvent) {
        match event {
            ModelEvent::Usage { usage } => {
                span.record("gen_ai.usage.input_tokens", usage.prompt_tokens);
                span.record("gen_ai.usage.output_tokens", usage.completion_tokens);
            }
            ModelEvent::Finish { reason } => {
                // A JSON array of strings: the convention's attribute is a string array, and a
                // `tracing` field holds one value.
                let reason = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                span.record(
                    "gen_ai.response.finish_reasons",
                    format!("[{}]", serde_json::Value::String(reason)),
                );
                if let Some(text) = self.text.take() {
                    let output = serde_json::json!([{
                        "role": "assistant",
                        "parts": [{"type": "text", "content": text}],
                    }]);
                    span.record("gen_ai.output.messages", output.to_string());
                }
            }
            ModelEvent::Text { text } => {
                if let Some(all) = &mut self.text {
                    all.push_str(text);
                }
            }
            _ => {}
        }
    }

    /// The arm that answered: `provider:model@url` names the provider and the upstream model.
    pub(crate) fn arm(span: &Span, described: &str) {
        let without_url = described.split('@').next().unwrap_or(described);
        let (provider, model) = without_url.split_once(':').unwrap_or(("", without_url));
        if !provider.is_empty() {
            span.record("gen_ai.provider.name", provider);
        }
        span.record("gen_ai.response.model", model);
    }
}
