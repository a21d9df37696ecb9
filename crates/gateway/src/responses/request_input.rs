//! The `input` of a Responses request (and the items of `POST /v1/conversations`): messages and
//! their parts (text, images, files), function and custom-tool calls and their outputs, earlier
//! hosted-call items, decoded into the agent's [`Message`]s and kept as items with ids; the files
//! they refer to are collected for staging. Each refusal names the item at fault.

use serde_json::{Map, Value};
use toolbridge_protocol::types::{Content, ContentPart, ImageUrl, Message, ToolCall};

use crate::error::ApiError;

use super::request::{type_error, FileRef, FileSource, CUSTOM_INPUT_FIELD};

pub(super) type Decoded = (
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
pub(super) fn decode_input(input: Value) -> Result<Decoded, ApiError> {
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
