//! A Responses API request decoded: the conversation items as the agent's [`Message`]s, the
//! tools sorted into what the server runs (hosted tools mapped to built-ins) and what the
//! client runs (its functions, which pause the run), and the options the run honours.
//!
//! Honoured: `model`, `input` (a string or items: messages with `input_text` / `input_image` /
//! `input_file` / `output_text` parts, `function_call`, `function_call_output`,
//! `custom_tool_call(_output)`, earlier hosted-call items), `instructions`, `tools`,
//! `tool_choice` (`none` offers no tool; the others force the first model request, [`forced_tool`]), `previous_response_id`, `conversation`, `store`,
//! `stream`, `background`, `max_output_tokens`, `max_tool_calls`, `temperature`, `top_p`,
//! `metadata`, `user`, `parallel_tool_calls`. Accepted and not acted on (they change nothing a
//! client can observe here, or have no meaning for a non-OpenAI upstream): `include`,
//! `reasoning`, `prompt_cache_key`, `client_metadata`, `service_tier`, `truncation`, `text`,
//! `safety_identifier`, `top_logprobs`, `stream_options`, and any other field (kept out of
//! the upstream request; logged at debug) — Codex and the Agents SDK send several of them.

use serde_json::{Map, Value};
use toolbridge_protocol::types::{Content, ContentPart, ImageUrl, Message, ToolCall};

use crate::error::ApiError;

use super::request_tools::decode_tools;
pub(crate) use super::request_tools::{
    ClientKind, ClientTool, Hosted, McpApproval, CUSTOM_INPUT_FIELD,
};

/// A file a message refers to (`input_file`, or `input_image` by `file_id`): staged into the
/// conversation's workspace before the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileRef {
    /// Index into [`ResponsesRequest::messages`].
    pub message: usize,
    pub source: FileSource,
    pub image: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FileSource {
    /// An uploaded file (`POST /v1/files`).
    Id(String),
    /// `file_data` (base64, or a `data:` URL) with its `filename`.
    Inline { filename: String, data: String },
}

/// A decoded request.
#[derive(Clone, Debug)]
pub(crate) struct ResponsesRequest {
    pub model: String,
    /// This request's input as items (as `GET …/input_items` lists them), ids assigned.
    pub input_items: Vec<Value>,
    /// The same as messages, for the model.
    pub messages: Vec<Message>,
    /// Outputs of client calls, by call id, in input order.
    pub call_outputs: Vec<(String, String)>,
    /// Files the messages refer to.
    pub files: Vec<FileRef>,
    /// `mcp_approval_response` items: the approval request's id and the answer.
    pub approvals: Vec<(String, bool)>,
    pub instructions: Option<String>,
    pub hosted: Vec<Hosted>,
    pub client_tools: Vec<ClientTool>,
    /// The `tools` array as sent (echoed in the response).
    pub tools_echo: Vec<Value>,
    pub tool_choice: Value,
    pub tools_off: bool,
    /// What `tool_choice` forces in the first model request.
    pub forced: Option<super::agent_run::ForcedTool>,
    pub previous_response_id: Option<String>,
    pub conversation: Option<String>,
    pub store: bool,
    pub stream: bool,
    pub background: bool,
    pub max_output_tokens: Option<u32>,
    pub max_tool_calls: Option<usize>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub metadata: Value,
    pub user: Option<String>,
    pub parallel_tool_calls: bool,
    /// `text.format` as Chat Completions' `response_format` (`json_schema`, `json_object`).
    pub response_format: Option<Value>,
}

const KNOWN_IGNORED: &[&str] = &[
    "include",
    "reasoning",
    "prompt_cache_key",
    "client_metadata",
    "service_tier",
    "truncation",
    "safety_identifier",
    "top_logprobs",
    "stream_options",
    "prompt",
];

/// Decodes a request body (already checked for size and depth).
pub(crate) fn decode(bytes: &[u8]) -> Result<ResponsesRequest, ApiError> {
    // A key given twice is refused: which of the two a server reads is anyone's guess.
    let value = crate::decode::unique_value(bytes).map_err(|e| e.to_openai())?;
    let Value::Object(mut body) = value else {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        ));
    };
    let model = match body.remove("model") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(Value::String(_)) | None => {
            return Err(ApiError::bad_param(
                "model",
                "Missing required parameter: 'model'.",
            ))
        }
        Some(_) => return Err(type_error("model", "a string")),
    };
    let input = body.remove("input").unwrap_or(Value::Array(Vec::new()));
    let (input_items, messages, call_outputs, files) = decode_input(input)?;
    let approvals = input_items
        .iter()
        .filter(|i| i["type"] == "mcp_approval_response")
        .filter_map(|i| {
            Some((
                i["approval_request_id"].as_str()?.to_owned(),
                i["approve"].as_bool().unwrap_or(false),
            ))
        })
        .collect();
    let instructions = opt_string(&mut body, "instructions")?;
    let (hosted, client_tools, tools_echo) = decode_tools(body.remove("tools"))?;
    let tool_choice = body
        .remove("tool_choice")
        .unwrap_or_else(|| Value::String("auto".into()));
    let tools_off = tool_choice.as_str() == Some("none");
    let forced = forced_tool(&tool_choice)?;
    let previous_response_id = opt_string(&mut body, "previous_response_id")?;
    let conversation = match body.remove("conversation") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(Value::Object(o)) => match o.get("id") {
            Some(Value::String(id)) => Some(id.clone()),
            _ => {
                return Err(type_error(
                    "conversation",
                    "a conversation id or {\"id\": …}",
                ))
            }
        },
        Some(_) => return Err(type_error("conversation", "a conversation id")),
    };
    if previous_response_id.is_some() && conversation.is_some() {
        return Err(ApiError::bad_request(
            "Parameters 'previous_response_id' and 'conversation' cannot be used together.",
        ));
    }
    let store = opt_bool(&mut body, "store")?.unwrap_or(true);
    let stream = opt_bool(&mut body, "stream")?.unwrap_or(false);
    let background = opt_bool(&mut body, "background")?.unwrap_or(false);
    if background && !store {
        return Err(ApiError::bad_param(
            "background",
            "Background responses must be stored: 'background' requires 'store' to be true.",
        ));
    }
    let max_output_tokens =
        opt_u64(&mut body, "max_output_tokens")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    if max_output_tokens == Some(0) {
        return Err(ApiError::bad_param(
            "max_output_tokens",
            "Invalid 'max_output_tokens': it must be at least 1.",
        ));
    }
    let max_tool_calls =
        opt_u64(&mut body, "max_tool_calls")?.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let temperature = in_range(opt_f64(&mut body, "temperature")?, "temperature", 2.0)?;
    let top_p = in_range(opt_f64(&mut body, "top_p")?, "top_p", 1.0)?;
    let metadata = match body.remove("metadata") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(m)) => {
            if m.len() > 16 || m.values().any(|v| !v.is_string()) {
                return Err(ApiError::bad_param(
                    "metadata",
                    "Invalid 'metadata': at most 16 pairs of string keys and string values.",
                ));
            }
            Value::Object(m)
        }
        Some(_) => return Err(type_error("metadata", "an object")),
    };
    let user = opt_string(&mut body, "user")?;
    let parallel_tool_calls = opt_bool(&mut body, "parallel_tool_calls")?.unwrap_or(true);
    let response_format = match body.remove("text") {
        None | Some(Value::Null) => None,
        Some(text) => response_format(&text)?,
    };
    for key in body.keys() {
        if KNOWN_IGNORED.contains(&key.as_str()) {
            continue;
        }
        tracing::debug!(field = %key, "responses: field not acted on");
    }
    Ok(ResponsesRequest {
        model,
        input_items,
        messages,
        call_outputs,
        files,
        approvals,
        instructions,
        hosted,
        client_tools,
        tools_echo,
        tool_choice,
        tools_off,
        forced,
        previous_response_id,
        conversation,
        store,
        stream,
        background,
        max_output_tokens,
        max_tool_calls,
        temperature,
        top_p,
        metadata,
        user,
        parallel_tool_calls,
        response_format,
    })
}

/// `text.format` in Chat Completions' form: `json_schema` (name, schema, strict) and
/// `json_object` pass through; `text` (the default) needs nothing. `text.verbosity` (Codex)
/// is accepted and not acted on.
fn response_format(text: &Value) -> Result<Option<Value>, ApiError> {
    let Some(format) = text.get("format").filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") | None => Ok(None),
        Some("json_object") => Ok(Some(serde_json::json!({"type": "json_object"}))),
        Some("json_schema") => {
            let Some(schema) = format.get("schema") else {
                return Err(ApiError::bad_param(
                    "text.format.schema",
                    "Missing required parameter: 'text.format.schema'.",
                ));
            };
            let mut inner = serde_json::Map::new();
            inner.insert(
                "name".into(),
                format
                    .get("name")
                    .cloned()
                    .unwrap_or_else(|| Value::String("response".into())),
            );
            inner.insert("schema".into(), schema.clone());
            if let Some(strict) = format.get("strict") {
                inner.insert("strict".into(), strict.clone());
            }
            Ok(Some(
                serde_json::json!({"type": "json_schema", "json_schema": inner}),
            ))
        }
        Some(other) => Err(ApiError::bad_param(
            "text.format.type",
            format!(
                "Invalid 'text.format.type': '{}' (expected text, json_object or json_schema).",
                other.chars().take(40).collect::<String>()
            ),
        )),
    }
}

pub(super) fn type_error(param: &'static str, expected: &str) -> ApiError {
    ApiError::bad_param(
        param,
        format!("Invalid type for '{param}': expected {expected}."),
    )
}

fn opt_string(
    body: &mut Map<String, Value>,
    key: &'static str,
) -> Result<Option<String>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(type_error(key, "a string")),
    }
}

fn opt_bool(body: &mut Map<String, Value>, key: &'static str) -> Result<Option<bool>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(type_error(key, "a boolean")),
    }
}

fn opt_u64(body: &mut Map<String, Value>, key: &'static str) -> Result<Option<u64>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| type_error(key, "a non-negative integer")),
        Some(_) => Err(type_error(key, "an integer")),
    }
}

fn opt_f64(body: &mut Map<String, Value>, key: &'static str) -> Result<Option<f64>, ApiError> {
    match body.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(type_error(key, "a number")),
    }
}

/// A sampling parameter within OpenAI's range, 0 to `max`.
fn in_range(value: Option<f64>, key: &'static str, max: f64) -> Result<Option<f64>, ApiError> {
    match value {
        Some(v) if !(0.0..=max).contains(&v) => Err(ApiError::bad_param(
            key,
            format!("Invalid '{key}': {v} is not between 0 and {max}."),
        )),
        _ => Ok(value),
    }
}

type Decoded = (
    Vec<Value>,
    Vec<Message>,
    Vec<(String, String)>,
    Vec<FileRef>,
);

/// Items given outside a response (`POST /v1/conversations`): as items with ids, and as
/// messages.
pub(crate) fn decode_items(items: Value) -> Result<(Vec<Value>, Vec<Message>), ApiError> {
    let (items, messages, _, files) = decode_input(items)?;
    if !files.is_empty() {
        return Err(ApiError::bad_param(
            "items",
            "Files can be attached in a response's input, not in a conversation's items.",
        ));
    }
    Ok((items, messages))
}

/// The input as items (each with an `id`) and as messages.
fn decode_input(input: Value) -> Result<Decoded, ApiError> {
    let items = match input {
        Value::String(text) => vec![serde_json::json!({
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        _ => return Err(type_error("input", "a string or an array of items")),
    };
    let mut builder = Messages::default();
    let mut out_items = Vec::with_capacity(items.len());
    for (i, mut item) in items.into_iter().enumerate() {
        let Value::Object(obj) = &mut item else {
            return Err(item_error(i, "each item must be an object"));
        };
        let kind = match obj.get("type") {
            Some(Value::String(t)) => t.clone(),
            None if obj.contains_key("role") => {
                obj.insert("type".into(), Value::String("message".into()));
                "message".to_owned()
            }
            _ => return Err(item_error(i, "an item needs a 'type'")),
        };
        match kind.as_str() {
            "message" => {
                builder.message(i, obj)?;
                // Listed as OpenAI lists them: content as parts.
                if let Some(Value::String(text)) = obj.get("content") {
                    let part = if obj.get("role").and_then(Value::as_str) == Some("assistant") {
                        "output_text"
                    } else {
                        "input_text"
                    };
                    let parts = serde_json::json!([{"type": part, "text": text}]);
                    obj.insert("content".into(), parts);
                }
            }
            "function_call" | "custom_tool_call" => builder.call(i, obj, &kind)?,
            "function_call_output" | "custom_tool_call_output" => builder.output(i, obj)?,
            "code_interpreter_call" => builder.code_interpreter(obj),
            // Reasoning, hosted calls whose result the next message states, references to
            // stored items: nothing the model needs again beyond the messages around them.
            other if HISTORY_ITEMS.contains(&other) => {
                tracing::debug!(item = %other, "responses: input item not sent to the model")
            }
            other => {
                return Err(ApiError::bad_param(
                    format!("input[{i}].type"),
                    format!(
                        "Invalid 'input[{i}].type': '{}' is not an input item type.",
                        other.chars().take(40).collect::<String>()
                    ),
                ))
            }
        }
        if !obj.contains_key("id") {
            let prefix = match kind.as_str() {
                "message" => "msg",
                "function_call_output" | "custom_tool_call_output" => "fco",
                "function_call" | "custom_tool_call" => "fc",
                _ => "item",
            };
            obj.insert("id".into(), Value::String(super::ids::new(prefix)));
        }
        out_items.push(item);
    }
    let Messages {
        messages,
        outputs,
        files,
    } = builder;
    Ok((out_items, messages, outputs, files))
}

/// Input item types that are history only: what OpenAI returns as output items (clients send
/// them back), and Codex's own (`compaction`, `ghost_snapshot`).
const HISTORY_ITEMS: &[&str] = &[
    "reasoning",
    "item_reference",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "image_generation_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "mcp_call",
    "tool_search_call",
    "tool_search_output",
    "compaction",
    "compaction_summary",
    "ghost_snapshot",
];

fn item_error(index: usize, what: &str) -> ApiError {
    ApiError::bad_param(
        format!("input[{index}]"),
        format!("Invalid 'input[{index}]': {what}."),
    )
}

/// Messages from items: consecutive calls (and the assistant text before them) become one
/// assistant message, as Chat Completions writes them.
#[derive(Default)]
struct Messages {
    messages: Vec<Message>,
    outputs: Vec<(String, String)>,
    files: Vec<FileRef>,
}

impl Messages {
    fn message(&mut self, i: usize, obj: &Map<String, Value>) -> Result<(), ApiError> {
        let role = obj.get("role").and_then(Value::as_str).unwrap_or("user");
        let mut files = Vec::new();
        let content = content_of(i, obj.get("content"), &mut files)?;
        let index = self.messages.len();
        self.files
            .extend(files.into_iter().map(|(source, image)| FileRef {
                message: index,
                source,
                image,
            }));
        let message = match role {
            "user" => Message::User {
                content,
                name: None,
            },
            "system" | "developer" => Message::System {
                content,
                name: None,
            },
            "assistant" => Message::Assistant {
                content: Some(content),
                tool_calls: Vec::new(),
                thinking_blocks: Vec::new(),
            },
            other => {
                return Err(item_error(
                    i,
                    &format!(
                        "unknown role '{}'",
                        other.chars().take(40).collect::<String>()
                    ),
                ))
            }
        };
        self.messages.push(message);
        Ok(())
    }

    fn call(&mut self, i: usize, obj: &Map<String, Value>, kind: &str) -> Result<(), ApiError> {
        let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
        let (Some(call_id), Some(name)) = (text("call_id"), text("name")) else {
            return Err(item_error(i, "a call needs 'call_id' and 'name'"));
        };
        let arguments = if kind == "custom_tool_call" {
            serde_json::json!({ CUSTOM_INPUT_FIELD: text("input").unwrap_or_default() }).to_string()
        } else {
            match obj.get("arguments") {
                None | Some(Value::Null) => "{}".into(),
                Some(Value::String(arguments)) => arguments.clone(),
                Some(_) => {
                    return Err(ApiError::bad_param(
                        format!("input[{i}].arguments"),
                        format!(
                            "Invalid type for 'input[{i}].arguments': expected a string of JSON."
                        ),
                    ))
                }
            }
        };
        let call = ToolCall {
            id: call_id,
            name,
            arguments,
        };
        match self.messages.last_mut() {
            Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
            _ => self.messages.push(Message::Assistant {
                content: None,
                tool_calls: vec![call],
                thinking_blocks: Vec::new(),
            }),
        }
        Ok(())
    }

    fn output(&mut self, i: usize, obj: &Map<String, Value>) -> Result<(), ApiError> {
        let Some(call_id) = obj.get("call_id").and_then(Value::as_str) else {
            return Err(item_error(i, "a call output needs 'call_id'"));
        };
        let output = match obj.get("output") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        self.outputs.push((call_id.to_owned(), output.clone()));
        self.messages
            .push(Message::tool_result(call_id, output, false));
        Ok(())
    }

    /// An earlier `code_interpreter_call` (a client that resends its whole history): the code
    /// as a `python_execute` call and its logs as the result, so the model sees what it ran.
    fn code_interpreter(&mut self, obj: &Map<String, Value>) {
        let Some(id) = obj.get("id").and_then(Value::as_str) else {
            return;
        };
        let code = obj.get("code").and_then(Value::as_str).unwrap_or_default();
        let logs: String = obj
            .get("outputs")
            .and_then(Value::as_array)
            .map(|outs| {
                outs.iter()
                    .filter_map(|o| o.get("logs").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        let call = ToolCall {
            id: id.to_owned(),
            name: "python_execute".into(),
            arguments: serde_json::json!({ "code": code }).to_string(),
        };
        self.messages.push(Message::Assistant {
            content: None,
            tool_calls: vec![call],
            thinking_blocks: Vec::new(),
        });
        self.messages.push(Message::tool_result(id, logs, false));
    }
}

/// A message's content: a string, or parts. Files it refers to go to `files` (with whether
/// each is an image).
fn content_of(
    i: usize,
    content: Option<&Value>,
    files: &mut Vec<(FileSource, bool)>,
) -> Result<Content, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(Content::Text(String::new())),
        Some(Value::String(s)) => Ok(Content::Text(s.clone())),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                let text = || part.get("text").and_then(Value::as_str).unwrap_or_default();
                match kind {
                    "input_text" | "output_text" | "text" => out.push(ContentPart::Text {
                        text: text().to_owned(),
                    }),
                    "refusal" => out.push(ContentPart::Text {
                        text: part
                            .get("refusal")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    }),
                    "input_image" => match part.get("image_url").and_then(Value::as_str) {
                        Some(url) if url.starts_with("data:") => {
                            check_data_image(url).map_err(|why| {
                                let param = format!("input[{i}].content[{j}].image_url");
                                let message = format!("Invalid '{param}': {why}.");
                                ApiError::bad_param(param, message)
                            })?;
                            out.push(ContentPart::ImageUrl {
                                image_url: ImageUrl {
                                    url: url.to_owned(),
                                    detail: part
                                        .get("detail")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned),
                                },
                            })
                        }
                        Some(_) => {
                            return Err(item_error(
                                i,
                                "images by URL are not fetched by this server; send a data: URL or a file_id",
                            ))
                        }
                        None => match part.get("file_id").and_then(Value::as_str) {
                            Some(id) => files.push((FileSource::Id(id.to_owned()), true)),
                            None => {
                                return Err(item_error(
                                    i,
                                    "an input_image needs an image_url or a file_id",
                                ))
                            }
                        },
                    },
                    // Files are staged into the conversation's workspace, not inlined.
                    "input_file" => {
                        let text = |k: &str| part.get(k).and_then(Value::as_str);
                        match (text("file_id"), text("file_data")) {
                            (Some(id), _) => files.push((FileSource::Id(id.to_owned()), false)),
                            (None, Some(data)) => files.push((
                                FileSource::Inline {
                                    filename: text("filename").unwrap_or("upload").to_owned(),
                                    data: data.to_owned(),
                                },
                                false,
                            )),
                            (None, None) if text("file_url").is_some() => {
                                return Err(item_error(
                                    i,
                                    "files by URL are not fetched by this server; upload it (POST /v1/files) and send its file_id",
                                ))
                            }
                            (None, None) => {
                                return Err(item_error(i, "an input_file needs a file_id or file_data"))
                            }
                        }
                    }
                    other => {
                        return Err(item_error(
                            i,
                            &format!(
                                "unknown content part type '{}'",
                                other.chars().take(40).collect::<String>()
                            ),
                        ))
                    }
                }
            }
            Ok(match out.as_slice() {
                [ContentPart::Text { text }] => Content::Text(text.clone()),
                _ => Content::Parts(out),
            })
        }
        Some(_) => Err(item_error(
            i,
            "'content' must be a string or an array of parts",
        )),
    }
}

/// A `data:` image URL that holds an image: `data:image/…;base64,` and base64 whose bytes are
/// one of the image types models take (PNG, JPEG, GIF, WebP). Says what is wrong otherwise.
pub(crate) fn check_data_image(url: &str) -> Result<(), &'static str> {
    use base64::Engine as _;
    let Some((head, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
    else {
        return Err("a data: URL needs a ',' before its data");
    };
    let Some(media_type) = head.strip_suffix(";base64") else {
        return Err("an image data: URL must be base64 (data:image/png;base64,…)");
    };
    if !media_type.starts_with("image/") {
        return Err("the data: URL's media type is not an image type");
    }
    // Padding optional: some encoders leave it out, and it carries nothing.
    let lenient = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = lenient
        .decode(data.trim())
        .map_err(|_| "the data: URL's data is not valid base64")?;
    if !super::files::sniff(&bytes).starts_with("image/") {
        return Err("the data: URL's bytes are not a PNG, JPEG, GIF or WebP image");
    }
    Ok(())
}

/// What a `tool_choice` forces: `none` and `auto` nothing (`none` takes the tools away),
/// `required` some tool, `{"type": "function" | "custom", "name"}` the client's tool,
/// `{"type": "mcp", "server_label", "name"?}` an MCP server's tool (any of its tools without a
/// name), a hosted tool's type that tool, and `{"type": "allowed_tools", "mode"}` its mode (the
/// subset it lists is not applied: every tool of the request stays offered).
fn forced_tool(choice: &Value) -> Result<Option<super::agent_run::ForcedTool>, ApiError> {
    use super::agent_run::ForcedTool;
    let bad = |why: &str| ApiError::bad_param("tool_choice", format!("tool_choice: {why}"));
    if let Some(mode) = choice.as_str() {
        return match mode {
            "none" | "auto" => Ok(None),
            "required" => Ok(Some(ForcedTool::Any)),
            other => Err(bad(&format!(
                "`{other}` is not one of none, auto, required."
            ))),
        };
    }
    let Some(kind) = choice.get("type").and_then(Value::as_str) else {
        return Err(bad(
            "a string (none, auto, required) or an object with a `type`.",
        ));
    };
    let name = || {
        choice
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(match kind {
        "function" | "custom" => match name() {
            Some(name) => Some(ForcedTool::Client(name)),
            None => return Err(bad(&format!("a `{kind}` choice needs its `name`."))),
        },
        "mcp" => {
            let Some(label) = choice.get("server_label").and_then(Value::as_str) else {
                return Err(bad("an `mcp` choice needs its `server_label`."));
            };
            match name() {
                Some(tool) => Some(ForcedTool::Mcp {
                    label: label.to_owned(),
                    tool,
                }),
                None => Some(ForcedTool::Any),
            }
        }
        "allowed_tools" => match choice.get("mode").and_then(Value::as_str) {
            Some("required") => Some(ForcedTool::Any),
            Some("auto") | None => None,
            Some(other) => {
                return Err(bad(&format!(
                    "allowed_tools mode `{other}` is not auto or required."
                )))
            }
        },
        hosted => match Hosted::of_type(hosted) {
            Some(hosted) => Some(ForcedTool::Hosted(hosted)),
            None => {
                return Err(bad(&format!(
                    "`{hosted}` is not a tool type this server knows."
                )))
            }
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn decode_json(v: Value) -> Result<ResponsesRequest, ApiError> {
        decode(v.to_string().as_bytes())
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let r = decode_json(serde_json::json!({"model": "m", "input": "hi"})).unwrap();
        assert_eq!(r.messages, vec![Message::user("hi")]);
        assert_eq!(r.input_items.len(), 1);
        assert!(r.input_items[0]["id"].as_str().unwrap().starts_with("msg_"));
        assert!(r.store);
    }

    #[test]
    fn calls_and_outputs_become_an_assistant_message_and_tool_results() {
        let r = decode_json(serde_json::json!({"model": "m", "input": [
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get", "arguments": "{\"q\":1}"},
            {"type": "function_call", "call_id": "c2", "name": "get", "arguments": "{\"q\":2}"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
        ]}))
        .unwrap();
        assert_eq!(r.messages.len(), 4);
        match &r.messages[1] {
            Message::Assistant { tool_calls, .. } => assert_eq!(tool_calls.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            r.call_outputs,
            vec![("c1".into(), "one".into()), ("c2".into(), "two".into())]
        );
    }

    #[test]
    fn tools_are_sorted_into_hosted_and_client_ones() {
        let r = decode_json(serde_json::json!({"model": "m", "input": "x", "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}},
            {"type": "web_search", "external_web_access": false},
            {"type": "code_interpreter", "container": {"type": "auto"}},
            {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g"}]},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
            {"type": "file_search"},
        ]}))
        .unwrap();
        let names: Vec<_> = r
            .client_tools
            .iter()
            .map(|t| t.spec.name.as_str())
            .collect();
        assert_eq!(names, ["f", "g", "apply_patch"]);
        assert_eq!(r.client_tools[2].kind, ClientKind::Custom);
        assert_eq!(
            r.hosted,
            vec![
                Hosted::WebSearch,
                Hosted::CodeInterpreter,
                Hosted::Other("file_search".into())
            ]
        );
    }

    #[test]
    fn bad_input_gets_a_400_naming_the_parameter() {
        let e = decode_json(serde_json::json!({"input": "x"})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("model"));
        let e =
            decode_json(serde_json::json!({"model": "m", "input": [{"type": "function_call"}]}))
                .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("input[0]"));
        let e = decode_json(
            serde_json::json!({"model": "m", "input": "x", "store": false, "background": true}),
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("background"));
        let e = decode_json(serde_json::json!({"model": "m", "input": [
            {"role": "user", "content": [{"type": "input_image", "image_url": "https://x.example/a.png"}]}
        ]}))
        .unwrap_err();
        assert!(e.message.contains("not fetched"), "{}", e.message);
    }
}
