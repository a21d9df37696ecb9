//! # toolbridge-protocol
//!
//! The sans-IO heart of toolbridge: chat types ([`types`]), every model-facing text ([`texts`]),
//! tool modes as pure request transforms ([`mode`]), the streaming tool-call parser ([`parser`]) and
//! the accumulator for native streamed tool calls ([`accumulator`]). Nothing here does I/O or needs
//! an async runtime; the providers, the agent and the gateway all reuse these pieces.

pub mod accumulator;
pub mod mode;
pub mod parser;
pub mod texts;
pub mod types;

pub use parser::{parse, Event, ParseOutput, Parser, ParserConfig, Sink};
pub use texts::CallTag;
pub use types::{ChatRequest, Content, FinishReason, Message, ToolCall, ToolChoice, ToolSpec, Usage};
