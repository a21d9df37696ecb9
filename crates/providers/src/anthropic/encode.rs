//! Request encoding: our OpenAI-shaped [`ChatRequest`] as a Messages API body, a pure function.
//!
//! The conversation is first gathered into turns of blocks, then repaired into the shape
//! Anthropic accepts (the rules are listed in `mod.rs`).

use serde_json::{json, Map, Value};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{ChatRequest, Content, ContentPart, Message, ToolChoice};

use super::AnthropicConfig;

/// Request fields without an OpenAI counterpart that are passed through when a client sends them.
const PASSTHROUGH_FIELDS: &[&str] = &["top_k", "thinking"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq)]
enum Block {
    /// A signed `thinking` or a `redacted_thinking` block, handed back as it came.
    Thinking(Value),
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
            Block::Thinking(block) => block,
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
                thinking_blocks,
            } => {
                // Anthropic requires a turn's thinking first, before its text and tool use.
                let mut blocks: Vec<Block> = thinking_blocks
                    .iter()
                    .filter_map(|b| serde_json::to_value(b).ok())
                    .map(Block::Thinking)
                    .collect();
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
    let max_tokens = request.output_token_limit().unwrap_or(config.max_tokens);
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
    if let Some(thinking) = request.extra.get(super::CLIENT_THINKING_FIELD) {
        body.insert("thinking".into(), thinking.clone());
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
