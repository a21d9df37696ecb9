//! The upstream interface: what a client for one API (OpenAI-compatible, Anthropic, scripted,
//! embedded) implements. It speaks in native terms — text, reasoning, native tool-call fragments,
//! usage, finish reason — and knows nothing of tool modes, which [`crate::model`] applies on top.

use std::pin::Pin;

use futures::Stream;
use toolbridge_protocol::accumulator::ToolCallDelta;
use toolbridge_protocol::types::{ChatRequest, FinishReason, Usage};

use crate::error::ProviderError;

/// One event of an upstream's response, in the upstream's own (native) terms.
#[derive(Clone, Debug, PartialEq)]
pub enum WireEvent {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCallDelta),
    Usage(Usage),
    /// The stop sequence the upstream says it stopped on.
    StopSequence(String),
    /// The upstream's signature over the reasoning since its last one (Anthropic).
    ReasoningSignature(String),
    /// Encrypted reasoning (Anthropic's `redacted_thinking`).
    RedactedReasoning(String),
    Finish(FinishReason),
}

impl WireEvent {
    /// Whether a consumer would see this (text, reasoning or a call) — after which a failed
    /// response can no longer be retried or handed to another arm.
    pub fn is_content(&self) -> bool {
        matches!(
            self,
            WireEvent::Text(_) | WireEvent::Reasoning(_) | WireEvent::ToolCall(_)
        )
    }
}

pub type WireStream =
    Pin<Box<dyn Stream<Item = Result<WireEvent, ProviderError>> + Send + 'static>>;

/// A client for one upstream API.
pub trait Upstream: Send + Sync + 'static {
    /// What to call this upstream in logs and reports, e.g. `openai:gpt-4o-mini` (never a key).
    fn describe(&self) -> String;

    /// Whether the upstream takes tools in its own API field (resolves the `auto` tool mode).
    fn native_tools(&self) -> bool;

    /// Sends a request that is already encoded for the arm's tool mode. The stream yields events
    /// and ends after `Finish`; errors are `Err` items (the stream ends after one). Nothing happens
    /// until the stream is polled, and dropping it cancels the request.
    fn send(&self, request: ChatRequest) -> WireStream;

    /// The input tokens of a request encoded for the arm's tool mode, exactly, when this
    /// upstream can count them itself (a local model's own template and tokenizer); `None`
    /// otherwise (callers estimate).
    fn count_tokens(&self, _request: &ChatRequest) -> Option<u64> {
        None
    }
}
