//! The tool loop as a sans-IO state machine (ARCHITECTURE.md, `agent`, in the manner of
//! `quinn-proto`'s `Connection`): model events, tool results and the current time go in; actions
//! (ask the model this, run these calls, done) and run events come out. It reads no clock, runs no
//! tool and sends no request; [`super::driver`] does that. Its whole state is plain data that
//! serializes, so a run paused while its calls are out (a client executing its own function tools,
//! say) can be stored, dropped, and finished later — in another process.
//!
//! # Methods by category
//! - Constructor: [`RunMachine::new`].
//! - Getters: [`RunMachine::state`], [`RunMachine::is_done`], [`RunMachine::pending_calls`].
//! - Inputs (`handle_*`): [`handle_model_event`](RunMachine::handle_model_event) for each event
//!   of the response in flight, then exactly one of
//!   [`handle_model_end`](RunMachine::handle_model_end) /
//!   [`handle_model_error`](RunMachine::handle_model_error); after a
//!   [`Action::RunTools`], [`handle_tool_results`](RunMachine::handle_tool_results) with one
//!   result per call, in order; [`handle_cancel`](RunMachine::handle_cancel) at any time.
//! - Mutators: [`set_tools`](RunMachine::set_tools) (the tool list of the next model request;
//!   tools are configuration, not state, so a resumed run is given them again).
//! - Outputs (`poll_*`): [`poll_event`](RunMachine::poll_event), then
//!   [`poll_action`](RunMachine::poll_action).
//!
//! # Polling order
//! After every input: drain `poll_event` until it returns `None` (the events are the run's
//! report, in order), then take one `poll_action`. An action is handed out once; the machine
//! then waits for the input that answers it. `Action::Done` is the last action.
//!
//! # Time
//! Every input that can take time carries `now`. The machine adds up the time between inputs as
//! the run's wall time; the clock reading itself is not serialized, so the time a stored run
//! spends paused does not count against its `max_duration`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::retry::{Attempt, RetryPolicy, Verdict};
use toolbridge_protocol::texts::{self, CallFormat};
use toolbridge_protocol::types::{ChatRequest, Message, ToolCall, ToolChoice, ToolSpec, Usage};
use toolbridge_protocol::visible::VisiblePrefix;
use toolbridge_protocol::{ModelEvent, ModelResponse};

use crate::dedupe::CallLedger;
use crate::events::{FinalizationReason, Outcome, RunEvent};
use crate::toolbox::{CallResult, CallStatus};

use super::free_text::FreeText;
use super::io::{Action, Limits, RequestOptions, ToolJobs};

use super::state::RunState;

/// Where the run is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    /// The next action asks the model (a tool round, or the finalization round).
    Ask {
        finalization: Option<FinalizationReason>,
    },
    /// A model request is out.
    AwaitModel {
        finalization: Option<FinalizationReason>,
    },
    /// A round's fresh calls are out.
    AwaitTools(Box<Round>),
    /// The run is over.
    Done,
}

/// The calls of one round: what each gets, decided before anything runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Round {
    calls: Vec<ToolCall>,
    /// `Some` for a call answered without running it (a repeat, or over the budget).
    planned: Vec<Option<CallResult>>,
    budget_hit: bool,
    parallel: usize,
    after_tool_output: bool,
    /// Results supplied before the round completes ([`RunMachine::supply_results`]): the
    /// server's own calls of a round that waits for a client's. Empty, or one slot per call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    supplied: Vec<Option<CallResult>>,
}

impl Round {
    /// The calls still waiting for a result: neither planned nor supplied.
    fn fresh(&self) -> impl Iterator<Item = &ToolCall> {
        self.calls
            .iter()
            .enumerate()
            .filter(|(i, _)| self.planned[*i].is_none() && !self.is_supplied(*i))
            .map(|(_, c)| c)
    }

    fn is_supplied(&self, i: usize) -> bool {
        self.supplied.get(i).is_some_and(Option::is_some)
    }
}

/// The tool loop's state. See the module documentation for the protocol.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunMachine {
    limits: Limits,
    /// The model name requests carry.
    model: String,
    /// The conversation as the model saw it (tool outputs truncated).
    messages: Vec<Message>,
    /// The same with every tool output complete.
    transcript: Vec<Message>,
    usage: Usage,
    rounds: usize,
    calls_used: usize,
    retries: RetryPolicy,
    /// Which calls are repeats (a transient failure is forgotten, so its repeat runs again).
    ledger: CallLedger,
    #[serde(with = "super::io::millis")]
    spent: Duration,
    phase: Phase,
    outcome: Option<Outcome>,
    answer: String,
    error: Option<String>,
    /// The answer ended at the token limit.
    #[serde(default)]
    cut: bool,
    #[serde(default)]
    options: RequestOptions,
    /// The call format of the arm that answered the last round: the finalization round (sent
    /// without tools, before it is known which arm answers) reads its text in it.
    #[serde(default)]
    last_dialect: toolbridge_protocol::parser::Dialect,
    /// The tool choice of the next model request only (a front door's `tool_choice` applies to
    /// the first request it causes: forcing every round would loop until the budget ran out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_tool_choice: Option<ToolChoice>,
    events: VecDeque<RunEvent>,
    /// The response in flight (a stored run never has one: its request is sent again).
    #[serde(skip)]
    response: ModelResponse,
    /// What the user was shown of the response in flight (its visible prefix).
    #[serde(skip)]
    shown: VisiblePrefix,
    /// The finalization round's raw text, parsed here (it was sent without tools).
    #[serde(skip)]
    free: FreeText,
    /// The tools of the next request (configuration: given again after a resume).
    #[serde(skip)]
    tools: Vec<ToolSpec>,
    /// The clock reading of the last input.
    #[serde(skip)]
    last: Option<Instant>,
    /// Whether the action of the current phase was handed out by this process. Not serialized:
    /// what was out dies with the process, so a restored machine hands its request (or its
    /// calls, unless their results are given first) out again.
    #[serde(skip)]
    out: bool,
}

impl RunMachine {
    /// A run over `messages` (the system messages first, the user's latest message last).
    pub fn new(
        limits: Limits,
        model: impl Into<String>,
        messages: Vec<Message>,
        now: Instant,
    ) -> Self {
        let max_retries = limits.max_malformed_retries;
        RunMachine {
            limits,
            model: model.into(),
            transcript: messages.clone(),
            messages,
            usage: Usage::default(),
            rounds: 0,
            calls_used: 0,
            retries: RetryPolicy::new(max_retries),
            ledger: CallLedger::default(),
            spent: Duration::ZERO,
            phase: Phase::Ask { finalization: None },
            outcome: None,
            answer: String::new(),
            error: None,
            cut: false,
            options: RequestOptions::default(),
            next_tool_choice: None,
            last_dialect: Default::default(),
            events: VecDeque::new(),
            response: ModelResponse::default(),
            shown: VisiblePrefix::default(),
            free: FreeText::default(),
            tools: Vec::new(),
            last: Some(now),
            out: false,
        }
    }

    // ---- getters ----

    /// What the run has left so far (complete once it is done).
    pub fn state(&self) -> RunState {
        RunState {
            messages: self.messages.clone(),
            transcript: self.transcript.clone(),
            usage: self.usage,
            rounds: self.rounds,
            tool_calls: self.calls_used,
            outcome: self.outcome,
            answer: self.answer.clone(),
            error: self.error.clone(),
            cut_by_token_limit: self.cut,
        }
    }

    /// The tokens the run's model requests have used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The conversation as the model sees it so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// The calls waiting for their results (empty unless the run is at a `RunTools`).
    pub fn pending_calls(&self) -> Vec<ToolCall> {
        match &self.phase {
            Phase::AwaitTools(round) => round.fresh().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The calls waiting for their results as jobs (what `poll_action` hands out), without
    /// handing them out: a driver that runs some of them itself and supplies their results.
    pub fn waiting_jobs(&self) -> Option<ToolJobs> {
        match &self.phase {
            Phase::AwaitTools(round) => Some(ToolJobs {
                calls: round.fresh().cloned().collect(),
                parallel: round.parallel,
                remaining: self.limits.max_duration.saturating_sub(self.spent),
                after_tool_output: round.after_tool_output,
            }),
            _ => None,
        }
    }

    // ---- mutators ----

    /// What every model request carries besides messages and tools (kept with the run).
    pub fn set_options(&mut self, options: RequestOptions) {
        self.options = options;
    }

    /// Forces (`Required`, `Named`) or forbids (`None`) tool calls in the next model request
    /// only; later rounds are `auto` again. Not applied to a finalization round (it has no tools).
    pub fn set_next_tool_choice(&mut self, choice: Option<ToolChoice>) {
        self.next_tool_choice = choice;
    }

    /// The tools offered by the next model request.
    pub fn set_tools(&mut self, tools: Vec<ToolSpec>) {
        self.tools = tools;
    }

    // ---- inputs ----

    /// One event of the response in flight: its text and reasoning are reported as they come.
    pub fn handle_model_event(&mut self, event: ModelEvent) {
        if !self.awaiting_model() {
            return;
        }
        // The user is shown the visible prefix only: call markup never reaches them.
        match &event {
            ModelEvent::Reasoning { text } => self
                .events
                .push_back(RunEvent::Reasoning { text: text.clone() }),
            ModelEvent::Text { text } if self.free.is_parsing() => {
                let shown = self.free.push(text);
                self.report(shown);
            }
            other => {
                if let Some(text) = self.shown.shown(other) {
                    self.events.push_back(RunEvent::Text {
                        text: text.to_owned(),
                    });
                }
            }
        }
        self.response.apply(event);
    }

    /// The response in flight ended normally; `mode` and `format` (its call format; a
    /// [`CallTag`](toolbridge_protocol::texts::CallTag) is hermes with that tag) are those of
    /// the arm that answered.
    pub fn handle_model_end(
        &mut self,
        mode: ToolMode,
        format: impl Into<CallFormat>,
        now: Instant,
    ) {
        let format = format.into();
        self.tick(now);
        self.last_dialect = format.dialect;
        let (Phase::AwaitModel { finalization }, true) = (&self.phase, self.out) else {
            return;
        };
        let finalization = *finalization;
        self.out = false;
        // The forced choice was for this request.
        self.next_tool_choice = None;
        let response = std::mem::take(&mut self.response);
        self.shown = VisiblePrefix::default();
        if let Some(u) = response.usage {
            self.usage += u;
        }
        match finalization {
            Some(reason) => {
                let mut free = std::mem::take(&mut self.free);
                let rest = free.finish();
                self.report(rest);
                self.finalized(reason, response, free.answer(), free.called())
            }
            None => self.answered_round(response, mode, format),
        }
    }

    /// The model request failed (the detail is the operator's; the run ends `error`).
    pub fn handle_model_error(&mut self, error: String, now: Instant) {
        self.tick(now);
        if !self.awaiting_model() {
            return;
        }
        self.response = ModelResponse::default();
        self.shown = VisiblePrefix::default();
        self.free = FreeText::default();
        self.error = Some(error);
        self.finish(Outcome::Error);
    }

    /// The results of the calls of the last `RunTools` (or of [`pending_calls`](Self::pending_calls)
    /// of a restored run), one per call, in order. Missing results (a driver that lost some) are
    /// answered with the sanitized internal failure.
    pub fn handle_tool_results(&mut self, results: Vec<CallResult>, now: Instant) {
        self.tick(now);
        self.complete_round(results);
    }

    /// Results for some of the calls waiting, by call id (the rest stay pending): a driver that
    /// runs the server's calls of a round while a client runs its own. Each is reported at once;
    /// when no call is left waiting the round completes. Returns the ids that matched no
    /// waiting call (they are ignored).
    pub fn supply_results(
        &mut self,
        results: Vec<(String, CallResult)>,
        now: Instant,
    ) -> Vec<String> {
        self.tick(now);
        let Phase::AwaitTools(round) = &mut self.phase else {
            return results.into_iter().map(|(id, _)| id).collect();
        };
        if round.supplied.is_empty() {
            round.supplied = vec![None; round.calls.len()];
        }
        let mut unmatched = Vec::new();
        for (id, result) in results {
            let slot = round.calls.iter().enumerate().position(|(i, c)| {
                c.id == id && round.planned[i].is_none() && round.supplied[i].is_none()
            });
            let Some(i) = slot else {
                unmatched.push(id);
                continue;
            };
            let call = &round.calls[i];
            self.events.push_back(finished_event(call, &result));
            round.supplied[i] = Some(result);
        }
        if round.fresh().next().is_none() {
            self.out = false;
            self.complete_round(Vec::new());
        } else {
            // What was out (the whole round) is no longer: the rest is handed out again.
            self.out = false;
        }
        unmatched
    }

    /// Answers every call of the round out: the planned notes, then `results` for the fresh ones.
    fn complete_round(&mut self, results: Vec<CallResult>) {
        let Phase::AwaitTools(round) = &mut self.phase else {
            return;
        };
        let round = std::mem::replace(round, Box::new(empty_round()));
        self.out = false;
        let mut fresh = results.into_iter();
        let mut ran = 0usize;
        let mut cancelled = false;
        let mut overloaded = false;
        let mut supplied = round.supplied.into_iter();
        for (call, planned) in round.calls.iter().zip(round.planned) {
            let already = supplied.next().flatten();
            let reported = already.is_some();
            let result = match (planned, already) {
                (Some(result), _) => result,
                (None, Some(result)) => {
                    ran += 1;
                    result
                }
                (None, None) => {
                    ran += 1;
                    fresh.next().unwrap_or_else(|| {
                        tracing::error!(call = %call.name, "the driver returned no result for a call");
                        CallResult {
                            transient: true,
                            ..CallResult::note(CallStatus::Failed, texts::ERROR_FAILED)
                        }
                    })
                }
            };
            self.ledger.record(&call.name, &call.arguments, &result);
            cancelled |= result.status == CallStatus::Cancelled;
            overloaded |= result.status == CallStatus::Overloaded;
            if !reported {
                self.events.push_back(finished_event(call, &result));
            }
            let is_error = result.status.is_error();
            self.messages
                .push(Message::tool_result(&call.id, result.for_model, is_error));
            self.transcript
                .push(Message::tool_result(&call.id, result.full, is_error));
        }
        if cancelled {
            self.finish(Outcome::Cancelled);
        } else if overloaded {
            // Every call of the round has its result; asking the model again would only meet
            // the same full server.
            self.finish(Outcome::Overloaded);
        } else if round.budget_hit {
            self.phase = Phase::Ask {
                finalization: Some(FinalizationReason::Budget),
            };
        } else if ran == 0 {
            self.phase = Phase::Ask {
                finalization: Some(FinalizationReason::NoProgress),
            };
        } else {
            self.phase = Phase::Ask { finalization: None };
        }
    }

    /// The run was cancelled: whatever is out is abandoned.
    pub fn handle_cancel(&mut self) {
        if !self.is_done() {
            self.response = ModelResponse::default();
            self.shown = VisiblePrefix::default();
            self.free = FreeText::default();
            self.finish(Outcome::Cancelled);
        }
    }

    // ---- outputs ----

    /// The next event of the run's report.
    pub fn poll_event(&mut self) -> Option<RunEvent> {
        self.events.pop_front()
    }

    /// The next action, once; `None` while the machine waits for an input.
    pub fn poll_action(&mut self) -> Option<Action> {
        if self.out {
            return None;
        }
        let action = match &mut self.phase {
            Phase::Ask { finalization } => {
                let finalization = *finalization;
                self.ask(finalization)
            }
            Phase::AwaitModel { finalization } => {
                let finalization = *finalization;
                Action::CallModel(self.model_request(finalization))
            }
            Phase::AwaitTools(_) => match self.waiting_jobs() {
                Some(jobs) => Action::RunTools(jobs),
                None => return None,
            },
            Phase::Done => Action::Done,
        };
        if let (Action::CallModel(_), Phase::AwaitModel { finalization }) = (&action, &self.phase) {
            // A response starts: nothing of it was shown yet.
            self.shown = VisiblePrefix::default();
            self.free = if finalization.is_some() {
                FreeText::start(self.last_dialect)
            } else {
                FreeText::default()
            };
        }
        self.out = true;
        Some(action)
    }

    // ---- the policy ----

    fn tick(&mut self, now: Instant) {
        if let Some(last) = self.last {
            self.spent += now.saturating_duration_since(last);
        }
        self.last = Some(now);
    }

    fn out_of_budget(&self) -> bool {
        self.calls_used >= self.limits.max_tool_calls || self.spent >= self.limits.max_duration
    }

    fn awaiting_model(&self) -> bool {
        matches!(self.phase, Phase::AwaitModel { .. }) && self.out
    }

    /// Starts the next model request (a tool round, or the tool-free finalization round).
    fn ask(&mut self, finalization: Option<FinalizationReason>) -> Action {
        let finalization = match finalization {
            Some(reason) => Some(reason),
            None if self.rounds >= self.limits.max_rounds || self.out_of_budget() => {
                Some(FinalizationReason::Budget)
            }
            None => None,
        };
        match finalization {
            None => {
                self.rounds += 1;
                self.events
                    .push_back(RunEvent::RoundStarted { round: self.rounds });
            }
            Some(reason) => {
                self.events.push_back(RunEvent::Finalization { reason });
                let note = match reason {
                    FinalizationReason::Budget => texts::FINALIZE_BUDGET,
                    FinalizationReason::NoProgress => texts::FINALIZE_NO_PROGRESS,
                };
                self.push_both(Message::user(note));
            }
        }
        self.phase = Phase::AwaitModel { finalization };
        Action::CallModel(self.model_request(finalization))
    }

    /// Reports text the user is shown.
    fn report(&mut self, shown: Vec<ModelEvent>) {
        for event in shown {
            match event {
                ModelEvent::Text { text } => self.events.push_back(RunEvent::Text { text }),
                ModelEvent::Reasoning { text } => {
                    self.events.push_back(RunEvent::Reasoning { text })
                }
                _ => {}
            }
        }
    }

    /// The request of the current round: the conversation so far, with the tools unless this is
    /// the finalization round (its tool declaration is removed).
    fn model_request(&self, finalization: Option<FinalizationReason>) -> ChatRequest {
        ChatRequest {
            model: self.model.clone(),
            messages: self.messages.clone(),
            tools: if finalization.is_none() {
                self.tools.clone()
            } else {
                Vec::new()
            },
            tool_choice: if finalization.is_none() {
                self.next_tool_choice.clone()
            } else {
                None
            },
            max_tokens: self.options.max_tokens,
            temperature: self.options.temperature,
            top_p: self.options.top_p,
            extra: match &self.options.response_format {
                // The finalization round asks for the answer too: it keeps the format.
                Some(format) => {
                    let mut extra = serde_json::Map::new();
                    extra.insert("response_format".into(), format.clone());
                    extra
                }
                None => serde_json::Map::new(),
            },
            ..ChatRequest::default()
        }
    }

    /// A tool round's response: an answer, a retry, or calls to plan.
    fn answered_round(&mut self, response: ModelResponse, mode: ToolMode, format: CallFormat) {
        if response.calls.is_empty() {
            let attempt = Attempt {
                text: &response.text,
                has_calls: false,
                errors: &response.errors,
                finish: response.finish_reason,
            };
            let mut outcome = Outcome::Answered;
            match self.retries.judge(&attempt, format) {
                Verdict::Retry(step) => {
                    tracing::debug!(attempt = step.attempt, reason = %step.reason, raw = %response.text, "malformed tool call; asking again");
                    self.events.push_back(RunEvent::Retry {
                        attempt: step.attempt,
                        reason: step.reason,
                    });
                    for message in step.messages {
                        self.push_both(message);
                    }
                    self.phase = Phase::Ask { finalization: None };
                    return;
                }
                Verdict::GiveUp { reason } => {
                    tracing::warn!(%reason, raw = %response.text, "malformed tool call; giving up, the visible text is the answer");
                    outcome = Outcome::MalformedGaveUp;
                }
                Verdict::Accept => {}
            }
            self.answer = response.visible_text().to_owned();
            self.cut =
                response.finish_reason == Some(toolbridge_protocol::types::FinishReason::Length);
            self.push_both(Message::assistant(response.text));
            self.finish(outcome);
            return;
        }

        let mut calls = response.calls;
        if mode != ToolMode::Native && calls.len() > 1 {
            // Prompt mode is one call per round: what follows the first call was written
            // without its result (the stop sequence would have ended the reply there).
            tracing::debug!(
                dropped = calls.len() - 1,
                "prompt mode: extra calls in one reply dropped"
            );
            calls.truncate(1);
        }
        let text = (!response.text.is_empty()).then_some(response.text);
        // An upstream's signed reasoning goes back with the turn it came with (an Anthropic
        // upstream with thinking on requires it before the turn's tool use in the next round).
        self.push_both(Message::Assistant {
            content: text.map(toolbridge_protocol::types::Content::Text),
            tool_calls: calls.clone(),
            thinking_blocks: response.thinking_blocks,
        });

        // docs/src/security.md, "Tool output is untrusted": any tool result the model has seen
        // (this run's or an earlier turn's) may carry an injected instruction.
        let after_tool_output = self
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }));
        let mut planned = Vec::with_capacity(calls.len());
        let mut budget_hit = false;
        self.ledger.start_round();
        for call in &calls {
            if self.ledger.is_repeat(&call.name, &call.arguments) {
                planned.push(Some(CallResult::note(
                    CallStatus::Duplicate,
                    texts::TOOL_OUTPUT_DUPLICATE_SKIPPED,
                )));
            } else if self.out_of_budget() {
                budget_hit = true;
                planned.push(Some(CallResult::note(
                    CallStatus::BudgetExhausted,
                    texts::TOOL_OUTPUT_BUDGET_EXHAUSTED,
                )));
            } else {
                self.calls_used += 1;
                self.ledger.planned(&call.name, &call.arguments);
                planned.push(None);
            }
        }
        for call in &calls {
            self.events.push_back(RunEvent::CallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let parallel = if mode == ToolMode::Native {
            self.limits.parallel_calls.max(1)
        } else {
            1
        };
        let round = Round {
            calls,
            planned,
            budget_hit,
            parallel,
            after_tool_output,
            supplied: Vec::new(),
        };
        if round.fresh().next().is_none() {
            // Nothing to run: answer the planned notes at once.
            self.phase = Phase::AwaitTools(Box::new(round));
            self.complete_round(Vec::new());
        } else {
            self.phase = Phase::AwaitTools(Box::new(round));
        }
    }

    /// The finalization round's response: `shown` is its visible text, `stray_call` whether
    /// the model wrote call markup anyway.
    fn finalized(
        &mut self,
        reason: FinalizationReason,
        response: ModelResponse,
        shown: String,
        stray_call: bool,
    ) {
        let still_calling = !response.calls.is_empty() || stray_call;
        if still_calling {
            tracing::warn!(raw = %response.text, "the tool-free finalization round still called a tool");
        }
        let outcome = if still_calling || shown.is_empty() {
            match reason {
                FinalizationReason::Budget => Outcome::ToolBudgetExceeded,
                FinalizationReason::NoProgress => Outcome::ToolNoProgress,
            }
        } else {
            Outcome::Answered
        };
        self.answer = shown;
        self.cut = response.finish_reason == Some(toolbridge_protocol::types::FinishReason::Length);
        self.push_both(Message::assistant(response.text));
        self.finish(outcome);
    }

    fn push_both(&mut self, message: Message) {
        self.messages.push(message.clone());
        self.transcript.push(message);
    }

    fn finish(&mut self, outcome: Outcome) {
        self.outcome = Some(outcome);
        self.events.push_back(RunEvent::Outcome {
            outcome,
            answer: self.answer.clone(),
            error: self.error.clone(),
        });
        self.phase = Phase::Done;
        self.out = false;
    }
}

/// The report of a call's result.
fn finished_event(call: &ToolCall, result: &CallResult) -> RunEvent {
    RunEvent::CallFinished {
        id: call.id.clone(),
        name: call.name.clone(),
        status: result.status,
        duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        preview: result.for_model.chars().take(200).collect(),
        output_chars: result.full.chars().count(),
        output: std::sync::Arc::from(result.full.as_str()),
    }
}

fn empty_round() -> Round {
    Round {
        calls: Vec::new(),
        planned: Vec::new(),
        budget_hit: false,
        parallel: 1,
        after_tool_output: false,
        supplied: Vec::new(),
    }
}
