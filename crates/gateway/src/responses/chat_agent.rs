//! A configured agent exposed as a Chat Completions model (`[[server.agents]]`): a chat-only
//! client names it as `model` and gets the server-side loop — the hosted tools the entry lists
//! run here, the final text comes back as the answer, and tool activity is sent as SSE comment
//! lines (`: tool python_execute started`), which clients ignore. The client's own `tools`
//! come back as `tool_calls` (`finish_reason: tool_calls`); its next request, carrying their
//! results in the history, starts a new run from there (Chat Completions keeps no state).
//!
//! Chat Completions stays a translator for every other model name.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolbridge_protocol::types::{FinishReason, ToolCall, Usage};

use super::request::{ClientKind, ClientTool, Hosted, ResponsesRequest};
use super::run;
use crate::chunks::ChunkWriter;
use crate::error::ApiError;
use crate::request::{completion_id, unix_now, ClientRequest};
use crate::state::AppState;

/// One `[[server.agents]]` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentModel {
    /// The model name clients send.
    pub name: String,
    /// The configured model the agent's loop calls.
    pub model: String,
    /// Hosted tools it runs: `web_search`, `code_interpreter`, `image_generation`,
    /// `mcp:<server>`.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Replaces the configured system prompt.
    pub instructions: Option<String>,
}

impl AgentModel {
    fn hosted(&self) -> Vec<Hosted> {
        self.tools
            .iter()
            .map(|t| match t.as_str() {
                "web_search" => Hosted::WebSearch,
                "code_interpreter" => Hosted::CodeInterpreter,
                "image_generation" => Hosted::ImageGeneration,
                other => match other.strip_prefix("mcp:") {
                    Some(label) => Hosted::Mcp {
                        label: label.to_owned(),
                        url: None,
                        headers: Default::default(),
                        // The operator configured the agent: its policy decides.
                        approval: super::request::McpApproval::Never,
                        allowed: None,
                    },
                    None => Hosted::Other(other.to_owned()),
                },
            })
            .collect()
    }
}

/// Answers a chat completion for an agent model.
pub(crate) async fn respond(
    state: Arc<AppState>,
    agent: &AgentModel,
    owner: &str,
    client: ClientRequest,
) -> Response {
    let request = client.request;
    let stream = client.stream;
    let mut system = Vec::new();
    let mut messages = Vec::with_capacity(request.messages.len());
    for m in request.messages {
        match m {
            toolbridge_protocol::types::Message::System { content, .. } if messages.is_empty() => {
                system.push(content.text().into_owned())
            }
            other => messages.push(other),
        }
    }
    let instructions = match (&agent.instructions, system.is_empty()) {
        (Some(i), true) => Some(i.clone()),
        (Some(i), false) => Some(format!("{i}\n\n{}", system.join("\n\n"))),
        (None, false) => Some(system.join("\n\n")),
        (None, true) => None,
    };
    let client_tools: Vec<ClientTool> = request
        .tools
        .into_iter()
        .map(|spec| ClientTool {
            spec,
            kind: ClientKind::Function,
        })
        .collect();
    let tools_off = request.tool_choice == Some(toolbridge_protocol::types::ToolChoice::None);
    let responses = ResponsesRequest {
        model: agent.model.clone(),
        input_items: Vec::new(),
        messages,
        call_outputs: Vec::new(),
        files: Vec::new(),
        approvals: Vec::new(),
        instructions,
        hosted: agent.hosted(),
        client_tools,
        tools_echo: Vec::new(),
        tool_choice: json!("auto"),
        tools_off,
        forced: super::agent_run::ForcedTool::of_chat(request.tool_choice.as_ref(), |_| None),
        previous_response_id: None,
        conversation: None,
        store: false,
        stream,
        background: false,
        max_output_tokens: request.max_tokens,
        max_tool_calls: None,
        temperature: request.temperature,
        top_p: request.top_p,
        metadata: json!({}),
        user: None,
        parallel_tool_calls: true,
        response_format: request.extra.get("response_format").cloned(),
    };
    let prepared = match run::prepare(&state, owner, responses).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let id = completion_id();
    let created = unix_now();
    let name = agent.name.clone();
    if !stream {
        let body = run::execute(state, prepared, None).await;
        return completion(&id, created, &name, &body);
    }
    let (tx, mut rx) = mpsc::channel(64);
    let cancel = prepared.cancel_token();
    tokio::spawn(run::execute(state, prepared, Some(tx)));
    let writer = ChunkWriter::new(&id, created, &name);
    let body = async_stream_body(
        move |out| async move {
            let mut buf = Vec::new();
            writer.role(&mut buf);
            out.send(Bytes::from(std::mem::take(&mut buf))).await.ok();
            let mut calls = 0usize;
            let mut final_body = Value::Null;
            while let Some((kind, fields)) = rx.recv().await {
                match kind {
                    "response.output_text.delta" => {
                        writer.content(&mut buf, fields["delta"].as_str().unwrap_or_default())
                    }
                    "response.reasoning_text.delta" => {
                        writer.reasoning(&mut buf, fields["delta"].as_str().unwrap_or_default())
                    }
                    "response.output_item.added" => {
                        if let Some(line) = activity(&fields["item"], "started") {
                            buf.extend_from_slice(line.as_bytes());
                        }
                    }
                    "response.output_item.done" => {
                        let item = &fields["item"];
                        if item["type"] == "function_call" {
                            writer.call_start(
                                &mut buf,
                                calls,
                                item["call_id"].as_str().unwrap_or_default(),
                                item["name"].as_str().unwrap_or_default(),
                            );
                            writer.call_args(
                                &mut buf,
                                calls,
                                item["arguments"].as_str().unwrap_or_default(),
                            );
                            calls += 1;
                        } else if let Some(line) = activity(item, "finished") {
                            buf.extend_from_slice(line.as_bytes());
                        }
                    }
                    "response.completed" | "response.incomplete" | "response.failed" => {
                        final_body = fields["response"].clone();
                    }
                    _ => {}
                }
                if !buf.is_empty()
                    && out
                        .send(Bytes::from(std::mem::take(&mut buf)))
                        .await
                        .is_err()
                {
                    return;
                }
            }
            if final_body["status"] == "failed" {
                let error = ApiError::internal();
                ChunkWriter::error(&mut buf, &error.body_json());
            } else {
                writer.finish(&mut buf, finish_reason(&final_body, calls));
                if client.include_usage {
                    writer.usage(&mut buf, &usage(&final_body));
                }
            }
            ChunkWriter::done(&mut buf);
            out.send(Bytes::from(buf)).await.ok();
        },
        cancel,
    );
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// An SSE comment line reporting a hosted tool's activity (`None` for items that are not).
fn activity(item: &Value, what: &str) -> Option<String> {
    let tool = match item["type"].as_str()? {
        "code_interpreter_call" => "python_execute",
        "web_search_call" => "web_search",
        "image_generation_call" => "image_generate",
        "mcp_call" => item["name"].as_str()?,
        _ => return None,
    };
    let status = item["status"].as_str().unwrap_or_default();
    Some(format!(": tool {tool} {what} {status}\n\n"))
}

fn finish_reason(body: &Value, calls: usize) -> FinishReason {
    if calls > 0 {
        FinishReason::ToolCalls
    } else if body["incomplete_details"]["reason"] == "max_output_tokens" {
        FinishReason::Length
    } else {
        FinishReason::Stop
    }
}

fn usage(body: &Value) -> Usage {
    let n = |k: &str| body["usage"][k].as_u64().unwrap_or(0);
    Usage {
        prompt_tokens: n("input_tokens"),
        completion_tokens: n("output_tokens"),
        total_tokens: n("total_tokens"),
    }
}

/// The run's result as one `chat.completion`.
fn completion(id: &str, created: u64, model: &str, body: &Value) -> Response {
    if body["status"] == "failed" {
        return ApiError::internal().into_response();
    }
    let calls: Vec<ToolCall> = body["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call")
        .map(|i| ToolCall {
            id: i["call_id"].as_str().unwrap_or_default().to_owned(),
            name: i["name"].as_str().unwrap_or_default().to_owned(),
            arguments: i["arguments"].as_str().unwrap_or_default().to_owned(),
        })
        .collect();
    let text = body["output_text"].as_str().unwrap_or_default();
    let completion = toolbridge_protocol::openai::ChatCompletion {
        id: id.to_owned(),
        object: "chat.completion".into(),
        created,
        model: model.to_owned(),
        choices: vec![toolbridge_protocol::openai::Choice {
            index: 0,
            message: toolbridge_protocol::openai::ResponseMessage {
                content: (!text.is_empty() || calls.is_empty()).then(|| text.to_owned()),
                tool_calls: calls.clone(),
                ..Default::default()
            },
            finish_reason: Some(finish_reason(body, calls.len())),
        }],
        usage: Some(usage(body)),
    };
    let mut response = serde_json::to_string(&completion)
        .unwrap_or_default()
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A body fed by `produce` through a channel; dropping the body (the client went away)
/// cancels the run.
fn async_stream_body<F, Fut>(produce: F, cancel: tokio_util::sync::CancellationToken) -> Body
where
    F: FnOnce(mpsc::Sender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(produce(tx));
    let guard = super::sse::CancelOnDrop::new(cancel);
    let stream = futures::stream::unfold((rx, guard), |(mut rx, mut guard)| async move {
        match rx.recv().await {
            Some(bytes) => Some((Ok::<Bytes, std::convert::Infallible>(bytes), (rx, guard))),
            None => {
                guard.disarm();
                None
            }
        }
    });
    Body::from_stream(stream)
}
