//! # toolbridge-embedded
//!
//! A local GGUF model run in-process, as a toolbridge [`Upstream`](toolbridge_providers::Upstream):
//! our own llama forward pass with AVX2 kernels on the GGUF's 4/8-bit blocks, candle reading the
//! file ([`model`]), `auto` tool choice for a small model ([`auto`]), the tokenizer from the GGUF's
//! metadata ([`tokenizer`]), the model's chat template ([`template`]), llguidance grammars for
//! tool calls ([`grammar`]), the upstream that ties them together ([`upstream`]) and its
//! factory for a provider registry, with its `[[models]]` settings ([`provider`]). [`pull`]
//! fetches the default model (SmolLM2-135M-Instruct) into the user cache folder.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolbridge_embedded::{EmbeddedConfig, EmbeddedUpstream, Engine, EngineOptions};
//! let engine = toolbridge_embedded::engine::shared("model.gguf".as_ref(), &EngineOptions::default())?;
//! let upstream = EmbeddedUpstream::new(engine, EmbeddedConfig::default());
//! # let _: Arc<dyn toolbridge_providers::Upstream> = Arc::new(upstream);
//! # Ok(()) }
//! ```

pub mod auto;
pub mod call_grammar;
pub mod engine;
pub mod error;
pub mod grammar;
pub mod ground;
pub mod model;
pub mod provider;
pub mod pull;
pub mod schema;
pub mod template;
pub mod tokenizer;
pub mod upstream;

pub use engine::{Constraint, Engine, EngineOptions, Finish, Generation, Report, Sampling};
pub use error::EmbeddedError;
pub use provider::{EmbeddedFactory, EmbeddedSettings};
pub use upstream::{AutoStrategy, Decision, EmbeddedConfig, EmbeddedUpstream, Pick};
