//! # toolbridge-agent
//!
//! The agent loop: loop policy (budgets, duplicates, retries, finalization) over a
//! `toolbridge-providers` model and a [`toolbox::Toolbox`] of tools, with skills loaded on demand.
//! Nothing here parses model output: calls arrive as events from the provider layer.

pub mod agent;
pub mod approval;
pub mod canonical;
pub mod events;
pub mod skills;
pub mod tool;
pub mod toolbox;

pub use agent::{Agent, AgentConfig, AgentError, Run, RunState};
pub use events::{FinalizationReason, Outcome, RunEvent};
pub use tool::{FnTool, Tool, ToolContext, ToolError};
pub use toolbox::{CallStatus, DynamicTools, Toolbox, ToolboxConfig};
