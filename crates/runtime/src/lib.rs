//! # toolbridge-runtime
//!
//! The composition root: a loaded configuration ([`Config`]: `[[models]]`, `[agent]` — whose
//! schema, [`AgentSection`], lives here — `[tools]` and `[[mcp_servers]]`), the caller's
//! [`Overrides`] and the [`ProviderRegistry`](toolbridge_providers::ProviderRegistry) of the
//! program turned into ready models, a toolbox (built-in tools, MCP tools, skills, memories,
//! approvals) and an [`Agent`](toolbridge_agent::Agent) for a given user and conversation.
//!
//! ```text
//! Runtime::new(config, registry, overrides)   no I/O
//!   .start_mcp().await                        the MCP servers, once per process
//!   .session(user, conversation, approver)    per run or request: toolbox, memories, agent
//!   .listing(approver)                        the agent to list tools and skills (no model)
//!   .served_models()                          every [[models]] entry, for the gateway
//!   .shutdown().await                         the MCP servers stop
//! ```
//!
//! The rules written once here: the command line wins over `[agent]`; a `[[models]]` name wins
//! over a `provider:model` reading; no model at all is the embedded default ([`DEFAULT_MODEL`],
//! which a build without the embedded provider reports as not in this build); the built-in skill
//! `auto` rule (offered with `python_execute`); approvals only tightened by overrides. It never
//! starts an async runtime of its own: its async functions run on the caller's.

pub mod build;
pub mod config;
pub mod error;
pub mod mcp;
pub mod models;
pub mod runtime;
pub mod section;

pub use build::with_overrides;
pub use config::{Config, Origin};
pub use error::RuntimeError;
pub use models::{ServedModels, DEFAULT_MODEL, DEFAULT_MODEL_LABEL};
pub use runtime::{Overrides, RequestAgent, Runtime, Session};
pub use section::{AgentSection, BuiltinSkills, SkillToolSetting};
