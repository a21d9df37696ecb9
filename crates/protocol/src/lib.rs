//! # toolbridge-protocol
//!
//! The sans-IO heart of toolbridge: chat types ([`types`]), every model-facing text ([`texts`]),
//! tool modes as pure request transforms ([`mode`]), the streaming tool-call parser ([`parser`]) and
//! the accumulator for native streamed tool calls ([`accumulator`]). Nothing here does I/O or needs
//! an async runtime; the providers, the agent and the gateway all reuse these pieces.
//!
//! ```
//! use toolbridge_protocol::parser::{Parser, ParserConfig};
//! use toolbridge_protocol::response::ModelResponse;
//!
//! let mut parser = Parser::new(ParserConfig::with_tools(["get_weather"]));
//! let mut out = ModelResponse::default();
//! for chunk in ["Sure. <tool_", "call>{\"name\": \"get_weather\", \"arguments\": {}}"] {
//!     parser.push(chunk, &mut out); // any `Sink` works; `ModelResponse` collects
//! }
//! parser.finish(&mut out);
//! assert_eq!(out.calls[0].name, "get_weather");
//! assert_eq!(out.text, "Sure. ");
//! ```

pub mod accumulator;
pub mod decode;
pub mod mode;
pub mod model;
pub mod openai;
pub mod parser;
pub mod response;
pub mod retry;
pub mod sse;
pub mod stop;
pub mod telemetry;
pub mod texts;
pub mod types;
pub mod validate;
pub mod visible;

pub use parser::{parse, ModelEvent, ParseError, ParseProblem, Parser, ParserConfig, Sink};
pub use response::{ArmInfo, ModelResponse};
pub use texts::{CallFormat, CallTag};
pub use types::{
    ChatRequest, Content, FinishReason, Message, ToolCall, ToolChoice, ToolSpec, Usage,
};
