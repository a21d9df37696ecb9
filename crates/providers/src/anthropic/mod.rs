//! The Anthropic Messages API client.
//!
//! Requests are translated from our OpenAI-shaped [`ChatRequest`] into a Messages body
//! ([`encode_request`], a pure function), always streamed, and the server-sent events are turned
//! into [`WireEvent`](crate::wire::WireEvent)s by [`StreamDecoder`], a sans-IO state machine fed with raw bytes. Transport,
//! deadlines and retries come from [`crate::http`].
//!
//! Anthropic is stricter than OpenAI about conversation shape, so the encoder repairs what it must:
//! roles alternate (consecutive same-role messages are merged), every `tool_use` is answered by a
//! `tool_result` at the start of the next user turn (a missing one is answered with
//! [`texts::ERROR_FAILED`](toolbridge_protocol::texts::ERROR_FAILED)), and a `tool_result` answering no `tool_use` is dropped.
//!
//! The parts: `encode.rs` builds the request body, `decode.rs` turns the response (streamed or
//! whole) into wire events, and this file holds the configuration and the client that does the
//! I/O between them; the tests are in `tests/`.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::time::Instant;
use toolbridge_protocol::sse::SseDecoder;
use toolbridge_protocol::types::ChatRequest;

use crate::error::ProviderError;
use crate::http::{self, RetryPolicy, Timeouts};
use crate::wire::{Upstream, WireStream};

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use decode::{message_events, StreamDecoder};
pub use encode::encode_request;

/// The public Anthropic API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent unless configured otherwise.
pub const DEFAULT_VERSION: &str = "2023-06-01";
/// The extra request field that carries an Anthropic client's `thinking` setting (the gateway's
/// `/v1/messages` puts it there): an Anthropic upstream receives it as `thinking`; OpenAI-compatible
/// upstreams leave it out, since they have no common equivalent (OpenAI's `reasoning_effort` is
/// refused by models without reasoning, and Claude Code sends `thinking` on every request).
pub const CLIENT_THINKING_FIELD: &str = "anthropic_thinking";
/// `max_tokens` when the request has none (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// How to reach one Anthropic model.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// The API base; requests go to `{base_url}/v1/messages` (a base that already ends in `/v1`
    /// is accepted too).
    pub base_url: String,
    pub model: String,
    /// Sent as `x-api-key`; never logged, never in an error.
    pub api_key: Option<String>,
    /// The `anthropic-version` header.
    pub version: String,
    /// Used when the request has no `max_tokens`.
    pub max_tokens: u32,
    pub extra_headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// The cap on a response: a whole JSON body, or what a stream delivers.
    pub max_response_bytes: usize,
}

impl AnthropicConfig {
    /// The defaults for `model` on the public API, without a key.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicConfig {
            model: model.into(),
            ..Self::default()
        }
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        AnthropicConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: String::new(),
            api_key: None,
            version: DEFAULT_VERSION.to_owned(),
            max_tokens: DEFAULT_MAX_TOKENS,
            extra_headers: Vec::new(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            max_response_bytes: http::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("version", &self.version)
            .field("max_tokens", &self.max_tokens)
            .field(
                "extra_headers",
                &self
                    .extra_headers
                    .iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>(),
            )
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct AnthropicClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: AnthropicConfig,
    url: reqwest::Url,
    headers: HeaderMap,
    http: http::HttpClient,
}

impl AnthropicClient {
    /// Validates the configuration (URL, model, header values) and builds the HTTP client.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        if config.model.trim().is_empty() {
            return Err(ProviderError::Config(
                "the Anthropic upstream has no model name".into(),
            ));
        }
        let url = messages_url(&config.base_url)?;
        let headers = build_headers(&config)?;
        let http = http::HttpClient::new(&config.timeouts)?;
        Ok(AnthropicClient {
            inner: Arc::new(Inner {
                config,
                url,
                headers,
                http,
            }),
        })
    }

    pub fn config(&self) -> &AnthropicConfig {
        &self.inner.config
    }
}

fn messages_url(base_url: &str) -> Result<reqwest::Url, ProviderError> {
    let base = base_url.trim().trim_end_matches('/');
    let full = if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    };
    let url = reqwest::Url::parse(&full)
        .map_err(|e| ProviderError::Config(format!("invalid base URL `{base}`: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderError::Config(format!(
            "base URL `{base}` is not http(s)"
        )));
    }
    Ok(url)
}

fn build_headers(config: &AnthropicConfig) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let version = HeaderValue::from_str(&config.version).map_err(|_| {
        ProviderError::Config(format!(
            "invalid anthropic-version `{}`",
            config.version.escape_debug()
        ))
    })?;
    headers.insert(HeaderName::from_static("anthropic-version"), version);
    if let Some(key) = &config.api_key {
        let mut value = HeaderValue::from_str(key.trim()).map_err(|_| {
            ProviderError::Config(
                "the Anthropic API key contains characters not allowed in an HTTP header".into(),
            )
        })?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-api-key"), value);
    }
    for (name, value) in &config.extra_headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            ProviderError::Config(format!("invalid header name `{}`", name.escape_debug()))
        })?;
        // The value may be a secret: never quote it.
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| ProviderError::Config(format!("invalid value for header `{name}`")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

impl Upstream for AnthropicClient {
    fn describe(&self) -> String {
        format!("anthropic:{}", self.inner.config.model)
    }

    fn native_tools(&self) -> bool {
        true
    }

    fn send(&self, request: ChatRequest) -> WireStream {
        let inner = Arc::clone(&self.inner);
        Box::pin(async_stream::try_stream! {
            let config = &inner.config;
            let body = serde_json::to_vec(&encode_request(&request, config))
                .map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))?;
            let body = Bytes::from(body);
            let key = config.api_key.as_deref();
            let deadline = Instant::now() + config.timeouts.total;
            let mut attempt = 0;
            'attempts: loop {
                let builder = inner
                    .http
                    .get()
                    .post(inner.url.clone())
                    .headers(inner.headers.clone())
                    .body(body.clone());
                let sent = http::send(builder, &config.timeouts, deadline, key).await;
                let what = format!("anthropic model `{}`", config.model);
                let response = match sent.map_err(|e| http::with_target(e, &what, &config.base_url)) {
                    Ok(r) => r,
                    Err(e) => match config.retry.delay(attempt, &e, deadline) {
                        Some(wait) => {
                            tracing::debug!(model = %config.model, error = %e, ?wait, "anthropic: retrying");
                            tokio::time::sleep(wait).await;
                            attempt += 1;
                            continue 'attempts;
                        }
                        None => {
                            Err(e)?;
                            return;
                        }
                    },
                };
                if is_json(response.headers()) {
                    // A compatible server that ignored `stream: true` and sent one message.
                    let body = http::read_body(response, config.max_response_bytes, deadline).await?;
                    let text = String::from_utf8_lossy(&body);
                    for event in message_events(&text, key)? {
                        yield event;
                    }
                    return;
                }
                let mut chunks = Box::pin(http::body_chunks(response, config.timeouts.idle, deadline));
                let mut decoder = StreamDecoder::new(key.map(str::to_owned));
                decoder.sse = SseDecoder::new(config.max_response_bytes);
                let mut budget = http::ContentBudget::new(config.max_response_bytes);
                let mut events = Vec::new();
                let mut yielded = false;
                loop {
                    let step = match chunks.next().await {
                        Some(Ok(chunk)) => decoder.push(&chunk, &mut events),
                        Some(Err(e)) => Err(e),
                        None => decoder.finish(&mut events),
                    };
                    let step = step.and_then(|()| events.iter().try_for_each(|e| budget.spend(e)));
                    for event in events.drain(..) {
                        yielded = true;
                        yield event;
                    }
                    if let Err(e) = step {
                        if !yielded {
                            if let Some(wait) = config.retry.delay(attempt, &e, deadline) {
                                tracing::debug!(model = %config.model, error = %e, ?wait, "anthropic: retrying");
                                tokio::time::sleep(wait).await;
                                attempt += 1;
                                continue 'attempts;
                            }
                        }
                        Err(e)?;
                        return;
                    }
                    if decoder.is_done() {
                        return;
                    }
                }
            }
        })
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}
