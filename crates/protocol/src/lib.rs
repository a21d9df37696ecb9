//! # toolbridge-protocol
//!
//! The sans-IO heart of toolbridge: chat types ([`types`]), every model-facing text ([`texts`]),
//! tool modes as pure request transforms ([`mode`]), the streaming tool-call parser ([`parser`]) and
//! the accumulator for native streamed tool calls ([`accumulator`]). Nothing here does I/O or needs
//! an async runtime; the providers, the agent and the gateway all reuse these pieces.
//!
//! ```
//! use toolbridge_protocol::parser::{ParseOutput, Parser, ParserConfig};
//!
//! let mut parser = Parser::new(ParserConfig::with_tools(["get_weather"]));
//! let mut out = ParseOutput::default();
//! for chunk in ["Sure. <tool_", "call>{\"name\": \"get_weather\", \"arguments\": {}}"] {
//!     parser.push(chunk, &mut out); // any `Sink` works; `ParseOutput` collects
//! }
//! parser.finish(&mut out);
//! assert_eq!(out.calls[0].name, "get_weather");
//! assert_eq!(out.visible, "Sure. ");
//! ```

pub mod accumulator;
pub mod decode;
pub mod mode;
pub mod openai;
pub mod parser;
pub mod sse;
pub mod stop;
pub mod texts;
pub mod types;

pub use parser::{parse, Event, ParseOutput, Parser, ParserConfig, Sink};
pub use texts::CallTag;
pub use types::{
    ChatRequest, Content, FinishReason, Message, ToolCall, ToolChoice, ToolSpec, Usage,
};
