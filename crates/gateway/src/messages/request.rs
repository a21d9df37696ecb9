//! An Anthropic Messages request decoded into the gateway's [`ChatRequest`].
//!
//! What maps where: `system` (a string or text blocks; `cache_control` accepted and not needed)
//! becomes the system message; user `text` and `image` blocks become content parts (base64
//! images as `data:` URLs); `document` blocks with a text source become text; `tool_result`
//! blocks become tool messages (string or text/image blocks, `is_error` kept) placed before the
//! rest of their turn; assistant `text` and `tool_use` blocks become the assistant message and
//! its calls (`input` as arguments JSON). Assistant `thinking` blocks with a signature and
//! `redacted_thinking` blocks are kept on the assistant message (an Anthropic upstream gets them
//! back; others do not); unsigned ones are dropped. `tools` (custom tools) become function
//! tools, `tool_choice` maps one to one (`any` is `required`, `disable_parallel_tool_use` is
//! `parallel_tool_calls: false`), `stop_sequences` is `stop`, `metadata.user_id` is `user`, and
//! `top_k` and `thinking` ride along as extra fields (an Anthropic upstream takes them as they
//! are; `thinking` is left out for OpenAI-compatible ones, see [`CLIENT_THINKING_FIELD`]).
//! `system` turns inside `messages` (Claude Code sends them) are appended to the system prompt:
//! many chat templates accept a system message only first. Other fields are ignored.
//!
//! Anthropic's server tools (`web_search_…`, `web_fetch_…`, `code_execution_…`) are listed
//! apart ([`MessagesRequest::server_tools`]: the loop runs here, `server.rs`); in the history,
//! an assistant turn's `server_tool_use` blocks become calls of the built-ins behind them and
//! their result blocks the tool messages the model read (`server_blocks.rs`), the turn split
//! into one assistant message per stretch of calls.
//!
//! Images by URL stay URLs here; [`inline_remote_images`] fetches them (through the outbound
//! guard) before the request goes on, so upstreams that cannot fetch get them too.
//!
//! Refused with a 400 that says why: a missing `max_tokens`, image URLs that are not http(s),
//! PDF documents (no place in the internal request), and other tool types (`bash_…`,
//! `computer_…`, …).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolbridge_protocol::types::{
    ChatRequest, Content, ContentPart, ImageUrl, Message, ThinkingBlock, ToolCall, ToolChoice,
    ToolSpec,
};
use toolbridge_protocol::validate::validate_tools;
use toolbridge_providers::anthropic::CLIENT_THINKING_FIELD;

use super::server_blocks::{self, ServerTool};
use crate::config::Limits;
use crate::decode::from_json;
use crate::depth::check_depth;
use crate::error::ApiError;
use crate::schema::check_properties;

/// A decoded Messages request and what it asks of the response's form.
pub(crate) struct MessagesRequest {
    /// The client's own tools are its `tools`.
    pub request: ChatRequest,
    pub stream: bool,
    /// Anthropic server tools the request carries, in order.
    pub server_tools: Vec<ServerToolRef>,
    /// `metadata.user_id`.
    pub user_id: Option<String>,
}

/// A server tool of the request.
pub(crate) struct ServerToolRef {
    /// Its index in `tools`.
    pub index: usize,
    /// Its `type` as sent (`web_search_20250305`).
    pub kind: String,
    pub tool: ServerTool,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    model: String,
    max_tokens: Option<u32>,
    #[serde(default)]
    messages: Vec<WireMessage>,
    #[serde(default)]
    system: Option<TextOrBlocks>,
    #[serde(default)]
    tools: Vec<WireTool>,
    #[serde(default)]
    tool_choice: Option<WireToolChoice>,
    #[serde(default)]
    stop_sequences: Vec<String>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<Value>,
    #[serde(default)]
    stream: bool,
    metadata: Option<WireMetadata>,
    thinking: Option<Value>,
}

#[derive(Deserialize)]
struct WireMetadata {
    user_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrBlocks {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Deserialize)]
struct WireMessage {
    role: WireRole,
    content: TextOrBlocks,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum WireRole {
    User,
    Assistant,
    /// Claude Code puts some instructions in `system` turns between the others.
    System,
}

/// A content block. Unknown block types are refused by name.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Image {
        source: ImageSource,
    },
    Document {
        source: Value,
        #[serde(default)]
        title: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<TextOrBlocks>,
        #[serde(default)]
        is_error: bool,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ServerToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    WebSearchToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
    },
    WebFetchToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
    },
    CodeExecutionToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

#[derive(Deserialize)]
struct WireTool {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    input_schema: Option<Value>,
}

#[derive(Deserialize)]
struct WireToolChoice {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    disable_parallel_tool_use: bool,
}

/// Parses and checks a Messages body.
pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<MessagesRequest, ApiError> {
    check_depth(bytes, limits.json_depth_limit).map_err(|limit| {
        ApiError::bad_request(format!(
            "The JSON body is nested more than {limit} levels deep."
        ))
    })?;
    let wire: Wire = from_json(bytes).map_err(|e| e.to_anthropic())?;
    if wire.model.is_empty() {
        return Err(ApiError::bad_param("model", "model: Field required"));
    }
    let Some(max_tokens) = wire.max_tokens else {
        return Err(ApiError::bad_param(
            "max_tokens",
            "max_tokens: Field required",
        ));
    };
    if max_tokens == 0 {
        return Err(ApiError::bad_param(
            "max_tokens",
            "max_tokens: Input should be greater than or equal to 1",
        ));
    }
    if let Some(thinking) = &wire.thinking {
        check_thinking(thinking)?;
    }
    if wire.messages.is_empty() {
        return Err(ApiError::bad_param(
            "messages",
            "messages: at least one message is required",
        ));
    }
    let mut messages = Vec::with_capacity(wire.messages.len() + 1);
    if let Some(system) = wire.system {
        let text = system_text(system)?;
        if !text.is_empty() {
            messages.push(Message::system(text));
        }
    }
    let mut later_system = Vec::new();
    // The `tool_use` ids of the latest assistant turn: what a user turn's results may answer.
    let mut open_calls: Vec<String> = Vec::new();
    for (i, message) in wire.messages.into_iter().enumerate() {
        match message.role {
            WireRole::User => user_turn(i, message.content, &open_calls, &mut messages)?,
            WireRole::Assistant => {
                open_calls = tool_use_ids(&message.content);
                assistant_turn(i, message.content, &mut messages)?
            }
            WireRole::System => later_system.push(system_text(message.content)?),
        }
    }
    for text in later_system.into_iter().filter(|t| !t.is_empty()) {
        match messages.first_mut() {
            Some(Message::System { content, .. }) => {
                content.push_text("\n\n");
                content.push_text(&text);
            }
            _ => messages.insert(0, Message::system(text)),
        }
    }
    let mut tools = Vec::with_capacity(wire.tools.len());
    let mut server_tools = Vec::new();
    for (i, t) in wire.tools.into_iter().enumerate() {
        match tool(i, t)? {
            Declared::Custom(spec) => tools.push(spec),
            Declared::Server(server) => server_tools.push(server),
        }
    }
    validate_tools(&tools).map_err(|e| {
        let param = e
            .param()
            .replace(".function.name", ".name")
            .replace(".function.parameters", ".input_schema");
        ApiError::bad_param(param, e.message)
    })?;
    let (tool_choice, parallel_tool_calls) = match wire.tool_choice {
        None => (None, None),
        Some(choice) => {
            let mapped = match choice.kind.as_str() {
                "auto" => ToolChoice::Auto,
                "any" => ToolChoice::Required,
                "none" => ToolChoice::None,
                "tool" => {
                    let name = choice.name.unwrap_or_default();
                    if !tools.iter().any(|t| t.name == name) {
                        return Err(ApiError::bad_param(
                            "tool_choice",
                            "tool_choice.name names a tool that is not in `tools`.",
                        ));
                    }
                    ToolChoice::Named(name)
                }
                _ => {
                    return Err(ApiError::bad_param(
                        "tool_choice",
                        "tool_choice.type must be auto, any, tool or none.",
                    ))
                }
            };
            (
                Some(mapped),
                choice.disable_parallel_tool_use.then_some(false),
            )
        }
    };
    let mut extra = Map::new();
    if let Some(top_k) = wire.top_k {
        extra.insert("top_k".into(), top_k);
    }
    if let Some(thinking) = wire.thinking {
        // `disabled` too: a template that thinks by default (Qwen3's) is told not to, by an arm
        // whose `client_thinking` is `enable_thinking`.
        extra.insert(CLIENT_THINKING_FIELD.into(), thinking);
    }
    let user_id = wire.metadata.and_then(|m| m.user_id);
    if let Some(user) = &user_id {
        extra.insert("user".into(), user.clone().into());
    }
    Ok(MessagesRequest {
        request: ChatRequest {
            model: wire.model,
            messages,
            tools,
            tool_choice,
            parallel_tool_calls,
            stop: wire.stop_sequences,
            max_tokens: Some(max_tokens),
            temperature: wire.temperature,
            top_p: wire.top_p,
            stream: false,
            extra,
        },
        stream: wire.stream,
        server_tools,
        user_id,
    })
}

fn system_text(system: TextOrBlocks) -> Result<String, ApiError> {
    match system {
        TextOrBlocks::Text(text) => Ok(text),
        TextOrBlocks::Blocks(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for block in blocks {
                match block {
                    Block::Text { text } => texts.push(text),
                    _ => {
                        return Err(ApiError::bad_param(
                            "system",
                            "system: only text blocks are accepted.",
                        ))
                    }
                }
            }
            Ok(texts.join("\n\n"))
        }
    }
}

fn blocks(content: TextOrBlocks) -> Vec<Block> {
    match content {
        TextOrBlocks::Text(text) => vec![Block::Text { text }],
        TextOrBlocks::Blocks(blocks) => blocks,
    }
}

fn image_part(
    source: ImageSource,
    param: impl FnOnce() -> String,
) -> Result<ContentPart, ApiError> {
    match source {
        ImageSource::Base64 { data, .. } if !is_base64(&data) => {
            let param = format!("{}.source.data", param());
            let message = format!("{param}: the image data is not valid base64");
            Err(ApiError::bad_param(param, message))
        }
        ImageSource::Base64 { media_type, data } => Ok(ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{media_type};base64,{data}"),
                detail: None,
            },
        }),
        // Fetched by the gateway before the request goes on (`inline_remote_images`); only the
        // web's schemes are taken.
        ImageSource::Url { url } if url.starts_with("https://") || url.starts_with("http://") => {
            Ok(ContentPart::ImageUrl {
                image_url: ImageUrl { url, detail: None },
            })
        }
        ImageSource::Url { .. } => Err(ApiError::bad_param(
            param(),
            "An image URL must be http:// or https://.",
        )),
    }
}

/// Whether `data` is base64 (padding optional; what Anthropic takes).
fn is_base64(data: &str) -> bool {
    use base64::Engine as _;
    let lenient = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    lenient.decode(data.trim()).is_ok()
}

/// A document block's text: a `text` source, or the text blocks of a `content` source.
fn document_text(source: &Value, title: Option<String>, param: &str) -> Result<String, ApiError> {
    let body = match source.get("type").and_then(Value::as_str) {
        Some("text") => source
            .get("data")
            .and_then(Value::as_str)
            .map(str::to_owned),
        Some("content") => match source.get("content") {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        },
        _ => None,
    };
    let body = body.ok_or_else(|| {
        ApiError::bad_param(
            param.to_owned(),
            "Only text documents are accepted by this gateway (PDF and URL sources are not).",
        )
    })?;
    Ok(match title {
        Some(title) if !title.is_empty() => format!("{title}\n\n{body}"),
        _ => body,
    })
}

/// The ids of an assistant turn's `tool_use` blocks.
fn tool_use_ids(content: &TextOrBlocks) -> Vec<String> {
    match content {
        TextOrBlocks::Text(_) => Vec::new(),
        TextOrBlocks::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect(),
    }
}

/// `thinking` as Anthropic takes it: an object whose `type` is enabled, disabled or adaptive.
fn check_thinking(thinking: &Value) -> Result<(), ApiError> {
    match thinking.get("type").and_then(Value::as_str) {
        Some("enabled" | "disabled" | "adaptive") => Ok(()),
        _ => Err(ApiError::bad_param(
            "thinking.type",
            "thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'",
        )),
    }
}

/// A user turn: its tool results first (as tool messages), then its other blocks. A result
/// must answer a `tool_use` of the assistant turn before it (`open_calls`).
fn user_turn(
    i: usize,
    content: TextOrBlocks,
    open_calls: &[String],
    out: &mut Vec<Message>,
) -> Result<(), ApiError> {
    let mut parts = Vec::new();
    for (j, block) in blocks(content).into_iter().enumerate() {
        let param = || format!("messages.{i}.content.{j}");
        match block {
            Block::Text { text } => parts.push(ContentPart::Text { text }),
            Block::Image { source } => parts.push(image_part(source, param)?),
            Block::Document { source, title } => parts.push(ContentPart::Text {
                text: document_text(&source, title, &param())?,
            }),
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                if !open_calls.contains(&tool_use_id) {
                    let param = format!("{}.tool_use_id", param());
                    let message = format!(
                        "{param}: unexpected tool_use_id `{}` in a tool_result block: each \
                         tool_result must answer a tool_use block of the previous assistant \
                         message.",
                        tool_use_id.chars().take(64).collect::<String>()
                    );
                    return Err(ApiError::bad_param(param, message));
                }
                out.push(Message::Tool {
                    tool_call_id: tool_use_id,
                    content: result_content(content, &param())?,
                    name: None,
                    is_error,
                })
            }
            _ => {
                return Err(ApiError::bad_param(
                    param(),
                    "This block type belongs in an assistant message.",
                ))
            }
        }
    }
    if !parts.is_empty() {
        let content = match parts.as_slice() {
            [ContentPart::Text { text }] => Content::Text(text.clone()),
            _ => Content::Parts(parts),
        };
        out.push(Message::User {
            content,
            name: None,
        });
    }
    Ok(())
}

fn result_content(content: Option<TextOrBlocks>, param: &str) -> Result<Content, ApiError> {
    let blocks = match content {
        None => return Ok(Content::Text(String::new())),
        Some(TextOrBlocks::Text(text)) => return Ok(Content::Text(text)),
        Some(TextOrBlocks::Blocks(blocks)) => blocks,
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            Block::Text { text } => parts.push(ContentPart::Text { text }),
            Block::Image { source } => parts.push(image_part(source, || param.to_owned())?),
            Block::Document { source, title } => parts.push(ContentPart::Text {
                text: document_text(&source, title, param)?,
            }),
            _ => {
                return Err(ApiError::bad_param(
                    param.to_owned(),
                    "A tool_result holds only text, image and document blocks.",
                ))
            }
        }
    }
    Ok(
        if parts.iter().all(|p| matches!(p, ContentPart::Text { .. })) {
            Content::Text(Content::Parts(parts).text().into_owned())
        } else {
            Content::Parts(parts)
        },
    )
}

/// An assistant turn. Server tool calls were run by the server within the turn, so their
/// results follow them here: the turn becomes an assistant message with the calls of a stretch
/// of blocks, then those results as tool messages, then the next stretch from its text on.
fn assistant_turn(i: usize, content: TextOrBlocks, out: &mut Vec<Message>) -> Result<(), ApiError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut thinking = Vec::new();
    let mut results: Vec<Message> = Vec::new();
    let mut inputs: HashMap<String, Value> = HashMap::new();
    let flush = |text: &mut String,
                 calls: &mut Vec<ToolCall>,
                 thinking: &mut Vec<ThinkingBlock>,
                 results: &mut Vec<Message>,
                 out: &mut Vec<Message>| {
        let text = std::mem::take(text);
        let calls = std::mem::take(calls);
        out.push(Message::Assistant {
            content: (!text.is_empty() || calls.is_empty()).then_some(Content::Text(text)),
            tool_calls: calls,
            thinking_blocks: std::mem::take(thinking),
        });
        out.append(results);
    };
    for (j, block) in blocks(content).into_iter().enumerate() {
        let param = || format!("messages.{i}.content.{j}");
        match block {
            Block::Text { text: t } => {
                if !results.is_empty() {
                    flush(&mut text, &mut calls, &mut thinking, &mut results, out);
                }
                text.push_str(&t);
            }
            Block::ToolUse { id, name, input } => {
                if !(input.is_object() || input.is_null()) {
                    let param = format!("{}.input", param());
                    let message = format!("{param}: Input should be an object");
                    return Err(ApiError::bad_param(param, message));
                }
                calls.push(ToolCall {
                    id,
                    name,
                    arguments: arguments(input),
                })
            }
            Block::ServerToolUse { id, name, input } => {
                let Some(tool) = ServerTool::of_wire_name(&name) else {
                    return Err(ApiError::bad_param(
                        param(),
                        "This gateway runs the server tools web_search, web_fetch and \
                         code_execution only.",
                    ));
                };
                inputs.insert(id.clone(), input.clone());
                calls.push(ToolCall {
                    id,
                    name: tool.builtin().to_owned(),
                    arguments: arguments(input),
                });
            }
            Block::WebSearchToolResult {
                tool_use_id,
                content,
            } => results.push(server_result(
                "web_search_tool_result",
                tool_use_id,
                &content,
                &inputs,
                param,
            )?),
            Block::WebFetchToolResult {
                tool_use_id,
                content,
            } => results.push(server_result(
                "web_fetch_tool_result",
                tool_use_id,
                &content,
                &inputs,
                param,
            )?),
            Block::CodeExecutionToolResult {
                tool_use_id,
                content,
            } => results.push(server_result(
                "code_execution_tool_result",
                tool_use_id,
                &content,
                &inputs,
                param,
            )?),
            // Signed thinking goes back to an upstream that can check it (an Anthropic one
            // requires it before a turn's tool use); unsigned thinking (what another upstream's
            // reasoning came back as) has nowhere to go.
            Block::Thinking {
                thinking: t,
                signature,
            } => {
                if !signature.is_empty() {
                    thinking.push(ThinkingBlock::Thinking {
                        thinking: t,
                        signature,
                    });
                }
            }
            Block::RedactedThinking { data } => {
                if !data.is_empty() {
                    thinking.push(ThinkingBlock::RedactedThinking { data });
                }
            }
            _ => {
                return Err(ApiError::bad_param(
                    param(),
                    "This block type belongs in a user message.",
                ))
            }
        }
    }
    flush(&mut text, &mut calls, &mut thinking, &mut results, out);
    Ok(())
}

fn arguments(input: Value) -> String {
    match input {
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// A server tool's result block as the tool message the model read.
fn server_result(
    kind: &str,
    tool_use_id: String,
    content: &Value,
    inputs: &HashMap<String, Value>,
    param: impl FnOnce() -> String,
) -> Result<Message, ApiError> {
    let Some(input) = inputs.get(&tool_use_id) else {
        return Err(ApiError::bad_param(
            param(),
            "A server tool result must follow the server_tool_use block it answers.",
        ));
    };
    let (text, is_error) = server_blocks::replay(kind, input, content);
    Ok(Message::tool_result(tool_use_id, text, is_error))
}

/// A tool of the request: the client's own, or one of Anthropic's server tools.
enum Declared {
    Custom(ToolSpec),
    Server(ServerToolRef),
}

fn tool(i: usize, tool: WireTool) -> Result<Declared, ApiError> {
    match tool.kind.as_deref() {
        None | Some("custom") => {}
        Some(kind) => {
            if let Some(server) = ServerTool::of_type(kind) {
                return Ok(Declared::Server(ServerToolRef {
                    index: i,
                    kind: kind.to_owned(),
                    tool: server,
                }));
            }
            return Err(ApiError::bad_param(
                format!("tools.{i}.type"),
                format!(
                    "The tool type `{}` is not supported by this gateway (it runs the server \
                     tools web_search_…, web_fetch_… and code_execution_…); declare it as a \
                     custom tool with an input_schema.",
                    kind.chars().take(64).collect::<String>()
                ),
            ));
        }
    }
    let Some(input_schema) = tool.input_schema else {
        return Err(ApiError::bad_param(
            format!("tools.{i}.input_schema"),
            format!("tools.{i}.input_schema: Field required (a custom tool needs one)"),
        ));
    };
    check_properties(&input_schema, &format!("tools.{i}.input_schema"))?;
    Ok(Declared::Custom(ToolSpec {
        name: tool.name,
        description: tool.description,
        parameters: Some(input_schema),
        strict: None,
    }))
}

#[cfg(test)]
mod tests;
