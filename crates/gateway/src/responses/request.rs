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
use toolbridge_protocol::types::Message;

use crate::error::ApiError;

use super::request_input::decode_input;
pub(crate) use super::request_input::decode_items;
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
