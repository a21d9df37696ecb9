//! The Anthropic Messages API client.
//!
//! Requests are translated from our OpenAI-shaped [`ChatRequest`] into a Messages body
//! ([`encode_request`], a pure function), always streamed, and the server-sent events are turned
//! into [`WireEvent`]s by [`StreamDecoder`], a sans-IO state machine fed with raw bytes. Transport,
//! deadlines and retries come from [`crate::http`].
//!
//! Anthropic is stricter than OpenAI about conversation shape, so the encoder repairs what it must:
//! roles alternate (consecutive same-role messages are merged), every `tool_use` is answered by a
//! `tool_result` at the start of the next user turn (a missing one is answered with
//! [`texts::ERROR_FAILED`]), and a `tool_result` answering no `tool_use` is dropped.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::sse::{SseDecoder, SseEvent};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{
    ChatRequest, Content, ContentPart, FinishReason, Message, ToolChoice, Usage,
};

use crate::error::{ProviderError, TimeoutKind};
use crate::http::{self, RetryPolicy, Timeouts};
use crate::wire::{Upstream, WireEvent, WireStream};

/// The public Anthropic API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent unless configured otherwise.
pub const DEFAULT_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request has none (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Request fields without an OpenAI counterpart that are passed through when a client sends them.
const PASSTHROUGH_FIELDS: &[&str] = &["top_k", "thinking"];

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
    http: reqwest::Client,
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
        let http = http::build_client(&config.timeouts)?;
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
                    .post(inner.url.clone())
                    .headers(inner.headers.clone())
                    .body(body.clone());
                let response = match http::send(builder, &config.timeouts, deadline, key).await {
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
                    let text = match tokio::time::timeout_at(deadline, response.text()).await {
                        Err(_) => Err(ProviderError::Timeout(TimeoutKind::Total))?,
                        Ok(Err(e)) => Err(http::transport_error(e))?,
                        Ok(Ok(t)) => t,
                    };
                    for event in message_events(&text, key)? {
                        yield event;
                    }
                    return;
                }
                let mut chunks = Box::pin(http::body_chunks(response, config.timeouts.idle, deadline));
                let mut decoder = StreamDecoder::new(key.map(str::to_owned));
                let mut events = Vec::new();
                let mut yielded = false;
                loop {
                    let step = match chunks.next().await {
                        Some(Ok(chunk)) => decoder.push(&chunk, &mut events),
                        Some(Err(e)) => Err(e),
                        None => decoder.finish(&mut events),
                    };
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

// ---------------------------------------------------------------------------------------------
// Request encoding.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq)]
enum Block {
    Text(String),
    /// A whole `{"type":"image",…}` block.
    Image(Value),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        content: Option<Value>,
        is_error: bool,
    },
}

impl Block {
    fn into_json(self) -> Value {
        match self {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Image(image) => image,
            Block::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
            Block::ToolResult {
                id,
                content,
                is_error,
            } => {
                let mut block = Map::new();
                block.insert("type".into(), "tool_result".into());
                block.insert("tool_use_id".into(), id.into());
                if let Some(content) = content {
                    block.insert("content".into(), content);
                }
                if is_error {
                    block.insert("is_error".into(), true.into());
                }
                Value::Object(block)
            }
        }
    }
}

#[derive(Debug)]
struct Turn {
    side: Side,
    blocks: Vec<Block>,
}

/// Appends blocks as a turn of `side`, merged into the last turn when it has the same side.
fn push_turn(turns: &mut Vec<Turn>, side: Side, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.side == side => last.blocks.extend(blocks),
        _ => turns.push(Turn { side, blocks }),
    }
}

/// The Messages API request body for `request` (always streaming).
pub fn encode_request(request: &ChatRequest, config: &AnthropicConfig) -> Value {
    let mut system = Vec::new();
    let mut turns = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content, .. } => {
                let text = content.text();
                if !text.trim().is_empty() {
                    system.push(text.into_owned());
                }
            }
            Message::User { content, .. } => {
                push_turn(&mut turns, Side::User, user_blocks(content))
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(content) = content {
                    let text = content.text();
                    if !text.trim().is_empty() {
                        blocks.push(Block::Text(text.into_owned()));
                    }
                }
                for call in tool_calls {
                    blocks.push(Block::ToolUse {
                        id: tool_id(&call.id),
                        name: call.name.clone(),
                        input: tool_input(&call.arguments),
                    });
                }
                push_turn(&mut turns, Side::Assistant, blocks);
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let block = Block::ToolResult {
                    id: tool_id(tool_call_id),
                    content: result_content(content),
                    is_error: *is_error,
                };
                push_turn(&mut turns, Side::User, vec![block]);
            }
        }
    }
    let mut turns = pair_tool_results(turns);
    trim_final_assistant(&mut turns);

    let mut body = Map::new();
    body.insert("model".into(), config.model.clone().into());
    let max_tokens = request
        .max_tokens
        .or_else(|| {
            request
                .extra
                .get("max_completion_tokens")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        })
        .unwrap_or(config.max_tokens);
    body.insert("max_tokens".into(), max_tokens.into());
    if !system.is_empty() {
        body.insert("system".into(), system.join("\n\n").into());
    }

    let uses_tools = turns.iter().any(|t| {
        t.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. }))
    });
    let (tools, tool_choice) = if !request.tools.is_empty() {
        let tools = request.tools.iter().map(tool_json).collect::<Vec<_>>();
        (tools, tool_choice_json(request))
    } else if uses_tools {
        // The API rejects tool blocks in a request without tools: declare the tools the history
        // used and forbid new calls.
        (history_tools(&turns), Some(json!({"type": "none"})))
    } else {
        (Vec::new(), None)
    };

    let messages = turns
        .into_iter()
        .map(|turn| {
            let role = match turn.side {
                Side::User => "user",
                Side::Assistant => "assistant",
            };
            let content: Vec<Value> = turn.blocks.into_iter().map(Block::into_json).collect();
            json!({"role": role, "content": content})
        })
        .collect::<Vec<_>>();
    body.insert("messages".into(), messages.into());
    if !tools.is_empty() {
        body.insert("tools".into(), tools.into());
    }
    if let Some(choice) = tool_choice {
        body.insert("tool_choice".into(), choice);
    }

    let stop: Vec<&str> = request
        .stop
        .iter()
        .map(String::as_str)
        .filter(|s| {
            let keep = !s.trim().is_empty();
            if !keep {
                tracing::warn!("anthropic: dropping a whitespace-only stop sequence");
            }
            keep
        })
        .collect();
    if !stop.is_empty() {
        body.insert("stop_sequences".into(), stop.into());
    }
    if let Some(t) = request.temperature {
        // OpenAI's range is 0..=2, Anthropic's 0..=1.
        let clamped = t.clamp(0.0, 1.0);
        if clamped != t {
            tracing::debug!(temperature = t, "anthropic: temperature clamped to 0..=1");
        }
        body.insert("temperature".into(), clamped.into());
    }
    if let Some(p) = request.top_p {
        body.insert("top_p".into(), p.into());
    }
    for field in PASSTHROUGH_FIELDS {
        if let Some(value) = request.extra.get(*field) {
            body.insert((*field).into(), value.clone());
        }
    }
    if let Some(Value::String(user)) = request.extra.get("user") {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    body.insert("stream".into(), true.into());
    Value::Object(body)
}

/// Text and image blocks of a user message.
fn user_blocks(content: &Content) -> Vec<Block> {
    match content {
        Content::Text(text) if text.trim().is_empty() => Vec::new(),
        Content::Text(text) => vec![Block::Text(text.clone())],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } if text.trim().is_empty() => None,
                ContentPart::Text { text } => Some(Block::Text(text.clone())),
                ContentPart::ImageUrl { image_url } => {
                    image_block(&image_url.url).map(Block::Image)
                }
            })
            .collect(),
    }
}

/// An image block for a `data:` (base64) or http(s) URL.
fn image_block(url: &str) -> Option<Value> {
    let url = url.trim();
    if let Some(rest) = strip_prefix_ignore_case(url, "data:") {
        let Some((meta, data)) = rest.split_once(',') else {
            tracing::warn!("anthropic: dropping an image with a malformed data: URL");
            return None;
        };
        let mut params = meta.split(';');
        let media_type = params.next().unwrap_or_default().trim();
        if !params.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
            tracing::warn!("anthropic: dropping an image data: URL that is not base64");
            return None;
        }
        let media_type = if media_type.is_empty() {
            "image/png"
        } else {
            media_type
        };
        return Some(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data}
        }));
    }
    if strip_prefix_ignore_case(url, "https://").is_some()
        || strip_prefix_ignore_case(url, "http://").is_some()
    {
        return Some(json!({"type": "image", "source": {"type": "url", "url": url}}));
    }
    tracing::warn!("anthropic: dropping an image whose URL is neither data: nor http(s)");
    None
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A tool result's content: a string, or blocks when it carries images; `None` when empty.
fn result_content(content: &Content) -> Option<Value> {
    if let Content::Parts(parts) = content {
        if parts
            .iter()
            .any(|p| matches!(p, ContentPart::ImageUrl { .. }))
        {
            let blocks: Vec<Value> = user_blocks(content)
                .into_iter()
                .map(Block::into_json)
                .collect();
            return (!blocks.is_empty()).then(|| Value::Array(blocks));
        }
    }
    let text = content.text();
    (!text.is_empty()).then(|| Value::String(text.into_owned()))
}

/// Anthropic ids must match `^[a-zA-Z0-9_-]+$`. The mapping is the same for a call and its
/// result, so they still match.
fn tool_id(id: &str) -> String {
    if id.is_empty() {
        return "toolu_empty".to_owned();
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A call's arguments as the `input` object; anything but a JSON object becomes `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            if !arguments.trim().is_empty() {
                tracing::warn!(
                    "anthropic: tool call arguments are not a JSON object; sending {{}}"
                );
            }
            Value::Object(Map::new())
        }
    }
}

/// Makes the tool_use/tool_result pairing valid: each assistant turn with `tool_use` blocks is
/// followed by a user turn that starts with one `tool_result` per call, in call order (a missing
/// one is an error result); results answering no call of the previous turn are dropped.
fn pair_tool_results(turns: Vec<Turn>) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::with_capacity(turns.len() + 1);
    // The calls of the previous assistant turn, still to be answered.
    let mut pending: Vec<String> = Vec::new();
    for turn in turns {
        match turn.side {
            Side::Assistant => {
                if !pending.is_empty() {
                    let answers = answer(&pending, Vec::new());
                    push_turn(&mut out, Side::User, answers);
                }
                pending = turn
                    .blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                push_turn(&mut out, Side::Assistant, turn.blocks);
            }
            Side::User => {
                let (results, others): (Vec<Block>, Vec<Block>) = turn
                    .blocks
                    .into_iter()
                    .partition(|b| matches!(b, Block::ToolResult { .. }));
                let mut blocks = answer(&pending, results);
                blocks.extend(others);
                pending.clear();
                push_turn(&mut out, Side::User, blocks);
            }
        }
    }
    if !pending.is_empty() {
        let answers = answer(&pending, Vec::new());
        push_turn(&mut out, Side::User, answers);
    }
    out
}

/// One result per call id, in call order, taken from `results` or made up as a failure.
fn answer(calls: &[String], results: Vec<Block>) -> Vec<Block> {
    let mut results: Vec<Option<Block>> = results.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(calls.len());
    for (n, call) in calls.iter().enumerate() {
        // A repeated call id (invalid anyway) is answered once.
        if calls[..n].contains(call) {
            continue;
        }
        let found = results
            .iter_mut()
            .find(|r| matches!(r, Some(Block::ToolResult { id, .. }) if id == call));
        match found.and_then(Option::take) {
            Some(result) => out.push(result),
            None => {
                tracing::warn!(tool_use_id = %call, "anthropic: a tool call has no result; answering it as failed");
                out.push(Block::ToolResult {
                    id: call.clone(),
                    content: Some(texts::ERROR_FAILED.into()),
                    is_error: true,
                });
            }
        }
    }
    for orphan in results.into_iter().flatten() {
        if let Block::ToolResult { id, .. } = orphan {
            tracing::warn!(tool_call_id = %id, "anthropic: dropping a tool result that answers no call");
        }
    }
    out
}

/// The API rejects a final assistant turn (a prefill) that ends in whitespace.
fn trim_final_assistant(turns: &mut Vec<Turn>) {
    let Some(last) = turns.last_mut() else { return };
    if last.side != Side::Assistant {
        return;
    }
    if let Some(Block::Text(text)) = last.blocks.last_mut() {
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        if text.is_empty() {
            last.blocks.pop();
        }
    }
    if last.blocks.is_empty() {
        turns.pop();
    }
}

fn tool_json(tool: &toolbridge_protocol::types::ToolSpec) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), tool.name.clone().into());
    if !tool.description.is_empty() {
        out.insert("description".into(), tool.description.clone().into());
    }
    let schema = match &tool.parameters {
        Some(Value::Object(schema)) if schema.contains_key("type") => Value::Object(schema.clone()),
        Some(Value::Object(schema)) => {
            // The API requires `"type": "object"`; put it first, keep the rest in order.
            let mut with_type = Map::new();
            with_type.insert("type".into(), "object".into());
            with_type.extend(schema.iter().map(|(k, v)| (k.clone(), v.clone())));
            Value::Object(with_type)
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    out.insert("input_schema".into(), schema);
    Value::Object(out)
}

fn tool_choice_json(request: &ChatRequest) -> Option<Value> {
    let serial = request.parallel_tool_calls == Some(false);
    let mut choice = match &request.tool_choice {
        None if serial => json!({"type": "auto"}),
        None => return None,
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Named(name)) => json!({"type": "tool", "name": name}),
        Some(ToolChoice::None) => return Some(json!({"type": "none"})),
    };
    if serial {
        if let Value::Object(map) = &mut choice {
            map.insert("disable_parallel_tool_use".into(), true.into());
        }
    }
    Some(choice)
}

/// Minimal declarations of the tools the history called, for a request that offers none.
fn history_tools(turns: &[Turn]) -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for turn in turns {
        for block in &turn.blocks {
            if let Block::ToolUse { name, .. } = block {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
    }
    names
        .into_iter()
        .map(|name| json!({"name": name, "input_schema": {"type": "object", "properties": {}}}))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Response decoding.
// ---------------------------------------------------------------------------------------------

/// Turns the bytes of a streamed Messages response into wire events. Sans-IO: push bytes as they
/// arrive, call [`StreamDecoder::finish`] at the end of the body. After `message_stop` it is done
/// and ignores anything else; after an error its state is unspecified.
#[derive(Debug)]
pub struct StreamDecoder {
    sse: SseDecoder,
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
            "thinking" => push_text(out, text("thinking"), WireEvent::Reasoning),
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
            // signature_delta, citations_delta, …
            other => tracing::trace!(delta = other, "anthropic: ignoring a delta"),
        }
    }
}

fn push_text(out: &mut Vec<WireEvent>, text: &str, make: fn(String) -> WireEvent) {
    if !text.is_empty() {
        out.push(make(text.to_owned()));
    }
}

fn args_delta(index: usize, arguments: String) -> WireEvent {
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
    decoder.event(
        &SseEvent {
            event: Some("message_stop".into()),
            data: r#"{"type":"message_stop"}"#.into(),
        },
        &mut out,
    )?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use toolbridge_protocol::types::{ToolCall, ToolSpec};

    fn config() -> AnthropicConfig {
        AnthropicConfig::new("claude-test")
    }

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    fn weather_tool() -> ToolSpec {
        ToolSpec::new(
            "get_weather",
            "Current weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )
    }

    // ---- request encoding ---------------------------------------------------------------

    #[test]
    fn system_messages_go_to_the_top_level() {
        let req: ChatRequest = serde_json::from_str(
            r#"{"model":"alias","messages":[
                {"role":"system","content":"You are terse."},
                {"role":"developer","content":[{"type":"text","text":"Answer in French."}]},
                {"role":"user","content":"hi"}],
              "stop":["END","  "],"temperature":1.7,"top_p":0.9,"max_tokens":99,"logit_bias":{"1":2}}"#,
        )
        .unwrap();
        let body = encode_request(&req, &config());
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 99,
                "system": "You are terse.\n\nAnswer in French.",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "stop_sequences": ["END"],
                "temperature": 1.0,
                "top_p": 0.9,
                "stream": true
            })
        );
        let body = encode_request(&request(vec![Message::user("x")]), &config());
        assert_eq!(body["max_tokens"], 4096);
        assert!(body.get("system").is_none());
        assert!(body.get("tools").is_none());
        assert!(body.get("tool_choice").is_none());
    }

    #[test]
    fn tool_calls_and_results_round_trip_into_one_user_turn() {
        let mut req = request(vec![
            Message::user("Weather in Paris and Rome?"),
            Message::assistant_calls(
                Some("Checking both.".into()),
                vec![
                    call("toolu_1", "get_weather", r#"{"city":"Paris"}"#),
                    call("toolu_2", "get_weather", r#"{"city":"Rome"}"#),
                ],
            ),
            Message::tool_result("toolu_1", "18C sunny", false),
            Message::tool_result("toolu_2", "timeout", true),
            Message::user("Also, which is warmer?"),
        ]);
        req.tools = vec![weather_tool()];
        let body = encode_request(&req, &config());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C sunny"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "timeout", "is_error": true},
                    {"type": "text", "text": "Also, which is warmer?"}
                ]}
            ])
        );
    }

    #[test]
    fn missing_tool_results_are_answered_as_failures() {
        let mut req = request(vec![
            Message::user("go"),
            Message::assistant_calls(None, vec![call("a", "f", "{}"), call("b", "f", "not json")]),
            // Results out of order, one missing, a user message in between.
            Message::user("hurry"),
            Message::tool_result("b", "done b", false),
            Message::assistant_calls(None, vec![call("c", "f", "{}")]),
        ]);
        req.tools = vec![ToolSpec::new("f", "", json!({"type": "object"}))];
        let body = encode_request(&req, &config());
        let failed = json!({"type": "tool_result", "tool_use_id": "a", "content": texts::ERROR_FAILED, "is_error": true});
        assert_eq!(
            body["messages"][1]["content"][1],
            json!({"type": "tool_use", "id": "b", "name": "f", "input": {}})
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                failed,
                {"type": "tool_result", "tool_use_id": "b", "content": "done b"},
                {"type": "text", "text": "hurry"}
            ]})
        );
        // The trailing call gets an answer turn of its own.
        assert_eq!(body["messages"].as_array().unwrap().len(), 5);
        assert_eq!(
            body["messages"][4],
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": texts::ERROR_FAILED, "is_error": true}]})
        );
    }

    #[test]
    fn orphan_tool_results_are_dropped_and_roles_merged() {
        let req = request(vec![
            Message::user("one"),
            Message::tool_result("ghost", "boo", false),
            Message::user("two"),
            Message::assistant("A"),
            Message::tool_result("ghost2", "boo", false),
            Message::assistant("B  \n"),
        ]);
        let body = encode_request(&req, &config());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
                // The prefill's trailing whitespace is trimmed.
                {"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}
            ])
        );
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn history_with_calls_but_no_tools_declares_them() {
        let req = request(vec![
            Message::user("go"),
            Message::assistant_calls(None, vec![call("call:1", "lookup", r#"{"q":1}"#)]),
            Message::tool_result("call:1", "found", false),
        ]);
        let body = encode_request(&req, &config());
        assert_eq!(
            body["tools"],
            json!([{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        // Ids are made valid the same way on both sides.
        assert_eq!(body["messages"][1]["content"][0]["id"], "call_1");
        assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_1");
    }

    #[test]
    fn tool_choice_mapping() {
        let choice = |c: Option<ToolChoice>, parallel: Option<bool>| {
            let mut req = request(vec![Message::user("x")]);
            req.tools = vec![weather_tool()];
            req.tool_choice = c;
            req.parallel_tool_calls = parallel;
            encode_request(&req, &config()).get("tool_choice").cloned()
        };
        assert_eq!(choice(None, None), None);
        assert_eq!(
            choice(Some(ToolChoice::Auto), None),
            Some(json!({"type": "auto"}))
        );
        assert_eq!(
            choice(Some(ToolChoice::Required), Some(true)),
            Some(json!({"type": "any"}))
        );
        assert_eq!(
            choice(Some(ToolChoice::Named("get_weather".into())), None),
            Some(json!({"type": "tool", "name": "get_weather"}))
        );
        assert_eq!(
            choice(Some(ToolChoice::None), Some(false)),
            Some(json!({"type": "none"}))
        );
        assert_eq!(
            choice(None, Some(false)),
            Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
        );
        assert_eq!(
            choice(Some(ToolChoice::Required), Some(false)),
            Some(json!({"type": "any", "disable_parallel_tool_use": true}))
        );
        assert_eq!(
            choice(Some(ToolChoice::Named("get_weather".into())), Some(false)),
            Some(json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}))
        );
        // No tools, no tool_choice.
        let mut req = request(vec![Message::user("x")]);
        req.tool_choice = Some(ToolChoice::Required);
        assert!(encode_request(&req, &config()).get("tool_choice").is_none());
    }

    #[test]
    fn images_become_image_blocks() {
        let req: ChatRequest = serde_json::from_str(
            r#"{"messages":[{"role":"user","content":[
                {"type":"text","text":"What is in these?"},
                {"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
                {"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"high"}},
                {"type":"image_url","image_url":{"url":"ftp://example.com/x.png"}},
                {"type":"image_url","image_url":{"url":"data:image/png,rawbytes"}}]}]}"#,
        )
        .unwrap();
        let body = encode_request(&req, &config());
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "text", "text": "What is in these?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
            ])
        );
    }

    #[test]
    fn tool_schemas_keep_their_key_order() {
        let tools = toolbridge_protocol::types::tools_from_json(
            r#"[{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}},"required":["zeta"]}}},
                {"type":"function","function":{"name":"noargs"}},
                {"type":"function","function":{"name":"untyped","parameters":{"properties":{"b":{},"a":{}}}}}]"#,
        )
        .unwrap();
        let mut req = request(vec![Message::user("x")]);
        req.tools = tools;
        let body = serde_json::to_string(&encode_request(&req, &config())["tools"]).unwrap();
        assert_eq!(
            body,
            r#"[{"name":"search","description":"Search the web","input_schema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}},"required":["zeta"]}},{"name":"noargs","input_schema":{"type":"object","properties":{}}},{"name":"untyped","input_schema":{"type":"object","properties":{"b":{},"a":{}}}}]"#
        );
    }

    #[test]
    fn tool_results_with_images_are_blocks() {
        let mut req: ChatRequest = serde_json::from_str(
            r#"{"messages":[{"role":"user","content":"look"},
               {"role":"assistant","tool_calls":[{"id":"s1","type":"function","function":{"name":"shot","arguments":"{}"}}]},
               {"role":"tool","tool_call_id":"s1","content":[{"type":"text","text":"screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]}]}"#,
        )
        .unwrap();
        req.tools = vec![ToolSpec::new("shot", "", json!({"type": "object"}))];
        let body = encode_request(&req, &config());
        assert_eq!(
            body["messages"][2]["content"][0]["content"],
            json!([
                {"type": "text", "text": "screen:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
            ])
        );
    }

    #[test]
    fn passthrough_fields_and_max_completion_tokens() {
        let req: ChatRequest = serde_json::from_str(
            r#"{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":123,"top_k":5,
                "thinking":{"type":"enabled","budget_tokens":1024},"user":"u-42","seed":1}"#,
        )
        .unwrap();
        let body = encode_request(&req, &config());
        assert_eq!(body["max_tokens"], 123);
        assert_eq!(body["top_k"], 5);
        assert_eq!(body["thinking"]["budget_tokens"], 1024);
        assert_eq!(body["metadata"], json!({"user_id": "u-42"}));
        assert!(body.get("seed").is_none());
    }

    #[test]
    fn config_validation_and_describe() {
        let client = AnthropicClient::new(config()).unwrap();
        assert_eq!(client.describe(), "anthropic:claude-test");
        assert!(client.native_tools());
        assert_eq!(
            client.inner.url.as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        let mut c = config();
        c.base_url = "http://127.0.0.1:9/v1/".into();
        assert_eq!(
            AnthropicClient::new(c).unwrap().inner.url.as_str(),
            "http://127.0.0.1:9/v1/messages"
        );
        let mut c = config();
        c.base_url = "ftp://x".into();
        assert!(matches!(
            AnthropicClient::new(c),
            Err(ProviderError::Config(_))
        ));
        assert!(matches!(
            AnthropicClient::new(AnthropicConfig::default()),
            Err(ProviderError::Config(_))
        ));
        let mut c = config();
        c.api_key = Some("sk-ant-secret\nvalue-0123456789".into());
        let err = AnthropicClient::new(c.clone()).err().unwrap();
        assert!(!err.to_string().contains("0123456789"));
        assert!(!format!("{c:?}").contains("0123456789"));
    }

    // ---- response decoding --------------------------------------------------------------

    const TEXT: &[u8] = include_bytes!("../tests/fixtures/anthropic/text.sse");
    const THINKING: &[u8] = include_bytes!("../tests/fixtures/anthropic/thinking.sse");
    const TOOL_USE: &[u8] = include_bytes!("../tests/fixtures/anthropic/tool_use.sse");
    const TWO_TOOLS: &[u8] = include_bytes!("../tests/fixtures/anthropic/two_tools.sse");
    const MAX_TOKENS: &[u8] = include_bytes!("../tests/fixtures/anthropic/max_tokens_tool_use.sse");
    const ERROR: &[u8] = include_bytes!("../tests/fixtures/anthropic/error_overloaded.sse");
    const CUT: &[u8] = include_bytes!("../tests/fixtures/anthropic/cut_before_stop.sse");

    /// Decodes `bytes` in the given chunks: the events and the error, if any.
    fn decode_chunks(chunks: &[&[u8]]) -> (Vec<WireEvent>, Option<ProviderError>) {
        let mut decoder = StreamDecoder::new(Some("sk-ant-api03-secretkey-0123456789".into()));
        let mut out = Vec::new();
        for chunk in chunks {
            if let Err(e) = decoder.push(chunk, &mut out) {
                return (out, Some(e));
            }
        }
        let err = decoder.finish(&mut out).err();
        (out, err)
    }

    /// Decodes whole, then checks every two-way split and byte-by-byte feeding give the same.
    fn decode(bytes: &[u8]) -> (Vec<WireEvent>, Option<ProviderError>) {
        let whole = decode_chunks(&[bytes]);
        for cut in (0..bytes.len()).step_by(7) {
            assert_eq!(
                decode_chunks(&[&bytes[..cut], &bytes[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_chunks(&singles), whole);
        whole
    }

    fn text(s: &str) -> WireEvent {
        WireEvent::Text(s.into())
    }

    fn usage(prompt: u64, completion: u64) -> WireEvent {
        WireEvent::Usage(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
        })
    }

    fn start(index: usize, id: &str, name: &str) -> WireEvent {
        WireEvent::ToolCall(ToolCallDelta {
            index: Some(index),
            id: Some(id.into()),
            kind: Some("function".into()),
            function: Some(FunctionDelta {
                name: Some(name.into()),
                arguments: Some(String::new()),
            }),
        })
    }

    fn args(index: usize, fragment: &str) -> WireEvent {
        args_delta(index, fragment.into())
    }

    /// The arguments streamed for block `index`, concatenated.
    fn arguments_of(events: &[WireEvent], index: usize) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                WireEvent::ToolCall(d) if d.index == Some(index) => {
                    d.function.as_ref().and_then(|f| f.arguments.clone())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_stream() {
        let (events, err) = decode(TEXT);
        assert_eq!(err, None);
        assert_eq!(
            events,
            vec![
                text("Hello"),
                text("! How can I help you today?"),
                usage(25, 12),
                WireEvent::Finish(FinishReason::Stop),
            ]
        );
        // CRLF line endings decode the same.
        let crlf = String::from_utf8(TEXT.to_vec())
            .unwrap()
            .replace('\n', "\r\n");
        assert_eq!(decode(crlf.as_bytes()), (events, None));
    }

    #[test]
    fn thinking_then_text() {
        let (events, err) = decode(THINKING);
        assert_eq!(err, None);
        assert_eq!(
            events,
            vec![
                WireEvent::Reasoning("The user asks for 27 * 453.".into()),
                WireEvent::Reasoning("\n27 * 453 = 12231.".into()),
                text("27 * 453 = "),
                text("12,231"),
                // Cache reads count as prompt tokens.
                usage(40 + 2048, 64),
                WireEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn tool_use_with_split_input() {
        let (events, err) = decode(TOOL_USE);
        assert_eq!(err, None);
        assert_eq!(events[0], text("Okay, let me check"));
        assert_eq!(events[1], text(" the weather."));
        assert_eq!(
            events[2],
            start(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
        );
        assert_eq!(events[3], args(1, "{\"location\":"));
        // Empty partial_json fragments are not forwarded: 8 non-empty fragments.
        assert_eq!(events.len(), 3 + 8 + 2);
        let input = arguments_of(&events, 1);
        assert_eq!(
            serde_json::from_str::<Value>(&input).unwrap(),
            json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
        );
        assert_eq!(events[events.len() - 2], usage(472, 89));
        assert_eq!(
            events[events.len() - 1],
            WireEvent::Finish(FinishReason::ToolCalls)
        );
    }

    #[test]
    fn two_tool_uses() {
        let (events, err) = decode(TWO_TOOLS);
        assert_eq!(err, None);
        assert_eq!(
            events,
            vec![
                start(0, "toolu_01A09q90qw90lq917835lq9", "get_weather"),
                args(0, "{\"location\": \"Paris\"}"),
                start(1, "toolu_01B7hJ2kd8s0sKd0qP1x2Zz", "get_time"),
                args(1, "{\"timezone\""),
                args(1, ": \"Europe/Paris\"}"),
                usage(710, 71),
                WireEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn max_tokens_cut_mid_tool_use() {
        let (events, err) = decode(MAX_TOKENS);
        assert_eq!(err, None);
        assert_eq!(
            events[0],
            start(0, "toolu_01Wq1mRSbx5yB3LmM8yqs3Xk", "write_file")
        );
        assert_eq!(
            arguments_of(&events, 0),
            "{\"path\": \"notes.md\", \"content\": \"# Notes\\n\\nThe first"
        );
        assert_eq!(
            events.last(),
            Some(&WireEvent::Finish(FinishReason::Length))
        );
    }

    #[test]
    fn error_event_is_a_transient_upstream_error() {
        let (events, err) = decode(ERROR);
        assert_eq!(events, vec![text("Sure")]);
        let err = err.unwrap();
        assert_eq!(
            err,
            ProviderError::Upstream {
                status: 529,
                message: "Overloaded".into()
            }
        );
        assert!(err.is_transient());
        // Other error types keep their meaning, and keys never leak.
        let mut d = StreamDecoder::new(Some("sk-ant-api03-secretkey-0123456789".into()));
        let e = d
            .push(
                b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad key sk-ant-api03-secretkey-0123456789\"}}\n\n",
                &mut Vec::new(),
            )
            .unwrap_err();
        assert!(matches!(e, ProviderError::Upstream { status: 400, .. }));
        assert!(!e.is_transient());
        assert!(!e.to_string().contains("0123456789"));
    }

    #[test]
    fn stream_cut_before_message_stop() {
        let (events, err) = decode(CUT);
        assert_eq!(events, vec![text("The answer is")]);
        assert_eq!(
            err,
            Some(ProviderError::BadResponse(
                "stream ended before message_stop".into()
            ))
        );
        assert_eq!(decode(b""), (vec![], err));
    }

    #[test]
    fn invalid_json_is_a_bad_response() {
        let (events, err) =
            decode_chunks(&[b"event: content_block_delta\ndata: {\"type\":\"content_blo\n\n"]);
        assert!(events.is_empty());
        assert!(
            matches!(err, Some(ProviderError::BadResponse(m)) if m.contains("content_block_delta"))
        );
    }

    #[test]
    fn whole_input_in_block_start_and_events_after_stop() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"b\":1,\"a\":[2]}}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":5}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n",
        );
        let (events, err) = decode(stream.as_bytes());
        assert_eq!(err, None);
        assert_eq!(
            events,
            vec![
                start(0, "t1", "f"),
                args(0, "{\"b\":1,\"a\":[2]}"),
                usage(3, 5),
                WireEvent::Finish(FinishReason::ContentFilter),
            ]
        );
    }

    #[test]
    fn whole_message_response() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[
            {"type":"thinking","thinking":"hmm","signature":"x"},
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"toolu_9","name":"search","input":{"q":"rust"}}],
            "stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":7}}"#;
        assert_eq!(
            message_events(body, None).unwrap(),
            vec![
                WireEvent::Reasoning("hmm".into()),
                text("Let me look."),
                start(2, "toolu_9", "search"),
                args(2, "{\"q\":\"rust\"}"),
                usage(10, 7),
                WireEvent::Finish(FinishReason::ToolCalls),
            ]
        );
        let err = message_events(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            None,
        )
        .unwrap_err();
        assert!(matches!(err, ProviderError::Upstream { status: 529, .. }));
    }

    // ---- over loopback: retries, timeouts, headers --------------------------------------

    enum Reply {
        /// Written whole, then the connection is closed.
        Full(String),
        /// Written, then the connection stays silent.
        Stall(String),
    }

    fn sse_reply(body: &[u8]) -> Reply {
        Reply::Full(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
            String::from_utf8_lossy(body)
        ))
    }

    fn status_reply(status: &str, extra: &str, body: &str) -> Reply {
        Reply::Full(format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
            body.len()
        ))
    }

    /// Serves one reply per connection, recording each request; refuses connections after.
    async fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            for reply in replies {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = socket.read(&mut chunk).await.unwrap();
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len || n == 0 {
                            break;
                        }
                    }
                    if n == 0 {
                        break;
                    }
                }
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).to_string());
                match reply {
                    Reply::Full(r) => {
                        socket.write_all(r.as_bytes()).await.unwrap();
                        let _ = socket.shutdown().await;
                    }
                    Reply::Stall(r) => {
                        socket.write_all(r.as_bytes()).await.unwrap();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                            drop(socket);
                        });
                    }
                }
            }
        });
        (base, seen)
    }

    fn loopback_client(base: &str) -> AnthropicClient {
        let mut c = config();
        c.base_url = base.into();
        c.api_key = Some("sk-ant-api03-secretkey-0123456789".into());
        c.extra_headers = vec![("anthropic-beta".into(), "tools-2024-05-16".into())];
        AnthropicClient::new(c).unwrap()
    }

    async fn collect(client: &AnthropicClient) -> Vec<Result<WireEvent, ProviderError>> {
        client
            .send(request(vec![Message::user("hi")]))
            .collect()
            .await
    }

    #[tokio::test]
    async fn loopback_retries_an_overloaded_answer_then_streams() {
        let (base, seen) = serve(vec![
            status_reply(
                "529 Site Overloaded",
                "",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            sse_reply(TEXT),
        ])
        .await;
        let events = collect(&loopback_client(&base)).await;
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(events[0], Ok(text("Hello")));
        assert_eq!(events[3], Ok(WireEvent::Finish(FinishReason::Stop)));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        let req = seen[1].to_ascii_lowercase();
        assert!(req.starts_with("post /v1/messages http/1.1"));
        assert!(req.contains("x-api-key: sk-ant-api03-secretkey-0123456789"));
        assert!(req.contains("anthropic-version: 2023-06-01"));
        assert!(req.contains("anthropic-beta: tools-2024-05-16"));
        assert!(seen[1].contains(r#""model":"claude-test","max_tokens":4096"#));
        assert!(seen[1].contains(r#""stream":true"#));
    }

    #[tokio::test]
    async fn loopback_long_retry_after_is_not_waited_for() {
        let (base, seen) = serve(vec![status_reply(
            "429 Too Many Requests",
            "retry-after: 30\r\n",
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        )])
        .await;
        let events = collect(&loopback_client(&base)).await;
        assert_eq!(
            events,
            vec![Err(ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs(30)),
                message: "slow down".into()
            })]
        );
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn loopback_auth_errors_are_final_and_redacted() {
        let (base, seen) = serve(vec![status_reply(
            "401 Unauthorized",
            "",
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-api03-secretkey-0123456789"}}"#,
        )])
        .await;
        let events = collect(&loopback_client(&base)).await;
        assert_eq!(events.len(), 1);
        let err = events[0].clone().unwrap_err();
        assert!(matches!(err, ProviderError::Auth { status: 401, .. }));
        assert!(!err.to_string().contains("0123456789"), "{err}");
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn loopback_idle_gap_after_content_is_not_retried() {
        let partial = &TEXT[..TEXT.windows(6).position(|w| w == b"! How ").unwrap_or(0)];
        let (base, seen) = serve(vec![Reply::Stall(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{}",
            String::from_utf8_lossy(partial)
        ))])
        .await;
        let mut c = loopback_client(&base).config().clone();
        c.timeouts.idle = Duration::from_millis(300);
        let events = collect(&AnthropicClient::new(c).unwrap()).await;
        assert_eq!(
            events,
            vec![
                Ok(text("Hello")),
                Err(ProviderError::Timeout(TimeoutKind::Idle))
            ]
        );
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn loopback_cut_stream_before_content_is_retried() {
        let (base, seen) = serve(vec![
            sse_reply(
                &CUT[..CUT
                    .windows(13)
                    .position(|w| w == b"event: conten")
                    .unwrap_or(0)],
            ),
            sse_reply(TWO_TOOLS),
        ])
        .await;
        let events = collect(&loopback_client(&base)).await;
        assert_eq!(events.len(), 7, "{events:?}");
        assert!(events.iter().all(Result::is_ok));
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn loopback_connection_refused_is_a_connect_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let mut c = loopback_client(&base).config().clone();
        c.retry = RetryPolicy::none();
        let events = collect(&AnthropicClient::new(c).unwrap()).await;
        assert_eq!(events.len(), 1);
        let err = events[0].clone().unwrap_err();
        assert!(matches!(err, ProviderError::Connect(_)), "{err:?}");
        assert!(!err.to_string().contains("0123456789"));
    }
}
