//! # toolbridge-providers
//!
//! Model providers: an [`Upstream`] is a client for one API (OpenAI-compatible Chat Completions,
//! Anthropic Messages, scripted replies); a [`Model`] is a list of arms (an upstream and its tool
//! mode) tried in order. Tool modes are applied with `toolbridge-protocol`'s encoders and the
//! response decoder, so every provider yields the same normalized [`ModelEvent`]s.

pub mod anthropic;
pub mod config;
pub mod error;
pub mod http;
pub mod model;
pub mod openai;
pub mod registry;
pub mod scripted;
pub mod spec;
pub mod telemetry;
pub mod wire;

pub use error::{ProviderError, TimeoutKind};
pub use model::{Arm, ArmInfo, Model, ModelResponse, ModelStream};
pub use registry::{BuildError, ProviderFactory, ProviderRegistry};
pub use toolbridge_protocol::decode::ModelEvent;
pub use wire::{Upstream, WireEvent, WireStream};
