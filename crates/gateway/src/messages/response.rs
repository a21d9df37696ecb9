//! A collected answer as an Anthropic `message`: `msg_…` id, `thinking`, `text` and `tool_use`
//! blocks (`toolu_…` ids, `input` as an object), `stop_reason`, and `usage` with the cache
//! fields (always 0: the gateway does not know them).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;
use serde_json::{Map, Value};
use toolbridge_protocol::types::{FinishReason, Usage};
use toolbridge_providers::ModelResponse;

use crate::state::AppState;

/// A fresh message id, `msg_` and 24 random letters and digits.
pub(crate) fn message_id() -> String {
    let mut id = String::with_capacity(28);
    id.push_str("msg_");
    Alphanumeric.append_string(&mut rand::rng(), &mut id, 24);
    id
}

/// The `toolu_…` id a client sees for one of the gateway's call ids (the mapping is fixed, so
/// a `tool_result` naming it can be matched in the next turn whatever the upstream).
pub(crate) fn tool_use_id(id: &str) -> String {
    if id.starts_with("toolu_") {
        return id.to_owned();
    }
    let rest = id.strip_prefix("call_").unwrap_or(id);
    let mut out = String::with_capacity(rest.len() + 6);
    out.push_str("toolu_");
    out.extend(rest.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    }));
    out
}

/// Anthropic's `stop_reason` for a finish reason; `stop_sequence` when the answer ended on one
/// of the client's stop sequences.
pub(crate) fn stop_reason(
    finish: Option<FinishReason>,
    has_calls: bool,
    stop_sequence: bool,
) -> &'static str {
    match finish {
        Some(FinishReason::Length) => "max_tokens",
        Some(FinishReason::ContentFilter) => "refusal",
        _ if has_calls => "tool_use",
        _ if stop_sequence => "stop_sequence",
        _ => "end_turn",
    }
}

/// A call's arguments as the `input` object (a completed call's arguments are a JSON object;
/// anything else is given as `{}`).
pub(crate) fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

#[derive(Serialize)]
pub(crate) struct WireUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl From<Option<&Usage>> for WireUsage {
    fn from(usage: Option<&Usage>) -> Self {
        WireUsage {
            input_tokens: usage.map_or(0, |u| u.prompt_tokens),
            output_tokens: usage.map_or(0, |u| u.completion_tokens),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
        }
    }
}

/// How the request asked for the answer.
pub(crate) struct Form {
    /// The model name the client sent.
    pub model: String,
    /// `disable_parallel_tool_use`: calls after the first are left out.
    pub only_first_call: bool,
    pub stop_sequences: Vec<String>,
}

/// Which of the client's stop sequences ended an answer, if the model reported one.
pub(crate) fn matched_stop<'a>(stops: &'a [String], matched: Option<&str>) -> Option<&'a str> {
    let matched = matched?;
    stops.iter().map(String::as_str).find(|s| *s == matched)
}

/// The non-streaming answer.
pub(crate) fn render(
    state: &AppState,
    form: &Form,
    answer: ModelResponse,
    usage: Option<Usage>,
) -> Response {
    // The visible prefix (malformed call markup stays in the log), cut in place: no copy.
    let visible = answer.visible_text().len();
    let unsigned = answer.unsigned_reasoning().to_owned();
    let mut text = answer.text;
    text.truncate(visible);
    let mut calls = answer.calls;
    if form.only_first_call {
        calls.truncate(1);
    }
    state.metrics.tool_calls(calls.len());
    let mut content = Vec::with_capacity(calls.len() + 2);
    // The upstream's signed blocks as they came, then reasoning it did not sign (another
    // upstream's) with an empty signature: there is none to give.
    for block in &answer.thinking_blocks {
        content.push(serde_json::to_value(block).unwrap_or_default());
    }
    if !unsigned.is_empty() {
        content
            .push(serde_json::json!({"type": "thinking", "thinking": unsigned, "signature": ""}));
    }
    if !text.is_empty() || calls.is_empty() {
        content.push(serde_json::json!({"type": "text", "text": text}));
    }
    for call in &calls {
        content.push(serde_json::json!({
            "type": "tool_use",
            "id": tool_use_id(&call.id),
            "name": call.name,
            "input": input_object(&call.arguments),
        }));
    }
    let stop = matched_stop(&form.stop_sequences, answer.stop_sequence.as_deref());
    let body = serde_json::json!({
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": form.model,
        "content": content,
        "stop_reason": stop_reason(answer.finish_reason, !calls.is_empty(), stop.is_some()),
        "stop_sequence": stop,
        "usage": WireUsage::from(usage.as_ref()),
    });
    let mut response = body.to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn ids_and_stop_reasons_look_like_anthropic_ones() {
        let id = message_id();
        assert!(id.starts_with("msg_") && id.len() == 28);
        assert_ne!(id, message_id());
        assert_eq!(tool_use_id("call_abc123_0"), "toolu_abc123_0");
        assert_eq!(tool_use_id("toolu_x"), "toolu_x");
        assert_eq!(tool_use_id("a.b"), "toolu_a_b");
        assert_eq!(
            stop_reason(Some(FinishReason::Length), true, false),
            "max_tokens"
        );
        assert_eq!(
            stop_reason(Some(FinishReason::ToolCalls), true, false),
            "tool_use"
        );
        assert_eq!(
            stop_reason(Some(FinishReason::Stop), false, true),
            "stop_sequence"
        );
        assert_eq!(
            stop_reason(Some(FinishReason::Stop), false, false),
            "end_turn"
        );
        assert_eq!(input_object("[1]"), serde_json::json!({}));
        let stops = vec!["END".to_owned()];
        assert_eq!(matched_stop(&stops, Some("END")), Some("END"));
        assert_eq!(matched_stop(&stops, Some("</tool_call>")), None);
    }
}
