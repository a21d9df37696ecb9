//! One `POST /v1/responses`: the request's agent, its run (new, continued after an earlier
//! response, or resumed with the client's function outputs), the output assembled from the
//! run's events, and the record stored at the start (`in_progress`) and at the end.
//!
//! The loop policy is the agent's ([`toolbridge_agent::RunMachine`]); this file only decides
//! what goes in (messages, tools, stored state) and what comes out (items, status, usage).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolbridge_agent::toolbox::{truncate, CallResult};
use toolbridge_agent::{
    CallStatus, Outcome, RequestOptions, RunEvent, RunMachine, RunState, ToolboxConfig,
};
use toolbridge_protocol::types::{Message, ToolCall, Usage};
use toolbridge_state::ResponseRecord;
use toolbridge_tools::workspace::Workspace;

use super::agent_run::{self, AgentRun, Ended, Front, RunSpec};
use super::ids;
use super::output::{output_text, Assembler, CallKind, StreamEvent};
use super::request::ResponsesRequest;
use super::tools::{self, Plan};
use crate::error::ApiError;
use crate::state::AppState;

/// What a run needs once the request is checked.
pub(crate) struct Prepared {
    run: AgentRun,
    machine: RunMachine,
    container: String,
    workspace_key: String,
    pub record: ResponseRecord,
    store: bool,
    conversation: Option<toolbridge_state::ConversationRecord>,
    /// Calls of a resumed run that run now (approved MCP calls): shown as they start.
    resumed: Vec<ToolCall>,
}

/// Approval request items are named after their call: `mcpr_` and the call id.
pub(crate) const APPROVAL_PREFIX: &str = "mcpr_";

impl Prepared {
    /// Cancels the run (its upstream request and running tools).
    pub(crate) fn cancel_token(&self) -> tokio_util::sync::CancellationToken {
        self.run.cancel_token()
    }
}

/// The response object's fields that do not depend on the run.
fn skeleton(id: &str, created_at: i64, request: &ResponsesRequest, tools: &[Value]) -> Value {
    json!({
        "id": id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "background": request.background,
        "error": null,
        "incomplete_details": null,
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": request.max_tool_calls,
        "model": request.model,
        "output": [],
        "parallel_tool_calls": request.parallel_tool_calls,
        "previous_response_id": request.previous_response_id,
        "conversation": request.conversation.as_ref().map(|c| json!({"id": c})),
        "reasoning": {"effort": null, "summary": null},
        "store": request.store,
        "temperature": request.temperature.unwrap_or(1.0),
        "text": {"format": request.response_format.as_ref().map_or_else(
            || json!({"type": "text"}),
            |f| match f["type"].as_str() {
                Some("json_schema") => {
                    let mut out = f["json_schema"].clone();
                    out["type"] = json!("json_schema");
                    out
                }
                _ => f.clone(),
            },
        )},
        "tool_choice": request.tool_choice,
        "tools": tools,
        "top_p": request.top_p.unwrap_or(1.0),
        "truncation": "disabled",
        "usage": null,
        "user": request.user,
        "metadata": request.metadata,
    })
}

/// Everything before the run: the model, the earlier response or conversation, the tools, the
/// agent and its machine. Errors are the client's (400/404) or the store's (503).
pub(crate) async fn prepare(
    state: &Arc<AppState>,
    owner: &str,
    mut request: ResponsesRequest,
) -> Result<Prepared, ApiError> {
    let service = &state.responses;
    // An unknown model is told before anything is looked up.
    if state.model(&request.model).is_none() {
        return Err(crate::routes::unknown_model_error(state, &request.model));
    }
    let store = service.store().await.map_err(|e| {
        tracing::error!(error = %e, "responses: state store");
        ApiError::state_unavailable()
    })?;
    let previous = match &request.previous_response_id {
        Some(id) => {
            let found = store.get_response(owner, id).await.map_err(store_error)?;
            match found {
                Some(r) if r.status == "in_progress" || r.status == "queued" => {
                    return Err(ApiError::bad_param(
                        "previous_response_id",
                        format!("Previous response '{id}' is still in progress."),
                    ))
                }
                Some(r) => Some(r),
                None => {
                    return Err(ApiError::no_such(
                        "previous response",
                        id,
                        Some("previous_response_id"),
                    ))
                }
            }
        }
        None => None,
    };
    let conversation = match &request.conversation {
        Some(id) => Some(
            store
                .get_conversation(owner, id)
                .await
                .map_err(store_error)?
                .ok_or_else(|| ApiError::no_such("conversation", id, Some("conversation")))?,
        ),
        None => None,
    };
    let mut answerable = Answerable::default();
    answerable.items(&request.input_items);
    if let Some(p) = &previous {
        answerable.messages(&p.context["messages"]);
        answerable.items_of(&p.body["output"]);
        answerable.awaited_in(&p.body["output"]);
    }
    if let Some(c) = &conversation {
        answerable.messages(&c.context["messages"]);
        answerable.items_of(&c.items);
    }
    answerable.check(&request.input_items)?;
    let earlier_context = previous
        .as_ref()
        .map(|p| &p.context)
        .or(conversation.as_ref().map(|c| &c.context));
    let workspace_key = earlier_context
        .and_then(|c| c["workspace"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| ids::new("ws"));
    let container = format!("cntr_{}", workspace_key.trim_start_matches("ws_"));

    let paused = match previous.as_ref().and_then(|p| p.run.clone()) {
        Some(stored) => Some(read_paused(stored)?),
        None => None,
    };
    // Approvals count only for the calls the paused run waits for: an answer carried into
    // any other request approves nothing (a later call that happens to reuse the id included).
    let answers = Answers::of(&request, paused.as_ref());
    let approved = answers.approved.clone();
    let spec = RunSpec {
        model: request.model.clone(),
        hosted: request.hosted.clone(),
        client_tools: request.client_tools.clone(),
        tools_off: request.tools_off,
        forced: request.forced.clone(),
        instructions: request.instructions.clone(),
        user: memory_user(owner, request.user.as_deref()),
        max_tool_calls: request.max_tool_calls,
        workspace_key: workspace_key.clone(),
        unavailable: service.config.unavailable_tools,
        has_files: !request.files.is_empty(),
        approved,
    };
    let mut run = agent_run::prepare(state, owner, spec).await?;
    if !request.files.is_empty() {
        let quota = crate::quota::workspace_quota(state);
        let staged =
            super::staging::stage(store.as_ref(), owner, &mut request, run.workspace(), quota)
                .await?;
        run.context.attachments.extend(staged);
    }

    let mut resumed = Vec::new();
    let machine = match (paused, &previous) {
        (Some(paused), Some(previous)) => {
            let (machine, approved_calls) = resume_machine(
                paused,
                &request,
                run.agent.toolbox_config(),
                &run.plan,
                &answers,
            )?;
            claim_answers(store.as_ref(), owner, &previous.id, &answers).await?;
            resumed = approved_calls;
            machine
        }
        _ => {
            let mut history: Vec<Message> = earlier_context
                .and_then(|c| serde_json::from_value(c["messages"].clone()).ok())
                .unwrap_or_default();
            history.extend(request.messages.iter().cloned());
            run.start(
                history,
                RequestOptions {
                    max_tokens: request.max_output_tokens,
                    temperature: request.temperature,
                    top_p: request.top_p,
                    response_format: request.response_format.clone(),
                },
            )
            .await
        }
    };

    let now = toolbridge_state::now();
    let id = ids::new("resp");
    let echo = tools::echo_tools(&request.tools_echo, &run.plan.missing);
    let body = skeleton(&id, now, &request, &echo);
    let record = ResponseRecord {
        id,
        owner: owner.to_owned(),
        status: "in_progress".into(),
        created_at: now,
        updated_at: now,
        expires_at: service.expires_at(now),
        instance: service.instance.clone(),
        previous_response_id: request.previous_response_id.clone(),
        conversation_id: request.conversation.clone(),
        body,
        input_items: Value::Array(request.input_items.clone()),
        context: Value::Null,
        run: None,
    };
    Ok(Prepared {
        run,
        machine,
        container,
        workspace_key,
        record,
        store: request.store,
        conversation,
        resumed,
    })
}

/// The calls a request's outputs may answer and the approval requests its approval responses
/// may answer: those of its own input and of the history it continues (the previous response's
/// or the conversation's). An answer to nothing would reach the model as the result of a call
/// it never made.
#[derive(Default)]
struct Answerable {
    calls: HashSet<String>,
    approvals: HashSet<String>,
    /// The calls of the previous response's output, named in the error as what it waits for.
    awaited: Vec<String>,
}

impl Answerable {
    fn items(&mut self, items: &[Value]) {
        for item in items {
            let text = |key: &str| item[key].as_str().map(str::to_owned);
            match item["type"].as_str() {
                Some("function_call" | "custom_tool_call") => self.calls.extend(text("call_id")),
                Some("mcp_approval_request") => self.approvals.extend(text("id")),
                _ => {}
            }
        }
    }

    fn awaited_in(&mut self, output: &Value) {
        let calls = output
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call" | "custom_tool_call")
                )
            })
            .filter_map(|i| i["call_id"].as_str());
        self.awaited.extend(calls.take(8).map(str::to_owned));
    }

    fn items_of(&mut self, items: &Value) {
        if let Some(items) = items.as_array() {
            self.items(items);
        }
    }

    /// Stored messages in Chat Completions' form: the assistant's `tool_calls`.
    fn messages(&mut self, messages: &Value) {
        let calls = messages
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .filter_map(|c| c["id"].as_str());
        self.calls.extend(calls.map(str::to_owned));
    }

    /// Each answer in `input` answers something known. An `item_reference` may stand for a
    /// call this does not look up, so a request with one is not checked.
    fn check(&self, input: &[Value]) -> Result<(), ApiError> {
        if input.iter().any(|i| i["type"] == "item_reference") {
            return Ok(());
        }
        for (i, item) in input.iter().enumerate() {
            let (key, known, what) = match item["type"].as_str() {
                Some("function_call_output" | "custom_tool_call_output") => {
                    ("call_id", &self.calls, "call")
                }
                Some("mcp_approval_response") => (
                    "approval_request_id",
                    &self.approvals,
                    "MCP approval request",
                ),
                _ => continue,
            };
            let id = item[key].as_str().unwrap_or_default();
            if !known.contains(id) {
                let param = format!("input[{i}].{key}");
                let mut message = format!(
                    "Invalid '{param}': no {what} with id '{}' is in this request's input or in \
                     the response or conversation it continues.",
                    id.chars().take(64).collect::<String>()
                );
                if !self.awaited.is_empty() && key == "call_id" {
                    message.push_str(&format!(
                        " The previous response waits for the outputs of: {}.",
                        self.awaited.join(", ")
                    ));
                }
                return Err(ApiError::bad_param(param, message));
            }
        }
        Ok(())
    }
}

fn store_error(e: toolbridge_state::StoreError) -> ApiError {
    tracing::error!(error = %e, "responses: state store");
    ApiError::state_unavailable()
}

/// Whose memories a run reads and writes: the key's user, or — when the request names a `user`
/// — that user *within* the key's (a key can keep its own users apart, never reach another
/// key's).
fn memory_user(owner: &str, user: Option<&str>) -> String {
    match user.map(str::trim).filter(|u| !u.is_empty()) {
        Some(user) => format!("{owner}/{user}"),
        None => owner.to_owned(),
    }
}

/// The run a stored response paused.
fn read_paused(run: Value) -> Result<RunMachine, ApiError> {
    serde_json::from_value(run).map_err(|e| {
        tracing::error!(error = %e, "responses: a stored run does not read back");
        ApiError::internal()
    })
}

/// The client's answers to the approval requests of the paused run it resumes, by call id
/// (an approval request item is named after its call: [`APPROVAL_PREFIX`] and the call id).
#[derive(Default)]
struct Answers {
    approved: HashSet<String>,
    denied: HashSet<String>,
}

impl Answers {
    /// The request's answers to calls `paused` waits for; none without a paused run.
    fn of(request: &ResponsesRequest, paused: Option<&RunMachine>) -> Answers {
        let Some(paused) = paused else {
            return Answers::default();
        };
        let waiting: HashSet<String> = paused.pending_calls().into_iter().map(|c| c.id).collect();
        let mut answers = Answers::default();
        for (request_id, yes) in &request.approvals {
            let Some(call) = request_id.strip_prefix(APPROVAL_PREFIX) else {
                continue;
            };
            if waiting.contains(call) {
                let side = if *yes {
                    &mut answers.approved
                } else {
                    &mut answers.denied
                };
                side.insert(call.to_owned());
            }
        }
        answers
    }

    /// The approval request items answered, by their ids.
    fn request_ids(&self) -> Vec<String> {
        self.approved
            .iter()
            .chain(&self.denied)
            .map(|call| format!("{APPROVAL_PREFIX}{call}"))
            .collect()
    }
}

/// Marks the answers used, in the store, before any approved call runs: a replayed answer, or
/// the same answer sent twice at once (to this instance or another), is refused here, so an
/// approved call runs once. A denial is used up too: it cannot be turned into an approval.
async fn claim_answers(
    store: &dyn toolbridge_state::Store,
    owner: &str,
    paused_response: &str,
    answers: &Answers,
) -> Result<(), ApiError> {
    let request_ids = answers.request_ids();
    if request_ids.is_empty() {
        return Ok(());
    }
    let answered_before = store
        .claim_approvals(
            owner,
            paused_response,
            &request_ids,
            toolbridge_state::now(),
        )
        .await
        .map_err(store_error)?;
    if answered_before.is_empty() {
        Ok(())
    } else {
        Err(ApiError::approval_already_answered(&answered_before))
    }
}

/// A paused run given what the client sent for every call it waits for: a function's output,
/// or the answer to an MCP call's approval request. Denied calls get the protocol's denial;
/// approved ones stay waiting and run when the run is driven (returned, to be shown).
fn resume_machine(
    mut machine: RunMachine,
    request: &ResponsesRequest,
    toolbox: ToolboxConfig,
    plan: &Plan,
    answers: &Answers,
) -> Result<(RunMachine, Vec<toolbridge_protocol::types::ToolCall>), ApiError> {
    let mut supplied = Vec::new();
    let mut running = Vec::new();
    for call in machine.pending_calls() {
        if let Some((_, output)) = request.call_outputs.iter().find(|(id, _)| *id == call.id) {
            supplied.push((
                call.id.clone(),
                CallResult {
                    status: CallStatus::Ok,
                    for_model: truncate(output, toolbox.max_output_chars),
                    full: output.clone(),
                    duration: std::time::Duration::ZERO,
                    transient: false,
                },
            ));
        } else if answers.denied.contains(&call.id) {
            supplied.push((
                call.id.clone(),
                CallResult::note(
                    CallStatus::Denied,
                    toolbridge_protocol::texts::APPROVAL_DENIED,
                ),
            ));
        } else if answers.approved.contains(&call.id) {
            running.push(call);
        } else if plan.needs_approval.contains(&call.name) {
            return Err(ApiError::bad_param(
                "input",
                format!(
                    "No approval response found for MCP approval request {APPROVAL_PREFIX}{}.",
                    call.id
                ),
            ));
        } else if plan.client_names.contains(&call.name) {
            return Err(ApiError::bad_param(
                "input",
                format!("No tool output found for function call {}.", call.id),
            ));
        } else {
            // A server call of the paused round (it would have run before the pause): run it.
            running.push(call);
        }
    }
    if !supplied.is_empty() {
        machine.supply_results(supplied, Instant::now());
    }
    Ok((machine, running))
}

/// Where a run's streaming events go (`None`: a plain response collects them only).
pub(crate) type Sink = Option<mpsc::Sender<(&'static str, Value)>>;

/// Runs a prepared response to its end (or pause), storing it at the start and at the end;
/// returns the final response object.
pub(crate) async fn execute(state: Arc<AppState>, prepared: Prepared, sink: Sink) -> Value {
    let service = Arc::clone(&state.responses);
    let Prepared {
        mut run,
        machine,
        container,
        workspace_key,
        mut record,
        store: keep,
        conversation,
        resumed,
    } = prepared;
    let store = service.store().await.ok();
    let id = record.id.clone();
    service.register(&id, run.cancel_token());
    if keep {
        if let Some(store) = &store {
            if let Err(e) = store.put_response(&record).await {
                tracing::error!(error = %e, response = %id, "responses: storing the started response failed");
            }
        }
    }
    let send = |event: StreamEvent| {
        let sink = sink.clone();
        async move {
            if let Some(sink) = &sink {
                // A client that went away: the run goes on for a background response, and is
                // cancelled by the stream's drop guard otherwise.
                let _ = sink.send(event).await;
            }
        }
    };
    if sink.is_some() {
        // Built only for a stream: each is a deep copy of the response object.
        send(("response.created", json!({"response": record.body}))).await;
        send(("response.in_progress", json!({"response": record.body}))).await;
    }

    let container_id = container.clone();
    let mut assembler = Assembler::new(run.kinds().clone(), Some(container))
        .with_approvals(run.plan.needs_approval.clone(), run.approved.clone());
    // Approved calls of a resumed run run before any model event: shown as they start.
    for call in &resumed {
        let started = RunEvent::CallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        };
        Front::push(&mut assembler, &started, run.workspace());
    }
    for e in assembler.drain() {
        send(e).await;
    }
    // A resumed run's state still counts the rounds of the response that paused it; this
    // response reports only the model requests made for it (the earlier ones were reported).
    let usage_before = machine.usage();
    let Ended {
        state: finished,
        paused,
    } = run.drive(machine, &mut assembler, sink.as_ref()).await;
    assembler.finish();
    for e in assembler.drain() {
        send(e).await;
    }
    service.unregister(&id);
    run.end_admission();

    let (status, error, incomplete) = status_of(&finished, paused.is_some());
    // The record's body becomes the final one in place (no copy; it is stored, then returned).
    let mut body = std::mem::take(&mut record.body);
    body["status"] = json!(status);
    body["error"] = error;
    body["incomplete_details"] = incomplete;
    body["output_text"] = json!(output_text(assembler.output()));
    body["output"] = Value::Array(assembler.take_output());
    let used = finished.usage.saturating_sub(usage_before);
    body["usage"] = usage(used);
    let terminal = match status {
        "completed" => "response.completed",
        "incomplete" => "response.incomplete",
        _ => "response.failed",
    };
    if sink.is_some() {
        send((terminal, json!({"response": body}))).await;
    }

    if let (Some((ws, before)), Some(store)) = (&run.workspace, &store) {
        super::staging::keep_outputs(
            store.as_ref(),
            &record.owner,
            &container_id,
            ws,
            before,
            service.max_file_bytes(),
            service.file_quota(),
        )
        .await;
    }
    let messages: Vec<&Message> = finished
        .messages
        .iter()
        .skip_while(|m| matches!(m, Message::System { .. }))
        .collect();
    record.status = status.to_owned();
    record.updated_at = toolbridge_state::now();
    record.body = body;
    record.context = json!({"workspace": workspace_key, "messages": messages});
    record.run = paused.and_then(|m| serde_json::to_value(&m).ok());
    if let Some(store) = &store {
        if keep {
            if let Err(e) = store.put_response(&record).await {
                tracing::error!(error = %e, response = %id, "responses: storing the finished response failed");
            }
        }
        if let Some(conversation) = conversation {
            save_conversation(store.as_ref(), conversation, &record, &record.body).await;
        }
    }
    record.body
}

/// The Responses API's reading of a run: the assembler, given the image an `image_generate`
/// call wrote (read from the workspace here: the assembler does no I/O).
impl Front for Assembler {
    type Out = StreamEvent;

    fn push(&mut self, event: &RunEvent, workspace: Option<&Workspace>) {
        let image = match event {
            RunEvent::CallFinished {
                name,
                output,
                status,
                ..
            } if *self.kind(name) == CallKind::Image && !status.is_error() => {
                first_image(workspace, output)
            }
            _ => None,
        };
        Assembler::push(self, event, image);
    }

    fn drain_into(&mut self, out: &mut Vec<StreamEvent>) {
        out.extend(self.drain());
    }
}

/// The status of a finished run, its `error` and its `incomplete_details`.
fn status_of(state: &RunState, paused: bool) -> (&'static str, Value, Value) {
    if paused {
        return ("completed", Value::Null, Value::Null);
    }
    match state.outcome {
        Some(Outcome::Answered | Outcome::MalformedGaveUp) if state.cut_by_token_limit => (
            "incomplete",
            Value::Null,
            json!({"reason": "max_output_tokens"}),
        ),
        Some(Outcome::Answered | Outcome::MalformedGaveUp) => {
            ("completed", Value::Null, Value::Null)
        }
        Some(Outcome::ToolBudgetExceeded) => (
            "incomplete",
            Value::Null,
            json!({"reason": "max_tool_calls"}),
        ),
        Some(Outcome::ToolNoProgress) => {
            ("incomplete", Value::Null, json!({"reason": "no_progress"}))
        }
        Some(Outcome::Cancelled) => ("cancelled", Value::Null, Value::Null),
        // A hosted tool had no capacity (every interpreter this server allows was busy).
        Some(Outcome::Overloaded) => ("incomplete", Value::Null, json!({"reason": "server_busy"})),
        Some(Outcome::Error) | None => {
            if let Some(detail) = &state.error {
                tracing::error!(error = %detail, "responses: the run failed");
            }
            (
                "failed",
                json!({"code": "server_error", "message": "The model request failed. The server log has the details."}),
                Value::Null,
            )
        }
    }
}

/// The usage object of a response.
fn usage(u: Usage) -> Value {
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.total_tokens,
    })
}

/// The first image an `image_generate` call wrote, as base64: its output names the files one
/// per line as the sandbox sees them (`/workspace/outputs/…`); read without following links.
fn first_image(workspace: Option<&Workspace>, output: &str) -> Option<String> {
    let workspace = workspace?;
    let relative = output.lines().find_map(|line| {
        let rel = line.trim().strip_prefix("/workspace/outputs/")?;
        [".png", ".jpg", ".jpeg", ".webp"]
            .iter()
            .any(|ext| rel.ends_with(ext))
            .then_some(rel)
    })?;
    let bytes = workspace.read_output(relative, 32 << 20).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Appends the response's input and output to its conversation (once more on a conflict with
/// another writer).
async fn save_conversation(
    store: &dyn toolbridge_state::Store,
    mut conversation: toolbridge_state::ConversationRecord,
    record: &ResponseRecord,
    body: &Value,
) {
    for attempt in 0..3 {
        let mut items = conversation.items.as_array().cloned().unwrap_or_default();
        items.extend(record.input_items.as_array().cloned().unwrap_or_default());
        items.extend(body["output"].as_array().cloned().unwrap_or_default());
        let mut next = conversation.clone();
        next.items = Value::Array(items);
        next.context = record.context.clone();
        next.updated_at = toolbridge_state::now();
        let version = conversation.version;
        match store.put_conversation(next, Some(version)).await {
            Ok(_) => return,
            Err(toolbridge_state::StoreError::Conflict(_)) if attempt < 2 => {
                match store
                    .get_conversation(&conversation.owner, &conversation.id)
                    .await
                {
                    Ok(Some(fresh)) => conversation = fresh,
                    _ => return,
                }
            }
            Err(e) => {
                tracing::error!(error = %e, conversation = %conversation.id, "responses: the conversation could not be updated");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{memory_user, status_of};
    use serde_json::json;
    use toolbridge_agent::{Outcome, RunState};

    /// Issue 34, item 2: a run stopped because every interpreter was busy is `incomplete`, with
    /// the reason a client can act on.
    #[test]
    fn a_run_stopped_for_capacity_is_incomplete_with_server_busy() {
        let state = RunState {
            outcome: Some(Outcome::Overloaded),
            ..RunState::default()
        };
        let (status, error, details) = status_of(&state, false);
        assert_eq!(status, "incomplete");
        assert!(error.is_null());
        assert_eq!(details, json!({"reason": "server_busy"}));
    }

    #[test]
    fn a_requests_user_is_scoped_within_the_keys_user() {
        assert_eq!(memory_user("key_ab", None), "key_ab");
        assert_eq!(memory_user("key_ab", Some("  ")), "key_ab");
        assert_eq!(memory_user("key_ab", Some("alice")), "key_ab/alice");
        // Naming another key's user reaches only a sub-user of one's own.
        assert_eq!(memory_user("key_ab", Some("key_cd")), "key_ab/key_cd");
    }
}
