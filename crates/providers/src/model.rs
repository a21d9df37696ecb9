//! A model as users configure it: one or more arms (an upstream plus its tool mode), tried in order.
//!
//! Each attempt encodes the client's original request for its arm's mode and decodes the answer
//! with the same mode, so a verbatim arm gets the in-band tool block and a native arm does not. An
//! arm that fails with a transient error (connection, timeout, 429, 5xx, unreadable response)
//! *before any content reached the consumer* hands over to the next arm; after content, the error is
//! the consumer's.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use rand::distr::{Alphanumeric, SampleString};
use toolbridge_protocol::decode::{ModelEvent, ResponseDecoder};
use toolbridge_protocol::mode::{encode, offered_tools, EncodeOptions, ToolMode};
use toolbridge_protocol::parser::{Dialect, ParserConfig};
use toolbridge_protocol::stop::StopScanner;
use toolbridge_protocol::texts::{CallFormat, CallTag};
use toolbridge_protocol::types::{ChatRequest, FinishReason};

/// Which arm answered, and the collected response: pure data, defined in the protocol crate.
pub use toolbridge_protocol::response::{ArmInfo, ModelResponse};

use crate::error::ProviderError;
use crate::wire::{Upstream, WireEvent};

/// An upstream with its tool mode, and how a text mode teaches and reads its calls.
#[derive(Clone)]
pub struct Arm {
    pub upstream: Arc<dyn Upstream>,
    pub mode: ToolMode,
    /// The hermes tag taught in text modes.
    pub tag: CallTag,
    /// The call format taught and read in text modes (resolved: `auto` is read when the arm is
    /// built).
    pub dialect: Dialect,
    /// The reply begins inside reasoning (text modes).
    pub reasoning_open: bool,
}

impl Arm {
    /// An arm in hermes with the default tag.
    pub fn new(upstream: Arc<dyn Upstream>, mode: ToolMode) -> Self {
        Arm {
            upstream,
            mode,
            tag: CallTag::default(),
            dialect: Dialect::Hermes,
            reasoning_open: false,
        }
    }

    /// The same arm in another dialect.
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The arm's call format (dialect and tag).
    pub fn format(&self) -> CallFormat {
        CallFormat::new(self.dialect, self.tag)
    }

    /// How a text mode encodes a request for this arm.
    pub fn encode_options(&self) -> EncodeOptions {
        EncodeOptions {
            tag: self.tag,
            dialect: self.dialect,
        }
    }

    /// The mode this arm really uses (`auto` resolved against the upstream).
    pub fn resolved_mode(&self) -> ToolMode {
        self.mode.resolve(self.upstream.native_tools())
    }
}

/// A named model with its arms.
#[derive(Clone)]
pub struct Model {
    pub name: String,
    pub arms: Vec<Arm>,
}

impl Model {
    pub fn new(name: impl Into<String>, arms: Vec<Arm>) -> Self {
        Model {
            name: name.into(),
            arms,
        }
    }

    /// A model with one arm.
    pub fn single(upstream: Arc<dyn Upstream>, mode: ToolMode) -> Self {
        Model {
            name: upstream.describe(),
            arms: vec![Arm::new(upstream, mode)],
        }
    }

    /// Streams a response. Dropping the stream cancels the upstream request.
    pub fn stream(&self, request: ChatRequest) -> ModelStream {
        let arm_slot = Arc::new(OnceLock::new());
        let span = crate::telemetry::chat_span(&request);
        let inner = attempt_arms(self.arms.clone(), request, Arc::clone(&arm_slot));
        ModelStream {
            inner: Box::pin(inner),
            arm: arm_slot,
            span,
            recorder: crate::telemetry::ChatRecorder::new(),
            arm_recorded: false,
        }
    }

    /// Sends a request and collects the whole response.
    pub async fn complete(&self, request: ChatRequest) -> Result<ModelResponse, ProviderError> {
        self.stream(request).collect_response().await
    }
}

/// A random per-response id prefix, so call ids never collide across responses.
fn id_prefix() -> String {
    format!("call_{}_", Alphanumeric.sample_string(&mut rand::rng(), 12))
}

fn attempt_arms(
    arms: Vec<Arm>,
    request: ChatRequest,
    arm_slot: Arc<OnceLock<ArmInfo>>,
) -> impl Stream<Item = Result<ModelEvent, ProviderError>> + Send {
    async_stream::try_stream! {
        if arms.is_empty() {
            Err(ProviderError::Config("the model has no upstream configured".into()))?;
        }
        let offered_specs = offered_tools(&request.tools, request.tool_choice.as_ref());
        let offered: Vec<String> = offered_specs.iter().map(|t| t.name.clone()).collect();
        // The dialects whose values are bare text read their types from the schemas.
        let schemas: HashMap<String, serde_json::Value> = if arms.iter().any(|a| a.dialect.types_values()) {
            offered_specs
                .iter()
                .filter_map(|t| Some((t.name.clone(), t.parameters.clone()?)))
                .collect()
        } else {
            HashMap::new()
        };
        let prefix = id_prefix();
        let last = arms.len() - 1;
        'arms: for (index, arm) in arms.iter().enumerate() {
            let mode = arm.resolved_mode();
            let encoded = encode(&request, mode, &arm.encode_options());
            // With no tool offered there is nothing to parse: text is text.
            let decode_mode = if offered.is_empty() { ToolMode::Native } else { mode };
            let config = ParserConfig {
                tools: Some(offered.clone()),
                id_prefix: prefix.clone(),
                dialect: arm.dialect,
                reasoning_open: arm.reasoning_open,
                schemas: if arm.dialect.types_values() { schemas.clone() } else { HashMap::new() },
                ..ParserConfig::default()
            };
            let mut decoder = ResponseDecoder::new(decode_mode, config);
            let info = ArmInfo { index, name: arm.upstream.describe(), mode, tag: arm.tag, dialect: arm.dialect };
            // Stop sequences are enforced here too, for servers that ignore them.
            let mut stop = StopScanner::new(encoded.stop.iter().cloned());
            let mut wire = arm.upstream.send(encoded);
            let mut committed = false;
            let mut events = Vec::new();
            while let Some(item) = wire.next().await {
                let event = match item {
                    Ok(event) => event,
                    Err(err) if !committed && index < last && err.is_transient() => {
                        tracing::warn!(arm = %info.name, error = %err, "upstream failed before any content; trying the next arm");
                        continue 'arms;
                    }
                    Err(err) => Err(err)?,
                };
                if !committed && event.is_content() {
                    committed = true;
                    let _ = arm_slot.set(info.clone());
                }
                match event {
                    WireEvent::Text(t) => {
                        let text = stop.push(&t);
                        decoder.text(&text, &mut events);
                        if stop.stopped() {
                            if let Some(sequence) = stop.matched().filter(|s| request.stop.iter().any(|c| c == s)) {
                                events.push(ModelEvent::StopSequence { sequence: sequence.to_owned() });
                            }
                            decoder.finish_reason(FinishReason::Stop);
                            for event in events.drain(..) {
                                yield event;
                            }
                            // Dropping the upstream stream cancels the rest of the response.
                            break;
                        }
                    }
                    WireEvent::Reasoning(t) => decoder.reasoning(&t, &mut events),
                    WireEvent::ToolCall(d) => decoder.tool_call(&d, &mut events),
                    WireEvent::Usage(u) => decoder.usage(u),
                    WireEvent::StopSequence(sequence) => {
                        if request.stop.contains(&sequence) {
                            events.push(ModelEvent::StopSequence { sequence });
                        }
                    }
                    WireEvent::ReasoningSignature(signature) => {
                        events.push(ModelEvent::ReasoningSignature { signature });
                    }
                    WireEvent::RedactedReasoning(data) => {
                        events.push(ModelEvent::RedactedReasoning { data });
                    }
                    WireEvent::Finish(r) => decoder.finish_reason(r),
                }
                for event in events.drain(..) {
                    yield event;
                }
            }
            drop(wire);
            let _ = arm_slot.set(info);
            let rest = stop.finish();
            decoder.text(&rest, &mut events);
            decoder.finish(&mut events);
            for event in events.drain(..) {
                yield event;
            }
            return;
        }
    }
}

impl toolbridge_protocol::model::ChatModel for Model {
    fn name(&self) -> &str {
        &self.name
    }

    /// Each arm's upstream and resolved tool mode, in the order they are tried.
    fn describe(&self) -> String {
        let arms: Vec<String> = self
            .arms
            .iter()
            .map(|arm| format!("{} ({})", arm.upstream.describe(), arm.resolved_mode()))
            .collect();
        arms.join(", then ")
    }

    fn events(&self, request: ChatRequest) -> Box<dyn toolbridge_protocol::model::EventStream> {
        Box::new(LoopEvents(self.stream(request)))
    }
}

/// A [`ModelStream`] as the tool loop sees it: the provider's error boxed as the loop's
/// [`ModelError`](toolbridge_protocol::model::ModelError).
struct LoopEvents(ModelStream);

impl Stream for LoopEvents {
    type Item = Result<ModelEvent, toolbridge_protocol::model::ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0)
            .poll_next(cx)
            .map(|item| item.map(|result| result.map_err(Into::into)))
    }
}

impl toolbridge_protocol::model::EventStream for LoopEvents {
    fn arm(&self) -> Option<&ArmInfo> {
        self.0.arm()
    }
}

/// The stream of a model's response, which also tells which arm answered.
pub struct ModelStream {
    inner: Pin<Box<dyn Stream<Item = Result<ModelEvent, ProviderError>> + Send>>,
    arm: Arc<OnceLock<ArmInfo>>,
    /// The call's `chat {model}` span: entered while polling, closed when the stream is dropped.
    span: tracing::Span,
    recorder: crate::telemetry::ChatRecorder,
    arm_recorded: bool,
}

impl ModelStream {
    /// The arm that answered, once it produced content (or finished).
    pub fn arm(&self) -> Option<&ArmInfo> {
        self.arm.get()
    }

    /// Collects the whole response.
    pub async fn collect_response(mut self) -> Result<ModelResponse, ProviderError> {
        let mut response = ModelResponse::default();
        while let Some(event) = self.next().await {
            response.apply(event?);
        }
        response.arm = self.arm.get().cloned();
        Ok(response)
    }
}

impl Stream for ModelStream {
    type Item = Result<ModelEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = {
            let _entered = this.span.enter();
            this.inner.as_mut().poll_next(cx)
        };
        if let Poll::Ready(Some(item)) = &polled {
            if !this.arm_recorded {
                if let Some(arm) = this.arm.get() {
                    crate::telemetry::ChatRecorder::arm(&this.span, &arm.name);
                    this.arm_recorded = true;
                }
            }
            match item {
                Ok(event) => this.recorder.event(&this.span, event),
                Err(error) => {
                    this.span.record("error.type", error.kind());
                }
            }
        }
        polled
    }
}
