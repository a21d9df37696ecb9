//! The OpenAI-compatible Chat Completions client. One client serves OpenAI, Ollama's `/v1`, vLLM,
//! llama.cpp's server, LM Studio, OpenRouter and every other server speaking this API.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::openai::{ChatCompletion, ChatCompletionChunk};
use toolbridge_protocol::sse::{SseDecoder, SseEvent};
use toolbridge_protocol::types::{ChatRequest, FinishReason, Usage};

use crate::error::ProviderError;
use crate::http::{self, RetryPolicy, Timeouts};
use crate::wire::{Upstream, WireEvent, WireStream};

/// How to reach one OpenAI-compatible model.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// What to call this upstream in logs and reports, e.g. `openai:gpt-4o-mini`.
    pub name: String,
    /// The API base, e.g. `https://api.openai.com/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …`; never logged, never in an error.
    pub api_key: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// Stream responses (the default); when off, one JSON response is read.
    pub stream: bool,
    /// Whether the server honours the `tools` field (resolves the `auto` tool mode).
    pub native_tools: bool,
    /// Whether the server knows OpenAI's `max_completion_tokens` (OpenAI and Azure OpenAI do;
    /// for other servers it is sent as `max_tokens`). Set from the base URL by [`OpenAiConfig::new`].
    pub max_completion_tokens: bool,
    /// The cap on a response: a whole non-streamed body, or what a stream delivers.
    pub max_response_bytes: usize,
    /// What an Anthropic client's `thinking` becomes (see [`ClientThinking`]).
    pub client_thinking: ClientThinking,
}

/// How an Anthropic client's `thinking` (`{"type": "enabled", "budget_tokens": N}` or
/// `{"type": "disabled"}`, carried in [`crate::anthropic::CLIENT_THINKING_FIELD`]) reaches an
/// OpenAI-compatible upstream. There is no common field: OpenAI's `reasoning_effort` is refused by
/// models without reasoning, and Claude Code sends `thinking` on every request — so nothing is
/// sent unless the arm says which form its server takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientThinking {
    /// Not sent.
    #[default]
    Drop,
    /// `reasoning_effort`: `low` below 4096 budget tokens, `medium` below 16384 (or without a
    /// budget), else `high`; nothing when thinking is disabled.
    ReasoningEffort,
    /// `chat_template_kwargs.enable_thinking`: true when enabled, false when disabled.
    EnableThinking,
}

impl ClientThinking {
    /// Writes the client's `thinking` into `body` in this form.
    fn apply(self, thinking: &Value, body: &mut serde_json::Map<String, Value>) {
        // `enabled`, `adaptive` and any newer kind think; only `disabled` does not.
        let enabled = thinking.get("type").and_then(Value::as_str) != Some("disabled");
        match self {
            ClientThinking::Drop => {}
            ClientThinking::ReasoningEffort => {
                if enabled {
                    let effort = match thinking.get("budget_tokens").and_then(Value::as_u64) {
                        Some(0..4096) => "low",
                        // No budget (`adaptive`): the middle.
                        None | Some(4096..16384) => "medium",
                        Some(_) => "high",
                    };
                    body.insert("reasoning_effort".into(), effort.into());
                }
            }
            ClientThinking::EnableThinking => {
                let kwargs = body
                    .entry("chat_template_kwargs")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(kwargs) = kwargs {
                    kwargs.insert("enable_thinking".into(), enabled.into());
                }
            }
        }
    }
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let model = model.into();
        let base_url = base_url.into();
        let host = reqwest::Url::parse(&base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        OpenAiConfig {
            name: format!("openai:{model}"),
            max_completion_tokens: host == "api.openai.com" || host.ends_with(".openai.azure.com"),
            max_response_bytes: http::DEFAULT_MAX_RESPONSE_BYTES,
            client_thinking: ClientThinking::default(),
            base_url,
            model,
            api_key: None,
            extra_headers: Vec::new(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            stream: true,
            native_tools: true,
        }
    }
}

/// The client.
#[derive(Clone)]
pub struct OpenAiClient {
    config: Arc<OpenAiConfig>,
    http: http::HttpClient,
    /// `{base_url}/chat/completions`, parsed once (parsing it per request showed in profiles).
    url: reqwest::Url,
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let url = reqwest::Url::parse(&config.base_url).map_err(|e| {
            ProviderError::Config(format!("invalid base URL `{}`: {e}", config.base_url))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ProviderError::Config(format!(
                "base URL `{}` is not http(s)",
                config.base_url
            )));
        }
        let http = http::HttpClient::new(&config.timeouts)?;
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let url = reqwest::Url::parse(&endpoint).map_err(|e| {
            ProviderError::Config(format!("invalid base URL `{}`: {e}", config.base_url))
        })?;
        Ok(OpenAiClient {
            config: Arc::new(config),
            http,
            url,
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// Says where a connection failure happened (provider, model, base URL; never a key).
    fn target(&self, error: ProviderError) -> ProviderError {
        let provider = self.config.name.split(':').next().unwrap_or("openai");
        let what = format!("{provider} model `{}`", self.config.model);
        http::with_target(error, &what, &self.config.base_url)
    }
}

/// The request body: the request as OpenAI JSON with our model name and streaming options, and
/// without toolbridge's own fields (`is_error` on tool messages, `thinking_blocks`).
fn request_body(request: &ChatRequest, config: &OpenAiConfig) -> Result<Value, ProviderError> {
    let mut body = serde_json::to_value(request)
        .map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))?;
    let Value::Object(map) = &mut body else {
        return Err(ProviderError::Config(
            "request did not encode as an object".into(),
        ));
    };
    map.insert("model".into(), Value::String(config.model.clone()));
    // An Anthropic client's `thinking`: in the form the arm names, or not at all.
    if let Some(thinking) = map.remove(crate::anthropic::CLIENT_THINKING_FIELD) {
        config.client_thinking.apply(&thinking, map);
    }
    if let Some(Value::Array(messages)) = map.get_mut("messages") {
        for m in messages {
            if let Value::Object(m) = m {
                m.remove("is_error");
                // Signed reasoning is Anthropic's, and some servers refuse unknown fields.
                m.remove("thinking_blocks");
            }
        }
    }
    // OpenAI's newer name for `max_tokens`; servers that do not know it would ignore it.
    if !config.max_completion_tokens {
        if let Some(limit) = map.remove("max_completion_tokens") {
            map.entry("max_tokens").or_insert(limit);
        }
    }
    if config.stream {
        map.insert("stream".into(), Value::Bool(true));
        map.entry("stream_options")
            .or_insert_with(|| serde_json::json!({"include_usage": true}));
    } else {
        map.remove("stream");
        map.remove("stream_options");
    }
    Ok(body)
}

impl Upstream for OpenAiClient {
    fn describe(&self) -> String {
        self.config.name.clone()
    }

    fn native_tools(&self) -> bool {
        self.config.native_tools
    }

    fn send(&self, request: ChatRequest) -> WireStream {
        let client = self.clone();
        Box::pin(async_stream::try_stream! {
            let config = &client.config;
            let body = request_body(&request, config)?;
            let url = &client.url;
            let key = config.api_key.as_deref();
            let deadline = Instant::now() + config.timeouts.total;
            let mut attempt = 0;
            'attempts: loop {
                let mut builder = client.http.get().post(url.clone()).json(&body);
                if let Some(key) = key {
                    builder = builder.bearer_auth(key);
                }
                for (name, value) in &config.extra_headers {
                    builder = builder.header(name, value);
                }
                let mut yielded = false;
                let sent = http::send(builder, &config.timeouts, deadline, key).await;
                let response = match sent.map_err(|e| client.target(e)) {
                    Ok(r) => r,
                    Err(e) => match config.retry.delay(attempt, &e, deadline) {
                        Some(wait) => {
                            tracing::debug!(upstream = %config.name, error = %e, ?wait, "retrying");
                            tokio::time::sleep(wait).await;
                            attempt += 1;
                            continue 'attempts;
                        }
                        None => Err(e)?,
                    },
                };
                if !config.stream {
                    let body = http::read_body(response, config.max_response_bytes, deadline).await?;
                    let text = String::from_utf8_lossy(&body);
                    for event in completion_events(&text)? {
                        yield event;
                    }
                    return;
                }
                let mut chunks = Box::pin(http::body_chunks(response, config.timeouts.idle, deadline));
                let mut sse = SseDecoder::new(config.max_response_bytes);
                let mut budget = http::ContentBudget::new(config.max_response_bytes);
                let mut decoder = ChunkDecoder::default();
                let mut events = Vec::new();
                let mut wire = Vec::new();
                loop {
                    let chunk = match chunks.next().await {
                        Some(Ok(chunk)) => chunk,
                        Some(Err(e)) => {
                            if !yielded {
                                if let Some(wait) = config.retry.delay(attempt, &e, deadline) {
                                    tokio::time::sleep(wait).await;
                                    attempt += 1;
                                    continue 'attempts;
                                }
                            }
                            Err(e)?;
                            return;
                        }
                        None => {
                            sse.finish(&mut events).map_err(|e| ProviderError::BadResponse(e.to_string()))?;
                            for event in events.drain(..) {
                                decoder.event(&event, &mut wire)?;
                            }
                            for event in wire.drain(..) {
                                budget.spend(&event)?;
                                yield event;
                            }
                            for event in decoder.finish()? {
                                yield event;
                            }
                            return;
                        }
                    };
                    sse.push(&chunk, &mut events).map_err(|e| ProviderError::BadResponse(e.to_string()))?;
                    for event in events.drain(..) {
                        decoder.event(&event, &mut wire)?;
                    }
                    for event in wire.drain(..) {
                        budget.spend(&event)?;
                        yielded |= event.is_content();
                        yield event;
                    }
                    if decoder.done {
                        for event in decoder.finish()? {
                            yield event;
                        }
                        return;
                    }
                }
            }
        })
    }
}

/// Turns streamed chunks (SSE `data:` payloads) into wire events.
#[derive(Debug, Default)]
pub struct ChunkDecoder {
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// `[DONE]` arrived.
    pub done: bool,
}

impl ChunkDecoder {
    /// Takes one SSE event.
    pub fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<WireEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        if event.event.as_deref() == Some("error") || data.starts_with("{\"error\"") {
            let message = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| data.chars().take(300).collect());
            return Err(ProviderError::Upstream {
                status: 500,
                message,
            });
        }
        let chunk: ChatCompletionChunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::BadResponse(format!("a streamed chunk is not valid JSON ({e})"))
        })?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        // Only the first choice is used (toolbridge never asks for n > 1).
        if let Some(choice) = chunk.choices.into_iter().find(|c| c.index == 0) {
            let delta = choice.delta;
            if let Some(r) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                out.push(WireEvent::Reasoning(r));
            }
            if let Some(t) = delta.content.filter(|t| !t.is_empty()) {
                out.push(WireEvent::Text(t));
            }
            for call in delta.tool_calls {
                out.push(WireEvent::ToolCall(call));
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(())
    }

    /// The stream ended: usage and the finish reason. A stream that ended with neither `[DONE]`
    /// nor a finish reason was cut off.
    pub fn finish(&mut self) -> Result<Vec<WireEvent>, ProviderError> {
        if !self.done && self.finish.is_none() {
            return Err(ProviderError::BadResponse(
                "the stream ended before it was complete".into(),
            ));
        }
        let mut out = Vec::new();
        if let Some(usage) = self.usage.take() {
            out.push(WireEvent::Usage(usage));
        }
        out.push(WireEvent::Finish(
            self.finish.take().unwrap_or(FinishReason::Stop),
        ));
        Ok(out)
    }
}

/// The events of a non-streamed response.
pub fn completion_events(body: &str) -> Result<Vec<WireEvent>, ProviderError> {
    let completion: ChatCompletion = serde_json::from_str(body)
        .map_err(|e| ProviderError::BadResponse(format!("the response is not valid JSON ({e})")))?;
    let mut out = Vec::new();
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ProviderError::BadResponse(
            "the response has no choices".into(),
        ));
    };
    let message = choice.message;
    if let Some(r) = message.reasoning_content.filter(|r| !r.is_empty()) {
        out.push(WireEvent::Reasoning(r));
    }
    if let Some(t) = message.content.filter(|t| !t.is_empty()) {
        out.push(WireEvent::Text(t));
    }
    for (i, call) in message.tool_calls.into_iter().enumerate() {
        out.push(WireEvent::ToolCall(ToolCallDelta {
            index: Some(i),
            id: Some(call.id),
            kind: Some("function".into()),
            function: Some(FunctionDelta {
                name: Some(call.name),
                arguments: Some(call.arguments),
            }),
        }));
    }
    if let Some(usage) = completion.usage {
        out.push(WireEvent::Usage(usage));
    }
    out.push(WireEvent::Finish(
        choice.finish_reason.unwrap_or(FinishReason::Stop),
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(data: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: data.into(),
        }
    }

    #[test]
    fn decodes_a_tool_call_stream() {
        let mut d = ChunkDecoder::default();
        let mut out = Vec::new();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#,
            "[DONE]",
        ] {
            d.event(&sse(data), &mut out).unwrap();
        }
        assert!(d.done);
        out.extend(d.finish().unwrap());
        assert_eq!(out.len(), 4);
        assert!(matches!(&out[0], WireEvent::ToolCall(c) if c.id.as_deref() == Some("c")));
        assert!(matches!(out[2], WireEvent::Usage(u) if u.total_tokens == 3));
        assert_eq!(out[3], WireEvent::Finish(FinishReason::ToolCalls));
    }

    #[test]
    fn bad_json_and_cut_streams_are_errors() {
        let mut d = ChunkDecoder::default();
        let mut out = Vec::new();
        assert!(matches!(
            d.event(&sse("{not json"), &mut out),
            Err(ProviderError::BadResponse(_))
        ));
        let mut d = ChunkDecoder::default();
        d.event(
            &sse(r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#),
            &mut out,
        )
        .unwrap();
        assert!(matches!(d.finish(), Err(ProviderError::BadResponse(_))));
    }

    #[test]
    fn error_events_mid_stream_are_upstream_errors() {
        let mut d = ChunkDecoder::default();
        let e = d
            .event(
                &sse(r#"{"error":{"message":"overloaded"}}"#),
                &mut Vec::new(),
            )
            .unwrap_err();
        assert_eq!(
            e,
            ProviderError::Upstream {
                status: 500,
                message: "overloaded".into()
            }
        );
    }

    #[test]
    fn body_sets_model_streaming_and_drops_is_error() {
        let mut config = OpenAiConfig::new("http://x/v1", "real-model");
        let req: ChatRequest = serde_json::from_str(
            r#"{"model":"alias","messages":[{"role":"tool","tool_call_id":"1","content":"x","is_error":true},
                {"role":"assistant","content":"a","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}]}],"seed":7}"#,
        )
        .unwrap();
        let body = request_body(&req, &config).unwrap();
        assert!(
            body["messages"][1].get("thinking_blocks").is_none(),
            "{body}"
        );
        assert_eq!(body["messages"][1]["content"], "a");
        assert_eq!(body["model"], "real-model");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["seed"], 7);
        assert!(body["messages"][0].get("is_error").is_none());
        config.stream = false;
        let body = request_body(&req, &config).unwrap();
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn an_anthropic_clients_thinking_is_not_sent() {
        let config = OpenAiConfig::new("http://x/v1", "real-model");
        let mut req: ChatRequest =
            serde_json::from_str(r#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#)
                .unwrap();
        req.extra.insert(
            crate::anthropic::CLIENT_THINKING_FIELD.into(),
            serde_json::json!({"type": "adaptive"}),
        );
        let body = request_body(&req, &config).unwrap();
        assert!(body.get(crate::anthropic::CLIENT_THINKING_FIELD).is_none());
        assert!(body.get("thinking").is_none());
    }

    #[test]
    fn an_anthropic_clients_thinking_takes_the_form_the_arm_names() {
        let body_for = |form: ClientThinking, thinking: serde_json::Value| {
            let mut config = OpenAiConfig::new("http://x/v1", "real-model");
            config.client_thinking = form;
            let mut req: ChatRequest = serde_json::from_str(
                r#"{"model":"m","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"k":1}}"#,
            )
            .unwrap();
            req.extra
                .insert(crate::anthropic::CLIENT_THINKING_FIELD.into(), thinking);
            let body = request_body(&req, &config).unwrap();
            assert!(body.get(crate::anthropic::CLIENT_THINKING_FIELD).is_none());
            assert!(body.get("thinking").is_none());
            body
        };
        let enabled = |budget: u64| serde_json::json!({"type": "enabled", "budget_tokens": budget});
        let disabled = serde_json::json!({"type": "disabled"});
        for (budget, effort) in [(1024, "low"), (4096, "medium"), (16384, "high")] {
            let body = body_for(ClientThinking::ReasoningEffort, enabled(budget));
            assert_eq!(body["reasoning_effort"], effort, "{budget}");
        }
        let body = body_for(
            ClientThinking::ReasoningEffort,
            serde_json::json!({"type": "adaptive"}),
        );
        assert_eq!(body["reasoning_effort"], "medium");
        let body = body_for(ClientThinking::ReasoningEffort, disabled.clone());
        assert!(body.get("reasoning_effort").is_none(), "{body}");
        // The template flag joins the request's own template arguments.
        let body = body_for(ClientThinking::EnableThinking, enabled(2048));
        assert_eq!(
            body["chat_template_kwargs"],
            serde_json::json!({"k": 1, "enable_thinking": true})
        );
        let body = body_for(ClientThinking::EnableThinking, disabled);
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        let body = body_for(ClientThinking::Drop, enabled(2048));
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(body["chat_template_kwargs"], serde_json::json!({"k": 1}));
    }

    #[test]
    fn max_completion_tokens_is_max_tokens_where_the_server_lacks_it() {
        let req: ChatRequest = serde_json::from_str(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":77}"#,
        )
        .unwrap();
        let local = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        assert!(!local.max_completion_tokens);
        let body = request_body(&req, &local).unwrap();
        assert_eq!(body["max_tokens"], 77);
        assert!(body.get("max_completion_tokens").is_none());
        let openai = OpenAiConfig::new("https://api.openai.com/v1", "gpt-5");
        let body = request_body(&req, &openai).unwrap();
        assert_eq!(body["max_completion_tokens"], 77);
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn non_streamed_completion() {
        let events = completion_events(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
        )
        .unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(events[0], WireEvent::Text("hi".into()));
    }
}
