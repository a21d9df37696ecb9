//! Tests of the Anthropic client, one file per part: `encode` (request bodies), `decode`
//! (streamed and whole responses, from recorded fixtures) and `client` (configuration, and the
//! client over loopback: retries, timeouts, headers).

mod client;
mod decode;
mod encode;

use toolbridge_protocol::types::{ChatRequest, Message};

use super::AnthropicConfig;
use crate::wire::WireEvent;

// Recorded streams, shared by the decoding and the loopback tests.
const TEXT: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/text.sse");
const THINKING: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/thinking.sse");
const TOOL_USE: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/tool_use.sse");
const TWO_TOOLS: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/two_tools.sse");
const MAX_TOKENS: &[u8] =
    include_bytes!("../../../tests/fixtures/anthropic/max_tokens_tool_use.sse");
const ERROR: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/error_overloaded.sse");
const CUT: &[u8] = include_bytes!("../../../tests/fixtures/anthropic/cut_before_stop.sse");

fn config() -> AnthropicConfig {
    AnthropicConfig::new("claude-test")
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

fn text(s: &str) -> WireEvent {
    WireEvent::Text(s.into())
}
