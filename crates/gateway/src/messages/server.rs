//! A Messages request with Anthropic server tools: the agent's loop runs here
//! ([`crate::responses::agent_run`], the same run the Responses API drives), and its events are
//! written in Anthropic's form — `server_tool_use` blocks (`srvtoolu_…`) each followed by its
//! result block (`server_blocks.rs`), text and thinking around them, and the client's own tools
//! as `tool_use` blocks at the end with `stop_reason: tool_use` (the run stops there; the next
//! request's history continues it). One assembler gives the plain answer and the stream.
//!
//! The conversation's workspace (files, the Python session) is named by the
//! `x-toolbridge-conversation` header, else by `metadata.user_id`, always together with the
//! key's user (so two keys never share one); a request with neither gets a fresh workspace.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use rand::distr::{Alphanumeric, SampleString};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use toolbridge_agent::{CallStatus, Outcome, RequestOptions, RunEvent};
use toolbridge_protocol::types::{Message, ToolChoice};
use toolbridge_tools::workspace::Workspace;

use super::request::MessagesRequest;
use super::response::{input_object, message_id, tool_use_id, Form};
use super::server_blocks::{self, ServerTool};
use super::stream::event;
use crate::error::ApiError;
use crate::responses::agent_run::{self, Ended, Front, RunSpec};
use crate::responses::output::CallKind;
use crate::responses::request::{ClientKind, ClientTool};
use crate::responses::tools::{builtins_of, UnavailableTools};
use crate::state::AppState;

/// The header naming the conversation whose workspace server tools use.
pub(crate) const CONVERSATION_HEADER: &str = "x-toolbridge-conversation";

/// A `ping` after this long without an event (a tool may run for a while).
const PING_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Answers a Messages request that carries server tools.
pub(crate) async fn respond(
    state: Arc<AppState>,
    owner: &str,
    headers: &HeaderMap,
    client: MessagesRequest,
) -> Response {
    match prepare(&state, owner, headers, client).await {
        Ok((run, machine, form, stream)) if stream => streamed(run, machine, form),
        Ok((run, machine, form, _)) => plain(run, machine, form).await,
        Err(e) => e.into_response(),
    }
}

type Prepared = (
    agent_run::AgentRun,
    toolbridge_agent::RunMachine,
    Form,
    bool,
);

async fn prepare(
    state: &Arc<AppState>,
    owner: &str,
    headers: &HeaderMap,
    client: MessagesRequest,
) -> Result<Prepared, ApiError> {
    if state.model(&client.request.model).is_none() {
        return Err(crate::routes::unknown_model_error(
            state,
            &client.request.model,
        ));
    }
    // A server tool the configuration does not enable is refused by name (Anthropic's own
    // server would run it; leaving it out silently would change the answer).
    let configured = agent_run::configured_tools(state)?;
    for tool in &client.server_tools {
        let builtins = builtins_of(&tool.tool.hosted());
        if !builtins.iter().any(|b| configured.iter().any(|c| c == b)) {
            return Err(ApiError::bad_param(
                format!("tools.{}.type", tool.index),
                format!(
                    "The server tool `{}` is not enabled on this gateway (its [tools] enabled \
                     has no {}).",
                    tool.kind,
                    builtins.join(" or ")
                ),
            ));
        }
    }
    let conversation = headers
        .get(CONVERSATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or(client.user_id.clone());
    let request = client.request;
    let mut system = Vec::new();
    let mut messages = Vec::with_capacity(request.messages.len());
    for m in request.messages {
        match m {
            Message::System { content, .. } if messages.is_empty() => {
                system.push(content.text().into_owned())
            }
            other => messages.push(other),
        }
    }
    let mut hosted = Vec::new();
    for tool in &client.server_tools {
        let h = tool.tool.hosted();
        if !hosted.contains(&h) {
            hosted.push(h);
        }
    }
    let form = Form {
        model: request.model.clone(),
        only_first_call: request.parallel_tool_calls == Some(false),
        stop_sequences: Vec::new(),
    };
    let spec = RunSpec {
        model: request.model,
        hosted,
        client_tools: request
            .tools
            .into_iter()
            .map(|spec| ClientTool {
                spec,
                kind: ClientKind::Function,
            })
            .collect(),
        tools_off: request.tool_choice == Some(ToolChoice::None),
        forced: agent_run::ForcedTool::of_chat(request.tool_choice.as_ref(), |name| {
            client
                .server_tools
                .iter()
                .find(|t| t.tool.wire_name() == name)
                .map(|t| t.tool.hosted())
        }),
        instructions: (!system.is_empty()).then(|| system.join("\n\n")),
        user: owner.to_owned(),
        max_tool_calls: None,
        workspace_key: workspace_key(owner, conversation.as_deref()),
        unavailable: UnavailableTools::Error,
        has_files: false,
        // Anthropic's server tools have no approval step (MCP tools are not among them).
        approved: HashSet::new(),
    };
    let run = agent_run::prepare(state, owner, spec).await?;
    let machine = run
        .start(
            messages,
            RequestOptions {
                max_tokens: request.max_tokens,
                temperature: request.temperature,
                top_p: request.top_p,
                // The Messages API has no `text.format` (Anthropic's structured output is
                // not taken on this path).
                response_format: None,
            },
        )
        .await;
    Ok((run, machine, form, client.stream))
}

/// The workspace of a conversation: a digest of the key's user and the conversation's name
/// (folder-safe whatever the client sent; another key's conversation of the same name is
/// another workspace), or a fresh one.
fn workspace_key(owner: &str, conversation: Option<&str>) -> String {
    match conversation {
        Some(name) => {
            let mut digest = Sha256::new();
            digest.update(owner.as_bytes());
            digest.update([0]);
            digest.update(name.as_bytes());
            let hex: String = digest
                .finalize()
                .iter()
                .take(16)
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("msg-{hex}")
        }
        None => {
            let mut key = String::from("msg-new-");
            Alphanumeric.append_string(&mut rand::rng(), &mut key, 20);
            key
        }
    }
}

async fn plain(
    run: agent_run::AgentRun,
    machine: toolbridge_agent::RunMachine,
    form: Form,
) -> Response {
    let mut blocks = Blocks::new(message_id(), form, run.kinds(), false);
    let ended = run.drive(machine, &mut blocks, None).await;
    if let Err(e) = failed(&ended) {
        return e.into_response();
    }
    let body = blocks.message(&ended);
    let mut response = body.to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn streamed(
    run: agent_run::AgentRun,
    machine: toolbridge_agent::RunMachine,
    form: Form,
) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let cancel = run.cancel_token();
    tokio::spawn(async move {
        let mut blocks = Blocks::new(message_id(), form, run.kinds(), true);
        let mut head = Vec::new();
        blocks.start(&mut head);
        if tx.send(Bytes::from(head)).await.is_err() {
            return;
        }
        let ended = run.drive(machine, &mut blocks, Some(&tx)).await;
        let mut tail = Vec::new();
        match failed(&ended) {
            Ok(()) => blocks.end(&ended, &mut tail),
            Err(e) => event(&mut tail, "error", |o| {
                o.extend_from_slice(&super::error::body(&e))
            }),
        }
        let _ = tx.send(Bytes::from(tail)).await;
    });
    let guard = crate::responses::sse::CancelOnDrop::new(cancel);
    let body = futures::stream::unfold((rx, guard), |(mut rx, mut guard)| async move {
        match tokio::time::timeout(PING_INTERVAL, rx.recv()).await {
            Ok(Some(bytes)) => Some((Ok::<Bytes, std::convert::Infallible>(bytes), (rx, guard))),
            Ok(None) => {
                // The run ended (its sender is gone): nothing is left to cancel.
                guard.disarm();
                None
            }
            Err(_) => {
                let mut ping = Vec::new();
                event(&mut ping, "ping", |o| {
                    o.extend_from_slice(br#"{"type": "ping"}"#)
                });
                Some((Ok(Bytes::from(ping)), (rx, guard)))
            }
        }
    });
    crate::responses::sse_body(Body::from_stream(body))
}

/// A run that failed (the model request, the machinery): told by kind, detail in the log.
fn failed(ended: &Ended) -> Result<(), ApiError> {
    match ended.state.outcome {
        _ if ended.paused.is_some() => Ok(()),
        Some(Outcome::Error) | None => {
            if let Some(detail) = &ended.state.error {
                tracing::error!(error = %detail, "messages: the server-side run failed");
            }
            Err(ApiError::run_failed())
        }
        Some(Outcome::Overloaded) => Err(ApiError::server_busy()),
        Some(_) => Ok(()),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Open {
    None,
    Text,
    Thinking,
}

/// A server call whose result block is still to come.
struct Running {
    tool: ServerTool,
    id: String,
    input: Value,
}

/// The message's content assembled from the run's events: the blocks (for the plain answer)
/// and, when streaming, their events as they happen.
struct Blocks {
    id: String,
    form: Form,
    /// The server tool behind each built-in the run offers.
    tools: HashMap<String, ServerTool>,
    streaming: bool,
    content: Vec<Value>,
    open: Open,
    running: HashMap<String, Running>,
    web_search_requests: u64,
    web_fetch_requests: u64,
    out: Vec<u8>,
}

impl Blocks {
    fn new(id: String, form: Form, kinds: &HashMap<String, CallKind>, streaming: bool) -> Self {
        let tools = kinds
            .iter()
            .filter_map(|(name, kind)| {
                let tool = match kind {
                    CallKind::WebSearch => ServerTool::WebSearch,
                    CallKind::WebFetch => ServerTool::WebFetch,
                    CallKind::Python => ServerTool::CodeExecution,
                    _ => return None,
                };
                Some((name.clone(), tool))
            })
            .collect();
        Blocks {
            id,
            form,
            tools,
            streaming,
            content: Vec::new(),
            open: Open::None,
            running: HashMap::new(),
            web_search_requests: 0,
            web_fetch_requests: 0,
            out: Vec::new(),
        }
    }

    /// `message_start` and a first `ping`.
    fn start(&self, out: &mut Vec<u8>) {
        let message = json!({
            "type": "message_start",
            "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.form.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            },
        });
        event(out, "message_start", |o| {
            o.extend_from_slice(message.to_string().as_bytes())
        });
        event(out, "ping", |o| o.extend_from_slice(br#"{"type": "ping"}"#));
    }

    fn emit(&mut self, name: &str, body: &Value) {
        if self.streaming {
            event(&mut self.out, name, |o| {
                o.extend_from_slice(body.to_string().as_bytes())
            });
        }
    }

    /// A block opened: `content_block_start` shows `shown` (what the block is before its
    /// deltas), the plain answer keeps `full`.
    fn open_block(&mut self, shown: &Value, full: Value) -> usize {
        let index = self.content.len();
        self.content.push(full);
        self.emit(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": shown}),
        );
        index
    }

    fn delta(&mut self, index: usize, delta: Value) {
        self.emit(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }

    fn stop(&mut self, index: usize) {
        self.emit(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }

    /// A complete block in one go: start (with `shown`), the input as one `input_json_delta`
    /// when it has one, stop.
    fn whole_block(&mut self, shown: Value, full: Value, input: Option<&Value>) {
        let index = self.open_block(&shown, full);
        if let Some(input) = input {
            self.delta(
                index,
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            );
        }
        self.stop(index);
    }

    fn close(&mut self) {
        let index = self.content.len().saturating_sub(1);
        match self.open {
            Open::None => {}
            Open::Text => self.stop(index),
            Open::Thinking => {
                // Clients that replay thinking expect a signature; the gateway has none to give.
                self.delta(index, json!({"type": "signature_delta", "signature": ""}));
                self.stop(index);
            }
        }
        self.open = Open::None;
    }

    fn append(&mut self, kind: Open, text: &str) {
        if text.is_empty() {
            return;
        }
        let (field, delta_type) = match kind {
            Open::Thinking => ("thinking", "thinking_delta"),
            _ => ("text", "text_delta"),
        };
        if self.open != kind {
            self.close();
            let block = match kind {
                Open::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
                _ => json!({"type": "text", "text": ""}),
            };
            let shown = match kind {
                Open::Thinking => json!({"type": "thinking", "thinking": ""}),
                _ => block.clone(),
            };
            self.open_block(&shown, block);
            self.open = kind;
        }
        let index = self.content.len() - 1;
        if let Some(Value::String(s)) = self.content[index].get_mut(field) {
            s.push_str(text);
        }
        self.delta(index, json!({"type": delta_type, field: text}));
    }

    fn call_started(&mut self, id: &str, name: &str, arguments: &str) {
        // The client's calls are written at the end, from the paused run; tools of the
        // server's own (skills, memory) are not shown.
        let Some(&tool) = self.tools.get(name) else {
            return;
        };
        self.close();
        let shown_id = server_blocks::server_tool_use_id(id);
        let input = input_object(arguments);
        let block = |input: Value| json!({"type": "server_tool_use", "id": shown_id, "name": tool.wire_name(), "input": input});
        self.whole_block(block(json!({})), block(input.clone()), Some(&input));
        self.running.insert(
            id.to_owned(),
            Running {
                tool,
                id: shown_id,
                input,
            },
        );
    }

    fn call_finished(&mut self, id: &str, status: CallStatus, output: &str) {
        let Some(call) = self.running.remove(id) else {
            return;
        };
        if server_blocks::ran(status) {
            match call.tool {
                ServerTool::WebSearch => {
                    self.web_search_requests += server_blocks::requests_in(&call.input, "queries")
                }
                ServerTool::WebFetch => {
                    self.web_fetch_requests += server_blocks::requests_in(&call.input, "urls")
                }
                ServerTool::CodeExecution => {}
            }
        }
        let block = server_blocks::result_block(
            call.tool,
            &call.id,
            &call.input,
            status,
            output,
            toolbridge_state::now(),
        );
        self.whole_block(block.clone(), block, None);
    }

    /// What ends the message: the client's calls the run paused for, a block if there is none
    /// yet, the stop reason and usage.
    fn finish(&mut self, ended: &Ended) -> (&'static str, Value) {
        self.close();
        // Calls still running when the run stopped (cancelled) get no result block.
        self.running.clear();
        let mut calls = ended
            .paused
            .as_ref()
            .map(|m| m.pending_calls())
            .unwrap_or_default();
        if self.form.only_first_call {
            calls.truncate(1);
        }
        for call in &calls {
            let input = input_object(&call.arguments);
            let block = |input: Value| json!({"type": "tool_use", "id": tool_use_id(&call.id), "name": call.name, "input": input});
            self.whole_block(block(json!({})), block(input.clone()), Some(&input));
        }
        if self.content.is_empty() {
            // A message has at least one block.
            let block = json!({"type": "text", "text": ""});
            self.whole_block(block.clone(), block, None);
        }
        let reason = if !calls.is_empty() {
            "tool_use"
        } else if ended.state.cut_by_token_limit {
            "max_tokens"
        } else {
            "end_turn"
        };
        let u = ended.state.usage;
        let usage = json!({
            "input_tokens": u.prompt_tokens,
            "output_tokens": u.completion_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "server_tool_use": {
                "web_search_requests": self.web_search_requests,
                "web_fetch_requests": self.web_fetch_requests,
            },
        });
        (reason, usage)
    }

    /// The plain answer.
    fn message(&mut self, ended: &Ended) -> Value {
        let (reason, usage) = self.finish(ended);
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.form.model,
            "content": self.content,
            "stop_reason": reason,
            "stop_sequence": null,
            "usage": usage,
        })
    }

    /// The stream's last events: the final blocks, `message_delta`, `message_stop`.
    fn end(&mut self, ended: &Ended, out: &mut Vec<u8>) {
        let (reason, usage) = self.finish(ended);
        self.emit(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": null},
                    "usage": usage}),
        );
        self.emit("message_stop", &json!({"type": "message_stop"}));
        out.append(&mut self.out);
    }
}

impl Front for Blocks {
    type Out = Bytes;

    fn push(&mut self, event: &RunEvent, _workspace: Option<&Workspace>) {
        match event {
            RunEvent::Text { text } => self.append(Open::Text, text),
            RunEvent::Reasoning { text } => self.append(Open::Thinking, text),
            RunEvent::CallStarted {
                id,
                name,
                arguments,
            } => self.call_started(id, name, arguments),
            RunEvent::CallFinished {
                id, status, output, ..
            } => self.call_finished(id, *status, output),
            RunEvent::Outcome { .. } => self.close(),
            RunEvent::RoundStarted { .. }
            | RunEvent::Retry { .. }
            | RunEvent::Finalization { .. } => {}
        }
    }

    fn drain_into(&mut self, out: &mut Vec<Bytes>) {
        if !self.out.is_empty() {
            out.push(Bytes::from(std::mem::take(&mut self.out)));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn workspaces_are_per_key_user_and_conversation() {
        let a = workspace_key("alice", Some("conv-1"));
        assert_eq!(a, workspace_key("alice", Some("conv-1")));
        assert_ne!(a, workspace_key("bob", Some("conv-1")));
        assert_ne!(a, workspace_key("alice", Some("conv-2")));
        assert!(toolbridge_tools::workspace::valid_conversation(&a), "{a}");
        let fresh = workspace_key("alice", None);
        assert!(toolbridge_tools::workspace::valid_conversation(&fresh));
        assert_ne!(fresh, workspace_key("alice", None));
        // Whatever the client sends, the name is folder-safe.
        let odd = workspace_key("alice", Some("../../etc/passwd\n"));
        assert!(toolbridge_tools::workspace::valid_conversation(&odd));
    }
}
