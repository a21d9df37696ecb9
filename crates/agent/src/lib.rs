//! # toolbridge-agent
//!
//! The agent loop: loop policy (budgets, duplicates, retries, finalization) over a
//! `toolbridge-providers` model and a [`toolbox::Toolbox`] of tools, with skills loaded on demand.
//! Nothing here parses model output: calls arrive as events from the provider layer.
//!
//! Whether a call runs is decided by [`approval::Approvals`]: per tool, per risk level for tools
//! that judge each call's risk ([`Tool::risk`]), and, once tool output has reached the model, at
//! least `ask` for tools an injected instruction could abuse ([`Tool::guarded_after_tool_output`],
//! docs/src/security.md, "Tool output is untrusted"). Run-time overrides only tighten
//! ([`approval::Approvals::tightened_by`]).

pub mod agent;
pub mod approval;
pub mod canonical;
pub mod dedupe;
pub mod events;
pub mod run;
pub mod skills;
pub mod tool;
pub mod toolbox;
mod validators;

pub use agent::{Agent, AgentConfig, AgentError, Run};
pub use events::{FinalizationReason, Outcome, RunEvent};
pub use run::{Action, Limits, PauseWhen, RequestOptions, RunMachine, RunState, ToolJobs};
pub use tool::{FnTool, Tool, ToolContext, ToolError, ToolFuture};
pub use toolbox::{CallStatus, DynamicTools, Toolbox, ToolboxConfig};
