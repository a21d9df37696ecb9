//! Response decoding: the server-sent events of a streamed Messages response (or one whole
//! message) as [`WireEvent`]s, sans-IO.

use serde_json::Value;
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::sse::{SseDecoder, SseEvent};
use toolbridge_protocol::types::{FinishReason, Usage};

use crate::error::ProviderError;
use crate::wire::WireEvent;

/// Turns the bytes of a streamed Messages response into wire events. Sans-IO: push bytes as they
/// arrive, call [`StreamDecoder::finish`] at the end of the body. After `message_stop` it is done
/// and ignores anything else; after an error its state is unspecified.
#[derive(Debug)]
pub struct StreamDecoder {
    pub(super) sse: SseDecoder,
    events: Vec<SseEvent>,
    /// For redacting upstream error messages.
    key: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    stop: Option<FinishReason>,
    saw_tool_use: bool,
    /// Blocks whose input arrived whole in `content_block_start`.
    whole_input: Vec<usize>,
    done: bool,
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new(None)
    }
}

impl StreamDecoder {
    /// A decoder; `key` is redacted from upstream error messages.
    pub fn new(key: Option<String>) -> Self {
        StreamDecoder {
            sse: SseDecoder::default(),
            events: Vec::new(),
            key,
            input_tokens: 0,
            output_tokens: 0,
            stop: None,
            saw_tool_use: false,
            whole_input: Vec::new(),
            done: false,
        }
    }

    /// `message_stop` arrived: the response is complete.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Takes bytes of the body; decoded events are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<WireEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let mut events = std::mem::take(&mut self.events);
        let pushed = self
            .sse
            .push(bytes, &mut events)
            .map_err(|e| ProviderError::BadResponse(e.to_string()));
        let result = pushed.and_then(|()| self.drain(&mut events, out));
        events.clear();
        self.events = events;
        result
    }

    /// The body ended. Without `message_stop` the response was cut off.
    pub fn finish(&mut self, out: &mut Vec<WireEvent>) -> Result<(), ProviderError> {
        if !self.done {
            let mut events = std::mem::take(&mut self.events);
            let pushed = self
                .sse
                .finish(&mut events)
                .map_err(|e| ProviderError::BadResponse(e.to_string()));
            pushed.and_then(|()| self.drain(&mut events, out))?;
        }
        if self.done {
            Ok(())
        } else {
            Err(ProviderError::BadResponse(
                "stream ended before message_stop".into(),
            ))
        }
    }

    fn drain(
        &mut self,
        events: &mut Vec<SseEvent>,
        out: &mut Vec<WireEvent>,
    ) -> Result<(), ProviderError> {
        for event in events.drain(..) {
            if self.done {
                break;
            }
            self.event(&event, out)?;
        }
        Ok(())
    }

    /// Takes one server-sent event.
    pub fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<WireEvent>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let name = event.event.as_deref().unwrap_or("message");
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::BadResponse(format!("invalid JSON in a `{name}` event ({e})"))
        })?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(name);
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.take_usage(usage);
                }
            }
            "content_block_start" => {
                let index = block_index(&data)?;
                let block = data.get("content_block").unwrap_or(&Value::Null);
                self.block(index, block, out);
            }
            "content_block_delta" => {
                let index = block_index(&data)?;
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.delta(index, delta, out);
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(sequence) = data.pointer("/delta/stop_sequence").and_then(Value::as_str)
                {
                    out.push(WireEvent::StopSequence(sequence.to_owned()));
                }
                if let Some(usage) = data.get("usage") {
                    self.take_usage(usage);
                }
            }
            "message_stop" => {
                let prompt = self.input_tokens;
                let completion = self.output_tokens;
                out.push(WireEvent::Usage(Usage {
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    total_tokens: prompt + completion,
                }));
                let fallback = if self.saw_tool_use {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                out.push(WireEvent::Finish(self.stop.unwrap_or(fallback)));
                self.done = true;
            }
            "error" => return Err(error_event(&data, &event.data, self.key.as_deref())),
            "content_block_stop" | "ping" => {}
            other => tracing::debug!(event = other, "anthropic: ignoring an unknown event"),
        }
        Ok(())
    }

    /// Input tokens count cached ones too (OpenAI's `prompt_tokens` includes them). Later usage
    /// objects are cumulative, so fields present replace earlier values.
    fn take_usage(&mut self, usage: &Value) {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        let input = field("input_tokens");
        let created = field("cache_creation_input_tokens");
        let read = field("cache_read_input_tokens");
        if input.is_some() || created.is_some() || read.is_some() {
            self.input_tokens = input.unwrap_or(0) + created.unwrap_or(0) + read.unwrap_or(0);
        }
        if let Some(output) = field("output_tokens") {
            self.output_tokens = output;
        }
    }

    fn block(&mut self, index: usize, block: &Value, out: &mut Vec<WireEvent>) {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text" => push_text(out, text("text"), WireEvent::Text),
            "thinking" => {
                push_text(out, text("thinking"), WireEvent::Reasoning);
                // A whole block (a non-streamed answer) carries its signature; a streamed one
                // starts empty and gets it as a `signature_delta`.
                push_text(out, text("signature"), WireEvent::ReasoningSignature);
            }
            "redacted_thinking" => push_text(out, text("data"), WireEvent::RedactedReasoning),
            "tool_use" => {
                self.saw_tool_use = true;
                out.push(WireEvent::ToolCall(ToolCallDelta {
                    index: Some(index),
                    id: Some(text("id").to_owned()),
                    kind: Some("function".into()),
                    function: Some(FunctionDelta {
                        name: Some(text("name").to_owned()),
                        arguments: Some(String::new()),
                    }),
                }));
                if let Some(Value::Object(input)) = block.get("input") {
                    if !input.is_empty() {
                        self.whole_input.push(index);
                        out.push(args_delta(index, Value::Object(input.clone()).to_string()));
                    }
                }
            }
            other => tracing::debug!(block = other, "anthropic: ignoring a content block"),
        }
    }

    fn delta(&mut self, index: usize, delta: &Value, out: &mut Vec<WireEvent>) {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text_delta" => push_text(out, text("text"), WireEvent::Text),
            "thinking_delta" => push_text(out, text("thinking"), WireEvent::Reasoning),
            "input_json_delta" => {
                let partial = text("partial_json");
                if partial.is_empty() {
                    return;
                }
                if self.whole_input.contains(&index) {
                    tracing::debug!(
                        "anthropic: ignoring input deltas of a block whose input came whole"
                    );
                    return;
                }
                out.push(args_delta(index, partial.to_owned()));
            }
            "signature_delta" => push_text(out, text("signature"), WireEvent::ReasoningSignature),
            // citations_delta, …
            other => tracing::trace!(delta = other, "anthropic: ignoring a delta"),
        }
    }
}

fn push_text(out: &mut Vec<WireEvent>, text: &str, make: fn(String) -> WireEvent) {
    if !text.is_empty() {
        out.push(make(text.to_owned()));
    }
}

pub(super) fn args_delta(index: usize, arguments: String) -> WireEvent {
    WireEvent::ToolCall(ToolCallDelta {
        index: Some(index),
        id: None,
        kind: None,
        function: Some(FunctionDelta {
            name: None,
            arguments: Some(arguments),
        }),
    })
}

fn block_index(data: &Value) -> Result<usize, ProviderError> {
    data.get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| ProviderError::BadResponse("a content block event has no index".into()))
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// An `error` event (or error body) as a typed error: the Anthropic error type gives the status
/// the same error would have had before the stream started (`overloaded_error` is 529, which is
/// transient like any 5xx).
fn error_event(data: &Value, raw: &str, key: Option<&str>) -> ProviderError {
    let status = match data.pointer("/error/type").and_then(Value::as_str) {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("billing_error") => 402,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("overloaded_error") => 529,
        _ => 500,
    };
    ProviderError::from_status(status, raw, None, key)
}

/// The events of a whole (non-streamed) Messages response.
pub fn message_events(body: &str, key: Option<&str>) -> Result<Vec<WireEvent>, ProviderError> {
    let message: Value = serde_json::from_str(body)
        .map_err(|e| ProviderError::BadResponse(format!("the response is not valid JSON ({e})")))?;
    if message.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_event(&message, body, key));
    }
    let Some(content) = message.get("content").and_then(Value::as_array) else {
        return Err(ProviderError::BadResponse(
            "the response has no content array".into(),
        ));
    };
    let mut decoder = StreamDecoder::new(key.map(str::to_owned));
    let mut out = Vec::new();
    if let Some(usage) = message.get("usage") {
        decoder.take_usage(usage);
    }
    for (index, block) in content.iter().enumerate() {
        decoder.block(index, block, &mut out);
    }
    if let Some(reason) = message.get("stop_reason").and_then(Value::as_str) {
        decoder.stop = Some(stop_reason(reason));
    }
    if let Some(sequence) = message.get("stop_sequence").and_then(Value::as_str) {
        out.push(WireEvent::StopSequence(sequence.to_owned()));
    }
    decoder.event(
        &SseEvent {
            event: Some("message_stop".into()),
            data: r#"{"type":"message_stop"}"#.into(),
        },
        &mut out,
    )?;
    Ok(out)
}
