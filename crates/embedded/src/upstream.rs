//! The embedded model as an [`Upstream`]: it takes tools natively, renders the prompt itself
//! (prompt mode's re-encoded history and the seed preamble, byte for byte, in the chat template),
//! constrains decoding for the tool choice, parses its own output with the protocol parser and
//! yields native tool-call deltas — so an arm over it is native and nothing is parsed twice.
//!
//! Tool choice:
//! - `required` or a named tool: the output is forced by a grammar to be one
//!   `<tool_call>{"name": …, "arguments": …}</tool_call>` matching the tools' schemas.
//! - `auto` (or none given, with tools): [`AutoStrategy`] (see [`crate::auto`]).
//! - `none`: free decoding without the tools in the prompt.
//!
//! Generation runs on a dedicated thread and streams back through a channel; dropping the stream
//! stops it at the next token.

use std::sync::Arc;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::mode::{encode_prompt, offered_tools, EncodeOptions};
use toolbridge_protocol::parser::{Dialect, ParseError, Parser, ParserConfig, Sink};
use toolbridge_protocol::texts::CallTag;
use toolbridge_protocol::types::{ChatRequest, FinishReason, Message, ToolChoice, ToolSpec, Usage};
use toolbridge_providers::{ProviderError, Upstream, WireEvent, WireStream};

use crate::auto;
pub use crate::auto::{AutoStrategy, Pick};
use crate::engine::{Constraint, Engine, Finish, Generation, Report, Sampling};
use crate::error::EmbeddedError;
use crate::grammar::{self, ForcedCall};
use crate::ground::Grounding;
use crate::schema::Limits;
use crate::template::TemplateMessage;

/// Settings of the embedded upstream.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedConfig {
    pub name: String,
    /// Default temperature when the request gives none (0 = greedy).
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    /// Token limit when the request gives none.
    pub max_tokens: usize,
    pub auto: AutoStrategy,
    /// The longest string value a forced call may write, in characters.
    pub max_string_length: usize,
    /// A call made right after a user's message takes its plain string and number values from
    /// that message (strings also from the words of the system messages), and the parameters the
    /// message names are settled from it ([`crate::ground`]). On by default: on BFCL v4 it turns
    /// more calls right than the values it cannot write (a default, a converted unit) turn wrong.
    pub ground_arguments: bool,
    /// The call format the model is taught, its forced calls are made in and its output is read
    /// in; `None`: the one its chat template teaches ([`crate::template::ChatTemplate::dialect`]).
    pub dialect: Option<Dialect>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            name: "embedded".into(),
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            max_tokens: 512,
            auto: AutoStrategy::default(),
            max_string_length: crate::schema::DEFAULT_MAX_STRING_LENGTH,
            ground_arguments: true,
            dialect: None,
        }
    }
}

/// The upstream.
#[derive(Clone)]
pub struct EmbeddedUpstream {
    engine: Arc<Engine>,
    config: EmbeddedConfig,
}

/// What a request turns into: the prompt and how to decode.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub generation: Generation,
    /// The tool names the output may call (empty: text only).
    pub tools: Vec<String>,
    /// The output is one grammar-forced call block. It is read whole when it is complete rather
    /// than streamed through the parser: the grammar lets a JSON string hold the close tag, which
    /// would end a streamed block in the middle of its arguments.
    pub forced: bool,
    /// The parameter schemas of the tools a forced call may name, as given: the call is checked
    /// against them after generation (the grammar follows a bounded, possibly relaxed copy).
    pub schemas: Vec<(String, Value)>,
    /// The dialect the output is read in (the one the model was taught).
    pub dialect: Dialect,
}

/// Which way `auto` went, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Text,
    Call,
}

/// The forced-call grammar; a schema the grammar engine refuses is relaxed, never an error
/// (what was relaxed is logged).
fn grammar_for(
    dialect: Dialect,
    tools: &[&ToolSpec],
    engine: &Engine,
    config: &EmbeddedConfig,
    grounding: Option<&Grounding>,
) -> ForcedCall {
    let limits = Limits {
        max_string_length: config.max_string_length.max(1),
        ..Limits::default()
    };
    let compiles = |g: &str| engine.matcher(g).map(|_| ()).map_err(|e| e.to_string());
    let call = grammar::build_forced_call(dialect, tools, &limits, grounding, &compiles);
    for what in &call.relaxed {
        tracing::warn!(relaxed = %what, "a tool schema was relaxed for generation");
    }
    call
}

impl EmbeddedUpstream {
    pub fn new(engine: Arc<Engine>, config: EmbeddedConfig) -> Self {
        EmbeddedUpstream { engine, config }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The call format the model is taught and read in: the configured one, else its template's.
    pub fn dialect(&self) -> Dialect {
        self.config
            .dialect
            .unwrap_or_else(|| self.engine.template().dialect())
    }

    /// The rendered prompt of a request: prompt mode's encoding (the history re-encoded as text
    /// and the seed preamble appended to the system prompt) in the model's chat template.
    pub fn render(&self, request: &ChatRequest) -> (String, Vec<String>) {
        let options = EncodeOptions {
            dialect: self.dialect(),
            ..EncodeOptions::default()
        };
        let encoded = encode_prompt(request, &options);
        let messages: Vec<TemplateMessage> = encoded
            .messages
            .iter()
            .map(|m| match m {
                Message::System { content, .. } => TemplateMessage::new("system", content.text()),
                Message::User { content, .. } => TemplateMessage::new("user", content.text()),
                Message::Assistant { content, .. } => TemplateMessage::new(
                    "assistant",
                    content
                        .as_ref()
                        .map(|c| c.text().into_owned())
                        .unwrap_or_default(),
                ),
                Message::Tool { content, .. } => TemplateMessage::new("user", content.text()),
            })
            .collect();
        (self.engine.render(&messages), encoded.stop)
    }

    /// Decides how to decode a request.
    pub fn plan(&self, request: &ChatRequest) -> Result<(Plan, Decision), EmbeddedError> {
        let dialect = self.dialect();
        let offered = offered_tools(&request.tools, request.tool_choice.as_ref());
        let (prompt, stop) = self.render(request);
        let sampling = self.sampling(request);
        let max_tokens = request
            .output_token_limit()
            .map(|n| n as usize)
            .unwrap_or(self.config.max_tokens);
        let names: Vec<String> = offered.iter().map(|t| t.name.clone()).collect();
        let after_tool = matches!(request.messages.last(), Some(Message::Tool { .. }));
        let (decision, tools) = self.decide(request, &prompt, &offered, after_tool)?;
        // The dialect the output is read in: a forced call may have had to be hermes'.
        let mut read_dialect = dialect;
        let generation = match decision {
            Decision::Call => Generation {
                prompt,
                constraint: {
                    let (constraint, call_dialect) = self.call_constraint(request, dialect, &tools);
                    read_dialect = call_dialect;
                    constraint
                },
                // The grammar ends the call; the close tag is part of it, not a stop.
                stop: request.stop.clone(),
                max_tokens,
                sampling,
            },
            // After a tool result a small model tends to echo the result's wrapper; its answer
            // is kept free of markup (no `<`) so it answers in prose instead.
            Decision::Text
                if after_tool && !offered.is_empty() && self.config.auto != AutoStrategy::Free =>
            {
                Generation {
                    prompt,
                    constraint: Constraint::Grammar(grammar::PROSE.to_owned()),
                    stop,
                    max_tokens,
                    sampling,
                }
            }
            Decision::Text => Generation {
                prompt,
                constraint: Constraint::Free,
                stop,
                max_tokens,
                sampling,
            },
        };
        Ok((
            Plan {
                generation,
                tools: names,
                forced: decision == Decision::Call,
                schemas: schemas(decision, &tools, &offered),
                dialect: read_dialect,
            },
            decision,
        ))
    }

    /// The request's sampling settings, the configured ones where it gives none.
    fn sampling(&self, request: &ChatRequest) -> Sampling {
        Sampling {
            temperature: request
                .temperature
                .map(|t| t as f32)
                .unwrap_or(self.config.temperature),
            top_p: request.top_p.map(|t| t as f32).unwrap_or(self.config.top_p),
            seed: request
                .extra
                .get("seed")
                .and_then(|s| s.as_u64())
                .unwrap_or(self.config.seed),
            ..Sampling::default()
        }
    }

    /// Whether to call a tool, and the tools the call may use: none offered is text; `required`
    /// or a named tool is a call; `auto` asks [`AutoStrategy`].
    fn decide<'t>(
        &self,
        request: &ChatRequest,
        prompt: &str,
        offered: &[&'t ToolSpec],
        after_tool: bool,
    ) -> Result<(Decision, Vec<&'t ToolSpec>), EmbeddedError> {
        let forced = matches!(
            request.tool_choice,
            Some(ToolChoice::Required) | Some(ToolChoice::Named(_))
        );
        if offered.is_empty() {
            return Ok((Decision::Text, offered.to_vec()));
        }
        if !forced {
            return self.decide_auto(request, prompt, offered, after_tool);
        }
        let mut tools = offered.to_vec();
        // `required` over several tools: the tool is picked as `auto` picks it, which chooses
        // better than the call grammar's first tokens (BFCL v4 `multiple`: docs/src/embedded.md).
        let pick = self.config.auto.pick().filter(|p| *p != Pick::Grammar);
        if let (Some(pick), Some(ToolChoice::Required), true) =
            (pick, request.tool_choice.as_ref(), offered.len() > 1)
        {
            let message = last_user_text(request);
            let i = auto::pick(&self.engine, prompt, &message, offered, pick)?;
            tools = offered.get(i).map(|t| vec![*t]).unwrap_or(tools);
        }
        Ok((Decision::Call, tools))
    }

    /// `auto`: the configured strategy's decision and the tools a call may use.
    fn decide_auto<'t>(
        &self,
        request: &ChatRequest,
        prompt: &str,
        offered: &[&'t ToolSpec],
        after_tool: bool,
    ) -> Result<(Decision, Vec<&'t ToolSpec>), EmbeddedError> {
        // A gated `auto` calls no tool whose numbers it would have to invent (auto::needs_a_number).
        // Counted over the user's messages and the tools' results (a number a tool listed may be
        // what "cancel it" refers to), not the system's or the model's own.
        let numbers_written = request.messages.iter().any(|m| match m {
            Message::User { content, .. } => auto::writes_a_number(&content.text()),
            Message::Tool { content, .. } => auto::writes_a_number(&content.text()),
            _ => false,
        });
        let suppliable = |t: &ToolSpec| numbers_written || !auto::needs_a_number(t);
        let text = || Ok((Decision::Text, offered.to_vec()));
        match self.config.auto {
            AutoStrategy::Free => text(),
            AutoStrategy::CallThenAnswer
            | AutoStrategy::Route { .. }
            | AutoStrategy::Relevance { .. }
            | AutoStrategy::Mutual { .. }
                if after_tool =>
            {
                text()
            }
            AutoStrategy::CallThenAnswer => Ok((Decision::Call, offered.to_vec())),
            AutoStrategy::Route { .. }
            | AutoStrategy::Relevance { .. }
            | AutoStrategy::Mutual { .. }
                if !offered.iter().any(|t| suppliable(t)) =>
            {
                tracing::debug!("embedded auto: every tool needs a number no message writes");
                text()
            }
            AutoStrategy::Relevance { bias, pick } | AutoStrategy::Mutual { bias, pick } => {
                let message = last_user_text(request);
                let (score, channel) = self.gate_score(prompt, &message, offered, bias)?;
                if score >= 0.0 {
                    let i = auto::pick_with(
                        &self.engine,
                        prompt,
                        &message,
                        offered,
                        pick,
                        Some(&channel),
                    )?;
                    Ok(picked_call(offered, i, pick, suppliable))
                } else {
                    text()
                }
            }
            AutoStrategy::Route { margin, pick } => {
                if auto::gate(&self.engine, prompt, margin)? {
                    let message = last_user_text(request);
                    let i = auto::pick(&self.engine, prompt, &message, offered, pick)?;
                    Ok(picked_call(offered, i, pick, suppliable))
                } else {
                    text()
                }
            }
        }
    }

    /// The score of `auto`'s mutual or relevance gate (a call when it is at least 0) and the
    /// channel scores its pick reuses.
    fn gate_score(
        &self,
        prompt: &str,
        message: &str,
        offered: &[&ToolSpec],
        bias: f32,
    ) -> Result<(f32, Vec<f32>), EmbeddedError> {
        if matches!(self.config.auto, AutoStrategy::Mutual { .. }) {
            let seen = auto::mutual(&self.engine, message, offered)?;
            let score = seen.score() + bias;
            tracing::debug!(
                score,
                pmi = seen.pmi,
                describe = seen.describe,
                "embedded auto: mutual gate"
            );
            Ok((score, seen.channel))
        } else {
            let seen = auto::relevance(&self.engine, prompt, message, offered)?;
            let score = seen.score() + bias;
            tracing::debug!(
                score,
                pmi = seen.pmi,
                shared = seen.shared,
                gap = seen.gap,
                "embedded auto: relevance gate"
            );
            Ok((score, seen.channel))
        }
    }

    /// The grammar of a call to one of `tools` (grounded in the conversation when configured and
    /// the user spoke last), and the dialect the call is read in.
    fn call_constraint(
        &self,
        request: &ChatRequest,
        dialect: Dialect,
        tools: &[&ToolSpec],
    ) -> (Constraint, Dialect) {
        let grounding = (self.config.ground_arguments
            && matches!(request.messages.last(), Some(Message::User { .. })))
        .then(|| {
            let instructions: Vec<String> = request
                .messages
                .iter()
                .filter_map(|m| match m {
                    Message::System { content, .. } => Some(content.text().into_owned()),
                    _ => None,
                })
                .collect();
            let instructions: Vec<&str> = instructions.iter().map(String::as_str).collect();
            Grounding::from_conversation(&last_user_text(request), &instructions)
        });
        let call = grammar_for(
            dialect,
            tools,
            &self.engine,
            &self.config,
            grounding.as_ref(),
        );
        let constraint = Constraint::Call {
            grammar: call.grammar,
            reserve: call.reserve,
        };
        (constraint, call.dialect)
    }
}

/// The schemas the parser types values with: the called tools', or, for text, every offered
/// tool's (the parser still types the values of a dialect that writes them bare).
fn schemas(decision: Decision, tools: &[&ToolSpec], offered: &[&ToolSpec]) -> Vec<(String, Value)> {
    match decision {
        Decision::Call => tools
            .iter()
            .map(|t| (t.name.clone(), t.parameters.clone().unwrap_or(Value::Null)))
            .collect(),
        Decision::Text => offered
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.parameters.clone()?)))
            .collect(),
    }
}

/// The decision once `auto`'s gate called and its pick chose tool `i`: a call offering that tool
/// alone, or text when the tool needs a number no message writes. When the grammar picks (or the
/// index is out of range), the call offers every tool that needs no such number; the caller has
/// made sure there is one.
fn picked_call<'t>(
    offered: &[&'t ToolSpec],
    i: usize,
    pick: Pick,
    suppliable: impl Fn(&ToolSpec) -> bool,
) -> (Decision, Vec<&'t ToolSpec>) {
    let chosen = offered.get(i).filter(|_| pick != Pick::Grammar);
    match chosen {
        Some(tool) if !suppliable(tool) => {
            tracing::debug!(tool = %tool.name, "embedded auto: the tool needs a number no message writes");
            (Decision::Text, offered.to_vec())
        }
        Some(tool) => (Decision::Call, vec![*tool]),
        None => {
            let able: Vec<&ToolSpec> = offered.iter().copied().filter(|t| suppliable(t)).collect();
            (Decision::Call, able)
        }
    }
}

/// The text of the request's latest user message (empty when there is none).
fn last_user_text(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content, .. } => Some(content.text().into_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Turns parser output into native wire events.
struct WireSink<'a> {
    out: &'a mut Vec<WireEvent>,
}

impl Sink for WireSink<'_> {
    fn text(&mut self, text: &str) {
        if !text.is_empty() {
            self.out.push(WireEvent::Text(text.to_owned()));
        }
    }
    fn reasoning(&mut self, text: &str) {
        if !text.is_empty() {
            self.out.push(WireEvent::Reasoning(text.to_owned()));
        }
    }
    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.out.push(WireEvent::ToolCall(ToolCallDelta {
            index: Some(index),
            id: Some(id.to_owned()),
            kind: Some("function".into()),
            function: Some(FunctionDelta {
                name: Some(name.to_owned()),
                arguments: None,
            }),
        }));
    }
    fn call_args(&mut self, index: usize, fragment: &str) {
        self.out.push(WireEvent::ToolCall(ToolCallDelta {
            index: Some(index),
            id: None,
            kind: None,
            function: Some(FunctionDelta {
                name: None,
                arguments: Some(fragment.to_owned()),
            }),
        }));
    }
    fn call_end(&mut self, _index: usize) {}
    fn error(&mut self, error: ParseError) {
        // A block that did not give a call stays visible, as prompt mode shows it.
        if !error.raw.is_empty() {
            self.out.push(WireEvent::Text(error.raw));
        }
    }
}

fn next_response_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Runs a plan on the current thread, sending events until the receiver goes away.
pub fn run_plan(
    engine: &Engine,
    plan: &Plan,
    tx: &mpsc::Sender<Result<WireEvent, ProviderError>>,
) -> Result<Report, EmbeddedError> {
    let mut parser = (!plan.tools.is_empty()).then(|| {
        Parser::new(ParserConfig {
            tools: Some(plan.tools.clone()),
            // Unique per response, so call ids never repeat within a conversation.
            id_prefix: format!("call_embedded_{}_", next_response_id()),
            dialect: plan.dialect,
            schemas: plan.schemas.iter().cloned().collect(),
            ..ParserConfig::default()
        })
    });
    if plan.forced {
        return run_forced(engine, plan, tx);
    }
    let mut events = Vec::new();
    let mut calls = 0usize;
    let mut on_text = |text: &str| -> bool {
        match parser.as_mut() {
            Some(p) => {
                p.push(text, &mut WireSink { out: &mut events });
                calls = p.calls_emitted();
            }
            None => events.push(WireEvent::Text(text.to_owned())),
        }
        events.drain(..).all(|e| tx.blocking_send(Ok(e)).is_ok())
    };
    let report = engine.generate(&plan.generation, &mut on_text)?;
    if let Some(p) = parser.as_mut() {
        p.finish(&mut WireSink { out: &mut events });
        calls = p.calls_emitted();
    }
    finish(&report, calls, events, tx);
    Ok(report)
}

/// A forced call: generated whole, then read as one block (see [`Plan::forced`]).
fn run_forced(
    engine: &Engine,
    plan: &Plan,
    tx: &mpsc::Sender<Result<WireEvent, ProviderError>>,
) -> Result<Report, EmbeddedError> {
    let mut raw = String::new();
    let report = engine.generate(&plan.generation, &mut |text| {
        raw.push_str(text);
        !tx.is_closed()
    })?;
    let mut events = Vec::new();
    let mut sink = WireSink { out: &mut events };
    let read = match plan.dialect {
        Dialect::Hermes => read_call_block(&raw),
        dialect => read_dialect_call(&raw, dialect, plan),
    };
    let calls = match read.filter(|(name, _)| plan.tools.contains(name)) {
        Some((name, arguments)) => {
            check_arguments(plan, &name, &arguments);
            let id = format!("call_embedded_{}_0", next_response_id());
            sink.call_start(0, &id, &name);
            sink.call_args(0, &arguments);
            1
        }
        // Cut short (token limit, a request's stop string): shown as it is, as prompt mode would.
        None => {
            sink.text(&raw);
            0
        }
    };
    finish(&report, calls, events, tx);
    Ok(report)
}

/// Checks a forced call's arguments against the tool's schema as given; a mismatch (possible
/// where the schema had to be relaxed for the grammar, or contradicts itself) is logged.
fn check_arguments(plan: &Plan, name: &str, arguments: &str) {
    let Some((_, schema)) = plan.schemas.iter().find(|(n, _)| n == name) else {
        return;
    };
    if !schema.is_object() {
        return;
    }
    let Ok(validator) = jsonschema::validator_for(schema) else {
        tracing::warn!(
            tool = name,
            "the tool's schema is not a valid JSON schema; the call is not checked"
        );
        return;
    };
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => {
            if let Err(e) = validator.validate(&value) {
                tracing::warn!(tool = name, error = %e, "a forced call does not match the tool's schema");
            }
        }
        Err(e) => tracing::warn!(tool = name, error = %e, "a forced call's arguments do not parse"),
    }
}

/// The name and the arguments (their bytes as written) of a complete
/// `<tool_call>{"name": …, "arguments": …}</tool_call>` block.
pub fn read_call_block(raw: &str) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct Block<'a> {
        name: String,
        #[serde(borrow)]
        arguments: &'a serde_json::value::RawValue,
    }
    let tag = CallTag::default();
    let body = raw
        .trim()
        .strip_prefix(&format!("<{}>", tag.name()))?
        .strip_suffix(tag.stop_sequence())?;
    let block: Block = serde_json::from_str(body).ok()?;
    Some((block.name, block.arguments.get().to_owned()))
}

/// The one call of a complete forced call written in `dialect` (not hermes), read by the
/// dialect's parser: the grammar keeps markup out of its values, so the parser reads it whole.
fn read_dialect_call(raw: &str, dialect: Dialect, plan: &Plan) -> Option<(String, String)> {
    let config = ParserConfig {
        tools: Some(plan.tools.clone()),
        dialect,
        schemas: plan.schemas.iter().cloned().collect(),
        ..ParserConfig::default()
    };
    let response = toolbridge_protocol::parser::parse(raw, &config);
    let call = response.calls.into_iter().next()?;
    response.errors.is_empty().then_some(())?;
    Some((call.name, call.arguments))
}

/// Sends what is left: the events, the usage and how the response ended.
fn finish(
    report: &Report,
    calls: usize,
    mut events: Vec<WireEvent>,
    tx: &mpsc::Sender<Result<WireEvent, ProviderError>>,
) {
    let reason = match report.finish {
        _ if calls > 0 => FinishReason::ToolCalls,
        Finish::Length => FinishReason::Length,
        _ => FinishReason::Stop,
    };
    let usage = Usage {
        prompt_tokens: report.prompt_tokens as u64,
        completion_tokens: report.generated_tokens as u64,
        total_tokens: (report.prompt_tokens + report.generated_tokens) as u64,
    };
    for e in events
        .drain(..)
        .chain([WireEvent::Usage(usage), WireEvent::Finish(reason)])
    {
        if tx.blocking_send(Ok(e)).is_err() {
            break;
        }
    }
}

impl Upstream for EmbeddedUpstream {
    fn describe(&self) -> String {
        self.config.name.clone()
    }

    fn native_tools(&self) -> bool {
        true
    }

    fn count_tokens(&self, request: &ChatRequest) -> Option<u64> {
        let (prompt, _) = self.render(request);
        match self.engine.tokenizer().encode_prompt(&prompt) {
            Ok(tokens) => u64::try_from(tokens.len()).ok(),
            Err(e) => {
                tracing::warn!(error = %e, "embedded: the prompt could not be tokenized for a count");
                None
            }
        }
    }

    fn send(&self, request: ChatRequest) -> WireStream {
        let this = self.clone();
        let (tx, rx) = mpsc::channel::<Result<WireEvent, ProviderError>>(64);
        let mut started = false;
        let mut pending = Some((this, request, tx));
        let mut rx = rx;
        Box::pin(
            futures::stream::poll_fn(move |cx| {
                // Nothing happens until the stream is polled.
                if !started {
                    started = true;
                    if let Some((this, request, tx)) = pending.take() {
                        let spawned = std::thread::Builder::new()
                            .name("toolbridge-embedded".into())
                            .spawn(move || {
                                let result = this
                                    .plan(&request)
                                    .and_then(|(plan, _)| run_plan(&this.engine, &plan, &tx));
                                if let Err(e) = result {
                                    let _ = tx.blocking_send(Err(e.into()));
                                }
                            });
                        if let Err(e) = spawned {
                            return std::task::Poll::Ready(Some(Err(ProviderError::BadResponse(
                                format!("cannot start the inference thread: {e}"),
                            ))));
                        }
                    }
                }
                rx.poll_recv(cx)
            })
            .fuse(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picked_call_offers_the_picked_tool_unless_it_needs_an_unwritten_number() {
        use serde_json::json;
        let counts = ToolSpec::new(
            "count",
            "",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        let names = ToolSpec::new("name", "", json!({"type": "object"}));
        let offered = [&counts, &names];
        let no_numbers = |t: &ToolSpec| !crate::auto::needs_a_number(t);
        let named =
            |tools: &[&ToolSpec]| -> Vec<String> { tools.iter().map(|t| t.name.clone()).collect() };
        let (d, t) = picked_call(&offered, 1, Pick::Channel, no_numbers);
        assert_eq!((d, named(&t)), (Decision::Call, vec!["name".to_owned()]));
        let (d, _) = picked_call(&offered, 0, Pick::Channel, no_numbers);
        assert_eq!(d, Decision::Text);
        // With numbers written, the picked tool is called.
        let (d, t) = picked_call(&offered, 0, Pick::Channel, |_: &ToolSpec| true);
        assert_eq!((d, named(&t)), (Decision::Call, vec!["count".to_owned()]));
        // The grammar's pick, or an index out of range: every tool that can be called.
        for (i, pick) in [(0, Pick::Grammar), (7, Pick::Channel)] {
            let (d, t) = picked_call(&offered, i, pick, no_numbers);
            assert_eq!((d, named(&t)), (Decision::Call, vec!["name".to_owned()]));
        }
    }

    #[test]
    fn a_call_block_is_read_whole_even_with_the_close_tag_in_a_string() {
        let raw = "<tool_call>{\"name\": \"calc\", \"arguments\": {\"e\": \"}}</tool_call>1\"}}</tool_call>";
        let (name, args) = read_call_block(raw).unwrap();
        assert_eq!(name, "calc");
        assert_eq!(args, "{\"e\": \"}}</tool_call>1\"}");
        assert_eq!(
            read_call_block("<tool_call>{\"name\": \"calc\", \"argu"),
            None
        );
    }
}
