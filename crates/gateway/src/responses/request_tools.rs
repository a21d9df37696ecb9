//! The `tools` array of a Responses request: hosted tools (what the server runs) and the
//! client's own function and custom tools (what pauses the run), with `mcp` approval rules.

use serde_json::Value;
use toolbridge_protocol::types::ToolSpec;
use toolbridge_protocol::validate::{validate_tool, ToolField};

use super::remote_mcp::{RemoteHeaders, MAX_REMOTE_SERVERS};
use super::request::type_error;
use crate::error::ApiError;

/// A hosted tool of the Responses API and the built-ins that serve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Hosted {
    /// `web_search` (and its dated variants): `web_search` + `web_fetch`.
    WebSearch,
    /// `web_fetch` alone (the Messages API's `web_fetch_…` server tool).
    WebFetch,
    /// `code_interpreter`: `python_execute` in the conversation's workspace.
    CodeInterpreter,
    /// `image_generation`: `image_generate`.
    ImageGeneration,
    /// `mcp` with this `server_label`: the tools of that `[[mcp_servers]]` entry.
    Mcp {
        label: String,
        url: Option<String>,
        /// What the request sends to a remote server (`headers`, `authorization`).
        headers: RemoteHeaders,
        approval: McpApproval,
        /// `allowed_tools`: only these of the server's tools (its own names).
        allowed: Option<Vec<String>>,
    },
    /// A hosted tool this server has no counterpart for (`file_search`, `computer_use_preview`,
    /// `local_shell`, …).
    Other(String),
}

impl Hosted {
    /// The hosted tool a `type` names (in `tool_choice`), when this server runs it.
    pub(crate) fn of_type(kind: &str) -> Option<Hosted> {
        match kind {
            k if k.starts_with("web_search") => Some(Hosted::WebSearch),
            "code_interpreter" => Some(Hosted::CodeInterpreter),
            "image_generation" => Some(Hosted::ImageGeneration),
            _ => None,
        }
    }

    pub(crate) fn wire_name(&self) -> &str {
        match self {
            Hosted::WebSearch => "web_search",
            Hosted::WebFetch => "web_fetch",
            Hosted::CodeInterpreter => "code_interpreter",
            Hosted::ImageGeneration => "image_generation",
            Hosted::Mcp { .. } => "mcp",
            Hosted::Other(kind) => kind,
        }
    }
}

/// `require_approval` of an `mcp` tool: which of its calls the client approves first
/// (`mcp_approval_request` items, answered by `mcp_approval_response`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum McpApproval {
    /// Every call (OpenAI's default).
    Always,
    Never,
    /// Calls of these tools (the server's own names).
    Only(Vec<String>),
    /// Calls of every tool but these.
    Except(Vec<String>),
}

impl McpApproval {
    fn parse(value: Option<&Value>) -> McpApproval {
        match value {
            Some(Value::String(s)) if s == "never" => McpApproval::Never,
            Some(Value::Object(o)) => {
                let names = |key: &str| -> Vec<String> {
                    o.get(key)
                        .and_then(|v| v.get("tool_names"))
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default()
                };
                match (o.contains_key("always"), o.contains_key("never")) {
                    (true, _) => McpApproval::Only(names("always")),
                    (false, true) => McpApproval::Except(names("never")),
                    _ => McpApproval::Always,
                }
            }
            _ => McpApproval::Always,
        }
    }

    /// Whether a call of `tool` (the server's own name) needs the client's approval.
    pub(crate) fn asks(&self, tool: &str) -> bool {
        match self {
            McpApproval::Always => true,
            McpApproval::Never => false,
            McpApproval::Only(names) => names.iter().any(|n| n == tool),
            McpApproval::Except(names) => !names.iter().any(|n| n == tool),
        }
    }
}

/// How a client tool's calls are written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientKind {
    /// `function_call` items with JSON `arguments`.
    Function,
    /// `custom_tool_call` items with a free-form `input` (the model is given one string field).
    Custom,
}

/// A tool the client runs.
#[derive(Clone, Debug)]
pub(crate) struct ClientTool {
    pub spec: ToolSpec,
    pub kind: ClientKind,
}

/// The one field a custom (free-form) tool's calls carry.
pub(crate) const CUSTOM_INPUT_FIELD: &str = "input";

pub(super) type Tools = (Vec<Hosted>, Vec<ClientTool>, Vec<Value>);

pub(super) fn decode_tools(tools: Option<Value>) -> Result<Tools, ApiError> {
    let tools = match tools {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(t)) => t,
        Some(_) => return Err(type_error("tools", "an array")),
    };
    let mut hosted = Vec::new();
    let mut client = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        collect_tool(&format!("tools[{i}]"), tool, &mut hosted, &mut client)?;
    }
    check_mcp_labels(&hosted)?;
    let mut seen = std::collections::HashSet::new();
    for tool in &client {
        if !seen.insert(tool.spec.name.as_str()) {
            return Err(ApiError::bad_param(
                "tools",
                format!("Duplicate tool name '{}'.", tool.spec.name),
            ));
        }
    }
    Ok((hosted, client, tools))
}

/// One tool of the request; `at` is where it is (`tools[2]`, `tools[0].tools[1]` in a
/// namespace).
fn collect_tool(
    at: &str,
    tool: &Value,
    hosted: &mut Vec<Hosted>,
    client: &mut Vec<ClientTool>,
) -> Result<(), ApiError> {
    let param = || at.to_owned();
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or_default();
    let name = || tool.get("name").and_then(Value::as_str).map(str::to_owned);
    match kind {
        "function" => {
            let Some(name) = name() else {
                return Err(ApiError::bad_param(
                    param(),
                    format!("Missing required parameter: '{at}.name'."),
                ));
            };
            let parameters = tool
                .get("parameters")
                .cloned()
                .filter(|p| !p.is_null())
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
            let spec = ToolSpec {
                name,
                description: text_field(tool, "description"),
                parameters: Some(parameters),
                strict: tool.get("strict").and_then(Value::as_bool),
            };
            check_client_tool(at, &spec)?;
            client.push(ClientTool {
                spec,
                kind: ClientKind::Function,
            });
        }
        "custom" => {
            let Some(name) = name() else {
                return Err(ApiError::bad_param(
                    param(),
                    format!("Missing required parameter: '{at}.name'."),
                ));
            };
            let spec = ToolSpec {
                name,
                description: text_field(tool, "description"),
                parameters: Some(serde_json::json!({
                    "type": "object",
                    "properties": {CUSTOM_INPUT_FIELD: {"type": "string"}},
                    "required": [CUSTOM_INPUT_FIELD],
                })),
                strict: None,
            };
            check_client_tool(at, &spec)?;
            client.push(ClientTool {
                spec,
                kind: ClientKind::Custom,
            });
        }
        // Codex groups function tools in a namespace: each is a client tool of its own.
        "namespace" => {
            for (k, inner) in tool
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                collect_tool(&format!("{at}.tools[{k}]"), inner, hosted, client)?;
            }
        }
        k if k.starts_with("web_search") => hosted.push(Hosted::WebSearch),
        "code_interpreter" => hosted.push(Hosted::CodeInterpreter),
        "image_generation" => hosted.push(Hosted::ImageGeneration),
        "mcp" => {
            let Some(label) = tool.get("server_label").and_then(Value::as_str) else {
                return Err(ApiError::bad_param(
                    param(),
                    format!("Missing required parameter: '{at}.server_label'."),
                ));
            };
            hosted.push(Hosted::Mcp {
                label: label.to_owned(),
                url: tool
                    .get("server_url")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                headers: RemoteHeaders::decode(
                    &param(),
                    tool.get("headers"),
                    tool.get("authorization"),
                )?,
                approval: McpApproval::parse(tool.get("require_approval")),
                allowed: tool.get("allowed_tools").and_then(|a| {
                    let list = a.as_array().or_else(|| a.get("tool_names")?.as_array())?;
                    Some(
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                    )
                }),
            });
        }
        "" => {
            return Err(ApiError::bad_param(
                param(),
                format!("Missing required parameter: '{at}.type'."),
            ))
        }
        other => hosted.push(Hosted::Other(other.chars().take(64).collect())),
    }
    Ok(())
}

/// A client tool's name and parameters as OpenAI accepts them (`^[a-zA-Z0-9_-]{1,64}$`, a JSON
/// Schema object): a name outside that alphabet would be written into prompts as it is.
fn check_client_tool(at: &str, spec: &ToolSpec) -> Result<(), ApiError> {
    validate_tool(0, spec).map_err(|e| {
        let field = match e.field {
            ToolField::Name => "name",
            ToolField::Parameters => "parameters",
        };
        ApiError::bad_param(format!("{at}.{field}"), e.message)
    })?;
    if let Some(parameters) = &spec.parameters {
        crate::schema::check_properties(parameters, &format!("{at}.parameters"))?;
    }
    Ok(())
}

/// Two `mcp` tools may not share a label (their tools would share names), a label with a
/// `server_url` must be usable in tool names, and a request names at most
/// [`MAX_REMOTE_SERVERS`] servers by URL.
fn check_mcp_labels(hosted: &[Hosted]) -> Result<(), ApiError> {
    let mut labels = std::collections::HashSet::new();
    let mut remote = 0;
    for h in hosted {
        if let Hosted::Mcp { label, url, .. } = h {
            if !labels.insert(label.as_str()) {
                return Err(ApiError::bad_param(
                    "tools",
                    format!("Duplicate MCP server_label '{label}'."),
                ));
            }
            if url.is_some() {
                remote += 1;
                if !toolbridge_mcp::config::is_valid_name(label) {
                    return Err(ApiError::bad_param(
                        "tools",
                        format!("MCP server_label '{label}' may only hold letters, digits, '_' and '-'."),
                    ));
                }
            }
        }
    }
    if remote > MAX_REMOTE_SERVERS {
        return Err(ApiError::bad_param(
            "tools",
            format!("At most {MAX_REMOTE_SERVERS} MCP servers may be named by server_url in one request."),
        ));
    }
    Ok(())
}

fn text_field(tool: &Value, key: &str) -> String {
    tool.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
