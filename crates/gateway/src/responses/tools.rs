//! A request's tools as the agent gets them: hosted tools mapped to the configured built-ins
//! (and `[[mcp_servers]]`), the client's functions as stand-ins that pause the run, and what
//! the assembler needs to show each call.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Value};
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::types::ToolSpec;

use super::agent_run::RunSpec;
use super::output::CallKind;
use super::remote_mcp::Connected;
use super::request::{ClientKind, ClientTool, Hosted};
use crate::error::ApiError;

/// `[server.responses] unavailable_tools`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnavailableTools {
    /// Left out of what the model sees, with a warning in the log and on the tool's echo.
    #[default]
    Warn,
    /// A 400 naming the tool.
    Error,
}

/// What a request's tools come to.
pub(crate) struct Plan {
    /// Names of configured tools (built-in, MCP) the run offers.
    pub offer: HashSet<String>,
    /// The client's tools, as stand-ins.
    pub client: Vec<Arc<dyn Tool>>,
    /// Tools of remote MCP servers this request named by `server_url` (connected for it).
    pub remote: Vec<Arc<dyn Tool>>,
    pub client_names: HashSet<String>,
    pub kinds: HashMap<String, CallKind>,
    /// Exposed names of MCP tools whose calls the client approves first (`require_approval`,
    /// and the operator's ask policy, added by `agent_run::prepare`).
    pub needs_approval: HashSet<String>,
    /// Hosted tools left out (the configuration lacks them), each with why.
    pub missing: Vec<(String, String)>,
}

/// The built-ins that serve each hosted tool.
pub(crate) fn builtins_of(hosted: &Hosted) -> &'static [&'static str] {
    match hosted {
        Hosted::WebSearch => &["web_search", "web_fetch"],
        Hosted::WebFetch => &["web_fetch"],
        Hosted::CodeInterpreter => &["python_execute"],
        Hosted::ImageGeneration => &["image_generate"],
        Hosted::Mcp { .. } | Hosted::Other(_) => &[],
    }
}

/// One tool of an `mcp` tool's server: its exposed name, the server's own name for it, and the
/// tool itself when a remote server connected for this request serves it (`None`: a configured
/// server's, offered by name from the shared toolbox).
type McpEntry = (String, String, Option<Arc<dyn Tool>>);

/// Always offered when configured (ours, not OpenAI's): the user's memory.
const ALWAYS: &[&str] = &["save_memory"];

/// Sorts the request's tools against the configured ones (`configured`: every tool name of the
/// server's shared toolbox) and the remote MCP servers connected for it (`remote`).
pub(crate) fn plan(
    request: &RunSpec,
    configured: &[String],
    remote: &Connected,
) -> Result<Plan, ApiError> {
    let has = |name: &str| configured.iter().any(|c| c == name);
    let mut offer = HashSet::new();
    let mut remote_offer: Vec<Arc<dyn Tool>> = Vec::new();
    let mut kinds = HashMap::new();
    let mut needs_approval = HashSet::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    if !request.tools_off {
        for name in ALWAYS {
            if has(name) {
                offer.insert((*name).to_owned());
            }
        }
        for hosted in &request.hosted {
            match hosted {
                Hosted::Mcp {
                    label,
                    url,
                    approval,
                    allowed,
                    ..
                } => {
                    let prefix = format!("{}{label}__", toolbridge_mcp::names::PREFIX);
                    // A configured server's tools first, else the request's own server's.
                    let entries: Vec<McpEntry> = {
                        let configured: Vec<_> = configured
                            .iter()
                            .filter(|c| c.starts_with(&prefix))
                            .map(|c| (c.clone(), c[prefix.len()..].to_owned(), None))
                            .collect();
                        if !configured.is_empty() {
                            configured
                        } else if let Some(tools) = remote.tools.get(label) {
                            tools
                                .iter()
                                .map(|t| {
                                    let tool = Arc::clone(t) as Arc<dyn Tool>;
                                    (
                                        t.spec().name.clone(),
                                        t.remote_name().to_owned(),
                                        Some(tool),
                                    )
                                })
                                .collect()
                        } else {
                            let why = match (url, remote.failed.get(label)) {
                                (_, Some(why)) => why.clone(),
                                (Some(_), None) => {
                                    "the remote MCP server was not connected".to_owned()
                                }
                                (None, None) => {
                                    "no [[mcp_servers]] entry has this name (or it has no tools)"
                                        .to_owned()
                                }
                            };
                            missing.push((format!("mcp:{label}"), why));
                            continue;
                        }
                    };
                    for (exposed, own, tool) in entries {
                        if allowed.as_ref().is_some_and(|a| !a.contains(&own)) {
                            continue;
                        }
                        if approval.asks(&own) {
                            needs_approval.insert(exposed.clone());
                        }
                        match tool {
                            Some(tool) => remote_offer.push(tool),
                            None => {
                                offer.insert(exposed.clone());
                            }
                        }
                        kinds.insert(
                            exposed,
                            CallKind::Mcp {
                                label: label.clone(),
                                tool: own,
                            },
                        );
                    }
                }
                Hosted::Other(kind) => {
                    missing.push((kind.clone(), "this server has no counterpart".to_owned()))
                }
                known => {
                    let names = builtins_of(known);
                    let present: Vec<&&str> = names.iter().filter(|n| has(n)).collect();
                    if present.is_empty() {
                        missing.push((
                            known.wire_name().to_owned(),
                            format!("enable {} under [tools] enabled", names[0]),
                        ));
                        continue;
                    }
                    for name in present {
                        offer.insert((*name).to_owned());
                        let kind = match *name {
                            "web_search" => CallKind::WebSearch,
                            "web_fetch" => CallKind::WebFetch,
                            "python_execute" => CallKind::Python,
                            _ => CallKind::Image,
                        };
                        kinds.insert((*name).to_owned(), kind);
                    }
                }
            }
        }
    }
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if request.unavailable == UnavailableTools::Error {
            return Err(ApiError::bad_param(
                "tools",
                format!("Hosted tools not available on this server: {list}."),
            ));
        }
        for (tool, why) in &missing {
            tracing::warn!(%tool, reason = %why, "responses: hosted tool not available; left out of what the model sees");
        }
    }
    let mut client = Vec::new();
    let mut client_names = HashSet::new();
    if !request.tools_off {
        for tool in &request.client_tools {
            if offer.contains(&tool.spec.name) {
                return Err(ApiError::bad_param(
                    "tools",
                    format!(
                        "The function name '{}' is taken by a hosted tool of this request.",
                        tool.spec.name
                    ),
                ));
            }
            client_names.insert(tool.spec.name.clone());
            kinds.insert(tool.spec.name.clone(), CallKind::Client(tool.kind));
            client.push(Arc::new(ClientStandIn::new(tool)) as Arc<dyn Tool>);
        }
    }
    Ok(Plan {
        offer,
        client,
        remote: remote_offer,
        client_names,
        kinds,
        needs_approval,
        missing,
    })
}

/// The request's tools as sent, each unavailable hosted one marked with why. An `mcp` tool's
/// `headers` and `authorization` are left out: they are the client's secrets for its server,
/// never stored or shown again.
pub(crate) fn echo_tools(tools: &[Value], missing: &[(String, String)]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let kind = tool["type"].as_str().unwrap_or_default();
            let key = match kind {
                "mcp" => format!("mcp:{}", tool["server_label"].as_str().unwrap_or_default()),
                k if k.starts_with("web_search") => "web_search".to_owned(),
                k => k.to_owned(),
            };
            let mut echoed = tool.clone();
            if let Value::Object(m) = &mut echoed {
                if kind == "mcp" {
                    m.remove("headers");
                    m.remove("authorization");
                }
                if let Some((_, why)) = missing.iter().find(|(t, _)| *t == key) {
                    m.insert(
                        "toolbridge_unavailable".into(),
                        json!(format!("not offered to the model: {why}")),
                    );
                }
            }
            echoed
        })
        .collect()
}

/// A client's tool in the agent's toolbox: the model sees its spec; its calls pause the run
/// before they would run, so `invoke` is never reached in a Responses run.
struct ClientStandIn {
    spec: ToolSpec,
}

impl ClientStandIn {
    fn new(tool: &ClientTool) -> Self {
        let mut spec = tool.spec.clone();
        if tool.kind == ClientKind::Custom && spec.description.is_empty() {
            spec.description = "A tool of the client; its input is one string.".into();
        }
        ClientStandIn { spec }
    }
}

impl Tool for ClientStandIn {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, _arguments: Value, _context: ToolContext) -> ToolFuture {
        Box::pin(async {
            Err(ToolError::internal(
                "a client tool reached the server's toolbox (the run should have paused)",
            ))
        })
    }
}
