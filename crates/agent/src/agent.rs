//! The bounded tool loop (seeds 000, 002, 004; DESIGN.md §4).
//!
//! Each round sends the conversation and the tools to the model, runs the calls it makes and feeds
//! the results back, until the model answers. Budgets bound the rounds, the calls and the wall time;
//! a call identical to an earlier one is not run again; malformed calls get the seed's retry message
//! at most twice; when the budget runs out, or a round brings only repeats, one tool-free
//! finalization round asks for the best answer from what is known. Every call gets exactly one
//! result, in order, whatever happens.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::parser::{ErrorKind, ParseError, ParserConfig};
use toolbridge_protocol::texts::{self, CallTag};
use toolbridge_protocol::types::{ChatRequest, Message, ToolSpec, Usage};
use toolbridge_providers::{Model, ModelEvent, ModelResponse, ModelStream};

use crate::approval::{Approvals, Approver, DenyAll};
use crate::canonical::call_key;
use crate::events::{FinalizationReason, Outcome, RunEvent};
use crate::skills::{SkillSet, SkillTool, DEFAULT_SKILL_TOOL};
use crate::tool::ToolContext;
use crate::toolbox::{CallResult, CallStatus, Toolbox};

/// The loop's limits and options.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    /// Model requests with tools (seed 002: 12).
    pub max_rounds: usize,
    /// Tool calls run in one run.
    pub max_tool_calls: usize,
    /// Wall time of the whole run.
    pub max_duration: Duration,
    /// Native-mode calls of one round run concurrently up to this many.
    pub parallel_calls: usize,
    /// Retries after malformed calls, per turn (seed 000: twice).
    pub max_malformed_retries: usize,
    /// The system prompt (default: `texts::DEFAULT_SYSTEM_PROMPT`).
    pub system_prompt: Option<String>,
    /// The skill tool's name; `None` gives the model the skill bodies inline instead.
    pub skill_tool: Option<String>,
    pub approvals: Approvals,
    /// What the run's user asked to be remembered (ACTIVE memories, one per entry): given to the
    /// model as a system message of its own after the system prompt and the skill listing
    /// (`texts::memory_block`). Empty: no message.
    pub memories: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_rounds: 12,
            max_tool_calls: 50,
            max_duration: Duration::from_secs(15 * 60),
            parallel_calls: 4,
            max_malformed_retries: 2,
            system_prompt: None,
            skill_tool: Some(DEFAULT_SKILL_TOOL.to_owned()),
            approvals: Approvals::default(),
            memories: Vec::new(),
        }
    }
}

/// Problems found when an agent is put together (before any request is sent).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Skills(#[from] crate::skills::SkillError),
    #[error(transparent)]
    Toolbox(#[from] crate::toolbox::ToolboxError),
}

/// An agent: a model, tools, skills and limits.
pub struct Agent {
    model: Model,
    toolbox: Arc<Toolbox>,
    skills: Arc<SkillSet>,
    config: AgentConfig,
    approver: Arc<dyn Approver>,
}

impl Agent {
    /// Checks the skills against the tools: duplicate or empty skill names, or a tool already
    /// carrying the skill tool's name, are refused here.
    pub fn new(
        model: Model,
        toolbox: Toolbox,
        skills: SkillSet,
        config: AgentConfig,
    ) -> Result<Self, AgentError> {
        // Dynamic tools present now are checked too; later ones cannot take the skill tool's
        // name from it (the skill tool is looked up first).
        let current = toolbox.resolve();
        if let Some(tool) = &config.skill_tool {
            skills.validate(&current.names(), tool)?;
        } else {
            skills.validate(&current.names(), "")?;
        }
        Ok(Agent {
            model,
            toolbox: Arc::new(toolbox),
            skills: Arc::new(skills),
            config,
            approver: Arc::new(DenyAll),
        })
    }

    /// Who answers approval questions (default: nobody — calls that need approval are denied).
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn skills(&self) -> &SkillSet {
        &self.skills
    }

    /// The tools a run offers, in the order the model sees them (the skill tool last).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut specs = self.toolbox.resolve().specs();
        if let (Some(name), false) = (&self.config.skill_tool, self.skills.is_empty()) {
            specs.push(
                crate::tool::Tool::spec(&SkillTool::new(name, Arc::clone(&self.skills))).clone(),
            );
        }
        specs
    }

    /// Starts a run over a conversation (the user's latest message last).
    pub fn run(&self, conversation: Vec<Message>, context: ToolContext) -> Run {
        let state = Arc::new(Mutex::new(RunState::default()));
        let inner = run_loop(self.snapshot(), conversation, context, Arc::clone(&state));
        Run {
            inner: Box::pin(inner),
            state,
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            model: self.model.clone(),
            toolbox: Arc::clone(&self.toolbox),
            skills: Arc::clone(&self.skills),
            config: self.config.clone(),
            approver: Arc::clone(&self.approver),
        }
    }
}

/// What a run needs, owned (the stream outlives the borrow of the agent).
struct Snapshot {
    model: Model,
    toolbox: Arc<Toolbox>,
    skills: Arc<SkillSet>,
    config: AgentConfig,
    approver: Arc<dyn Approver>,
}

impl Snapshot {
    /// The tools as they are now, with the dynamic sources' version read before their lists (a
    /// change in between only causes one more rebuild, never a missed one).
    fn current_tools(&self) -> (u64, Arc<RunTools>) {
        let version = self.toolbox.dynamic_version();
        let main = if self.toolbox.has_dynamic() {
            Arc::new(self.toolbox.resolve())
        } else {
            Arc::clone(&self.toolbox)
        };
        (version, Arc::new(RunTools::new(self, main)))
    }
}

/// The conversation and record a run leaves behind.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunState {
    /// The conversation as the model saw it (tool outputs truncated), to continue a chat.
    pub messages: Vec<Message>,
    /// The same with every tool output complete.
    pub transcript: Vec<Message>,
    pub usage: Usage,
    pub rounds: usize,
    pub tool_calls: usize,
    pub outcome: Option<Outcome>,
    pub answer: String,
    pub error: Option<String>,
}

/// A run in progress: a stream of [`RunEvent`]s ending with [`RunEvent::Outcome`].
pub struct Run {
    inner: Pin<Box<dyn Stream<Item = RunEvent> + Send>>,
    state: Arc<Mutex<RunState>>,
}

impl Stream for Run {
    type Item = RunEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Run {
    /// Drives the run to its end and returns what it left.
    pub async fn finish(mut self) -> RunState {
        while self.inner.next().await.is_some() {}
        self.state()
    }

    /// The state so far (complete once the stream has ended).
    pub fn state(&self) -> RunState {
        self.state.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The tools of one run: the agent's toolbox plus this run's skill tool.
struct RunTools {
    main: Arc<Toolbox>,
    skill: Option<(String, Toolbox)>,
    specs: Vec<ToolSpec>,
}

impl RunTools {
    fn new(snapshot: &Snapshot, main: Arc<Toolbox>) -> Self {
        let mut specs = main.specs();
        let skill = match (&snapshot.config.skill_tool, snapshot.skills.is_empty()) {
            (Some(name), false) => {
                let mut tb = Toolbox::new(snapshot.toolbox.config());
                let tool = SkillTool::new(name, Arc::clone(&snapshot.skills));
                specs.push(crate::tool::Tool::spec(&tool).clone());
                // The schema is the seed's and compiles; a failure would only drop the skill tool.
                match tb.add(Arc::new(tool)) {
                    Ok(()) => Some((name.clone(), tb)),
                    Err(e) => {
                        tracing::error!(error = %e, "skill tool not available");
                        specs.pop();
                        None
                    }
                }
            }
            _ => None,
        };
        RunTools { main, skill, specs }
    }

    fn toolbox_for(&self, name: &str) -> &Toolbox {
        match &self.skill {
            Some((skill_name, tb)) if skill_name == name => tb,
            _ => &self.main,
        }
    }
}

/// The system messages of a run: the system prompt, then the skill listing (or the bodies inline
/// for a model without the skill tool), then the user's memories. The listing is a message of its own after the prompt, so
/// in prompt mode the tools (appended to the first system message) come before it.
async fn system_messages(snapshot: &Snapshot) -> Vec<Message> {
    let prompt = snapshot
        .config
        .system_prompt
        .as_deref()
        .unwrap_or(texts::DEFAULT_SYSTEM_PROMPT);
    let mut out = vec![Message::system(prompt)];
    if !snapshot.skills.is_empty() {
        match &snapshot.config.skill_tool {
            Some(tool) => out.push(Message::system(snapshot.skills.listing(tool))),
            None => out.push(Message::system(snapshot.skills.inline_bodies().await)),
        }
    }
    if let Some(block) = texts::memory_block(&snapshot.config.memories) {
        out.push(Message::system(block));
    }
    out
}

/// How one model request ended.
enum RoundEnd {
    Done {
        response: ModelResponse,
        mode: ToolMode,
    },
    Cancelled,
    Failed(String),
}

/// What one model request gives the run: its text as events, then how it ended.
enum RoundItem {
    Event(RunEvent),
    End(RoundEnd),
}

/// Streams one model response: text and reasoning as run events while collecting the response;
/// the last item says how it ended (cancellation is watched throughout).
fn model_round(
    mut stream: ModelStream,
    cancel: CancellationToken,
) -> impl Stream<Item = RoundItem> + Send {
    async_stream::stream! {
        let mut response = ModelResponse::default();
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                () = cancel.cancelled() => {
                    yield RoundItem::End(RoundEnd::Cancelled);
                    return;
                }
            };
            match next {
                None => break,
                Some(Err(e)) => {
                    tracing::error!(error = %e, "model request failed");
                    yield RoundItem::End(RoundEnd::Failed(e.to_string()));
                    return;
                }
                Some(Ok(event)) => {
                    match &event {
                        ModelEvent::Text { text } => yield RoundItem::Event(RunEvent::Text { text: text.clone() }),
                        ModelEvent::Reasoning { text } => yield RoundItem::Event(RunEvent::Reasoning { text: text.clone() }),
                        _ => {}
                    }
                    response.apply(event);
                }
            }
        }
        let mode = stream.arm().map_or(ToolMode::Native, |a| a.mode);
        yield RoundItem::End(RoundEnd::Done { response, mode });
    }
}

fn run_loop(
    snapshot: Snapshot,
    conversation: Vec<Message>,
    context: ToolContext,
    state: Arc<Mutex<RunState>>,
) -> impl Stream<Item = RunEvent> + Send {
    async_stream::stream! {
        let started = Instant::now();
        let config = snapshot.config.clone();
        let (mut tools_version, mut tools) = snapshot.current_tools();
        let cancel = context.cancel.clone();
        let mut messages = Vec::new();
        if !matches!(conversation.first(), Some(Message::System { .. })) {
            messages.extend(system_messages(&snapshot).await);
        }
        messages.extend(conversation);
        let mut transcript = messages.clone();
        let mut executed: HashSet<String> = HashSet::new();
        let mut usage = Usage::default();
        let mut rounds = 0usize;
        let mut calls_used = 0usize;
        let mut retries = 0usize;
        let mut outcome = Outcome::Answered;
        let mut answer = String::new();
        let mut error = None;
        let mut finalize = None;

        'run: loop {
            if cancel.is_cancelled() {
                outcome = Outcome::Cancelled;
                break;
            }
            if rounds >= config.max_rounds
                || calls_used >= config.max_tool_calls
                || started.elapsed() >= config.max_duration
            {
                finalize = Some(FinalizationReason::Budget);
                break;
            }
            rounds += 1;
            // Dynamic tools (MCP list_changed) are picked up between rounds, and only when their
            // version moved, so the tool array stays byte-identical otherwise.
            if snapshot.toolbox.has_dynamic() && snapshot.toolbox.dynamic_version() != tools_version {
                (tools_version, tools) = snapshot.current_tools();
            }
            yield RunEvent::RoundStarted { round: rounds };
            let request = ChatRequest {
                model: snapshot.model.name.clone(),
                messages: messages.clone(),
                tools: tools.specs.clone(),
                ..ChatRequest::default()
            };
            let mut round = Box::pin(model_round(snapshot.model.stream(request), cancel.clone()));
            let mut end = RoundEnd::Cancelled;
            while let Some(item) = round.next().await {
                match item {
                    RoundItem::Event(event) => yield event,
                    RoundItem::End(e) => end = e,
                }
            }
            let (response, mode) = match end {
                RoundEnd::Done { response, mode } => (response, mode),
                RoundEnd::Cancelled => {
                    outcome = Outcome::Cancelled;
                    break 'run;
                }
                RoundEnd::Failed(e) => {
                    outcome = Outcome::Error;
                    error = Some(e);
                    break 'run;
                }
            };
            add_usage(&mut usage, response.usage);

            if response.calls.is_empty() {
                if let Some(problem) = response.errors.first() {
                    if retries < config.max_malformed_retries {
                        retries += 1;
                        let reason = retry_reason(problem);
                        yield RunEvent::Retry { attempt: retries, reason: reason.clone() };
                        let retry = Message::user(texts::retry_message(&reason, CallTag::default()));
                        for list in [&mut messages, &mut transcript] {
                            list.push(Message::assistant(response.text.clone()));
                            list.push(retry.clone());
                        }
                        continue;
                    }
                    outcome = Outcome::MalformedGaveUp;
                    answer = visible_prefix(&response.text, problem);
                    let final_message = Message::assistant(response.text.clone());
                    messages.push(final_message.clone());
                    transcript.push(final_message);
                    break;
                }
                answer = response.text.clone();
                let final_message = Message::assistant(response.text);
                messages.push(final_message.clone());
                transcript.push(final_message);
                break;
            }

            let mut calls = response.calls;
            if mode != ToolMode::Native && calls.len() > 1 {
                // Prompt mode is one call per round: what follows the first call was written
                // without its result (the stop sequence would have ended the reply there).
                tracing::debug!(dropped = calls.len() - 1, "prompt mode: extra calls in one reply dropped");
                calls.truncate(1);
            }
            let text = (!response.text.is_empty()).then_some(response.text);
            let assistant = Message::assistant_calls(text, calls.clone());
            messages.push(assistant.clone());
            transcript.push(assistant);

            // SECURITY.md §3: any tool result the model has seen (this run's or an earlier
            // turn's) may carry an injected instruction; guarded tools are tightened from then on.
            let after_tool_output = messages.iter().any(|m| matches!(m, Message::Tool { .. }));

            // Decide what each call gets before running anything, in order.
            let mut plan: Vec<Option<CallResult>> = Vec::with_capacity(calls.len());
            let mut budget_hit = false;
            let mut fresh = 0usize;
            let mut seen_this_round: HashSet<String> = HashSet::new();
            for call in &calls {
                let key = call_key(&call.name, &call.arguments);
                if executed.contains(&key) || seen_this_round.contains(&key) {
                    plan.push(Some(CallResult::note(CallStatus::Duplicate, texts::TOOL_OUTPUT_DUPLICATE_SKIPPED)));
                } else if calls_used >= config.max_tool_calls || started.elapsed() >= config.max_duration {
                    budget_hit = true;
                    plan.push(Some(CallResult::note(CallStatus::BudgetExhausted, texts::TOOL_OUTPUT_BUDGET_EXHAUSTED)));
                } else {
                    calls_used += 1;
                    fresh += 1;
                    seen_this_round.insert(key);
                    plan.push(None);
                }
            }
            for call in &calls {
                yield RunEvent::CallStarted { id: call.id.clone(), name: call.name.clone(), arguments: call.arguments.clone() };
            }
            let remaining = config.max_duration.saturating_sub(started.elapsed());
            let parallel = if mode == ToolMode::Native { config.parallel_calls.max(1) } else { 1 };
            // Each job owns what it needs, so the jobs can run concurrently.
            let jobs: Vec<BoxFuture<'static, CallResult>> = calls
                .iter()
                .cloned()
                .zip(plan)
                .map(|(call, planned)| {
                    let tools = Arc::clone(&tools);
                    let context = context.clone();
                    let approvals = config.approvals.clone();
                    let approver = Arc::clone(&snapshot.approver);
                    let job: BoxFuture<'static, CallResult> = Box::pin(async move {
                        match planned {
                            Some(result) => result,
                            None => {
                                let toolbox = tools.toolbox_for(&call.name);
                                let timeout = toolbox.config().timeout.min(remaining.max(Duration::from_millis(1)));
                                toolbox.execute_after(&call, &context, &approvals, &*approver, timeout, after_tool_output).await
                            }
                        }
                    });
                    job
                })
                .collect();
            let results: Vec<CallResult> = futures::stream::iter(jobs).buffered(parallel).collect().await;
            for (call, result) in calls.iter().zip(&results) {
                if result.status != CallStatus::Duplicate && result.status != CallStatus::BudgetExhausted {
                    executed.insert(call_key(&call.name, &call.arguments));
                }
                yield RunEvent::CallFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    status: result.status,
                    duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
                    preview: result.for_model.chars().take(200).collect(),
                    output_chars: result.full.chars().count(),
                };
                let is_error = result.status.is_error();
                messages.push(Message::tool_result(&call.id, result.for_model.clone(), is_error));
                transcript.push(Message::tool_result(&call.id, result.full.clone(), is_error));
            }
            if results.iter().any(|r| r.status == CallStatus::Cancelled) || cancel.is_cancelled() {
                outcome = Outcome::Cancelled;
                break;
            }
            if budget_hit {
                finalize = Some(FinalizationReason::Budget);
                break;
            }
            if fresh == 0 {
                finalize = Some(FinalizationReason::NoProgress);
                break;
            }
        }

        if let Some(reason) = finalize {
            yield RunEvent::Finalization { reason };
            let note = match reason {
                FinalizationReason::Budget => texts::FINALIZE_BUDGET,
                FinalizationReason::NoProgress => texts::FINALIZE_NO_PROGRESS,
            };
            messages.push(Message::user(note));
            transcript.push(Message::user(note));
            // The tool declaration is removed for this round.
            let request = ChatRequest {
                model: snapshot.model.name.clone(),
                messages: messages.clone(),
                ..ChatRequest::default()
            };
            let mut round = Box::pin(model_round(snapshot.model.stream(request), cancel.clone()));
            let mut end = RoundEnd::Cancelled;
            while let Some(item) = round.next().await {
                match item {
                    RoundItem::Event(event) => yield event,
                    RoundItem::End(e) => end = e,
                }
            }
            match end {
                RoundEnd::Cancelled => outcome = Outcome::Cancelled,
                RoundEnd::Failed(e) => {
                    outcome = Outcome::Error;
                    error = Some(e);
                }
                RoundEnd::Done { response, .. } => {
                    add_usage(&mut usage, response.usage);
                    // Without tools a text-mode model's call is not parsed; look for one anyway.
                    let leftover = toolbridge_protocol::parser::parse(&response.text, &ParserConfig::default());
                    let still_calling = !response.calls.is_empty() || !leftover.calls.is_empty();
                    answer = leftover.visible.trim().to_owned();
                    outcome = if still_calling || answer.is_empty() {
                        match reason {
                            FinalizationReason::Budget => Outcome::ToolBudgetExceeded,
                            FinalizationReason::NoProgress => Outcome::ToolNoProgress,
                        }
                    } else {
                        answer = response.text.clone();
                        Outcome::Answered
                    };
                    let final_message = Message::assistant(response.text);
                    messages.push(final_message.clone());
                    transcript.push(final_message);
                }
            }
        }

        if let Ok(mut s) = state.lock() {
            *s = RunState {
                messages,
                transcript,
                usage,
                rounds,
                tool_calls: calls_used,
                outcome: Some(outcome),
                answer: answer.clone(),
                error: error.clone(),
            };
        }
        yield RunEvent::Outcome { outcome, answer, error };
    }
}

fn add_usage(total: &mut Usage, usage: Option<Usage>) {
    if let Some(u) = usage {
        total.prompt_tokens += u.prompt_tokens;
        total.completion_tokens += u.completion_tokens;
        total.total_tokens += u.total_tokens;
    }
}

/// The parse error as the retry message states it.
fn retry_reason(problem: &ParseError) -> String {
    match problem.kind {
        ErrorKind::Truncated => "the response ended before the call was complete".to_owned(),
        ErrorKind::Malformed => problem.reason.clone(),
    }
}

/// The visible text before a malformed call: the answer when the model gave up on calling.
fn visible_prefix(text: &str, problem: &ParseError) -> String {
    let Some(at) = text.find(problem.raw.as_str()) else {
        return text.trim_end().to_owned();
    };
    let mut prefix = text[..at].trim_end();
    for tag in ["<tool_call>", "<tool_use>", "```json", "```"] {
        if let Some(p) = prefix.strip_suffix(tag) {
            prefix = p.trim_end();
            break;
        }
    }
    prefix.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_visible_prefix_stops_before_the_broken_call() {
        let problem = ParseError {
            kind: ErrorKind::Malformed,
            raw: "{\"name\": \"f\",}".into(),
            reason: "x".into(),
        };
        assert_eq!(
            visible_prefix(
                "Let me check.\n<tool_call>{\"name\": \"f\",}</tool_call>",
                &problem
            ),
            "Let me check."
        );
        assert_eq!(visible_prefix("no call here", &problem), "no call here");
    }
}
