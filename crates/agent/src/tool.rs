//! What a tool is: a name, a description, a JSON schema and an async function.
//!
//! The function is a closure on your side (seed 004): an MCP server, a credential, a database handle
//! stay with it, and the loop never learns what the tool talks to.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbridge_protocol::types::ToolSpec;

use crate::approval::RiskAssessment;

/// What a tool gets besides its arguments.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The conversation's workspace folder (with `uploads/`, `downloads/`, `outputs/`), when the
    /// run has one.
    pub workspace: Option<PathBuf>,
    /// Who the run is for (memories and workspaces belong to one user).
    pub user: String,
    /// The conversation this run belongs to.
    pub conversation: String,
    /// Cancelled when the run is cancelled or the call times out; long tools should watch it.
    pub cancel: CancellationToken,
    /// The id of the call being run (set by the toolbox), for provenance records.
    pub call_id: Option<String>,
    /// When the toolbox will give up on this call (set by the toolbox): a tool with a timeout
    /// message of its own (`run_in_terminal`) stops its work a little before, so its message wins.
    pub deadline: Option<std::time::Instant>,
    /// The files the user attached to this turn's message, in the order attached: names inside
    /// the workspace's `uploads/` (which also holds earlier turns' files and staged outputs).
    /// `image_generate`'s `current_attachment` counts the images among them.
    pub attachments: Vec<String>,
}

impl Default for ToolContext {
    fn default() -> Self {
        ToolContext {
            workspace: None,
            user: "local".into(),
            conversation: "default".into(),
            cancel: CancellationToken::new(),
            call_id: None,
            deadline: None,
            attachments: Vec::new(),
        }
    }
}

/// Why a tool call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The tool's own failure ("repository not found"): the text goes back to the model inside
    /// `<tool_error>` and the run continues.
    #[error("{0}")]
    Tool(String),
    /// A failure of the machinery behind the tool (a crashed server, a broken transport): the
    /// model only gets the seed's sanitized "Tool execution failed" sentence; the detail goes to
    /// the operator log.
    #[error("internal failure: {0}")]
    Internal(String),
    /// The tool's own failure that may not happen again ("could not be loaded right now"): shown
    /// to the model like [`ToolError::Tool`], but the same call repeated later runs again instead
    /// of being skipped as a duplicate.
    #[error("{0}")]
    Transient(String),
    /// No capacity for the tool right now (every interpreter the server allows is busy with
    /// other conversations): the model is shown the message, the run stops with
    /// [`crate::Outcome::Overloaded`], and a server tells its client to come back later.
    #[error("{0}")]
    Overloaded(String),
}

impl ToolError {
    /// A tool's own error, shown to the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError::Tool(message.into())
    }

    /// A machinery failure, hidden from the model.
    pub fn internal(detail: impl Into<String>) -> Self {
        ToolError::Internal(detail.into())
    }

    /// A tool's own error that trying again may cure, shown to the model.
    pub fn transient(message: impl Into<String>) -> Self {
        ToolError::Transient(message.into())
    }

    /// No capacity for the tool right now: the run stops (see [`ToolError::Overloaded`]).
    pub fn overloaded(message: impl Into<String>) -> Self {
        ToolError::Overloaded(message.into())
    }

    /// Whether the same call may succeed when tried again (internal failures, transient errors,
    /// no capacity).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ToolError::Internal(_) | ToolError::Transient(_) | ToolError::Overloaded(_)
        )
    }
}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError::Tool(s)
    }
}

impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        ToolError::Tool(s.to_owned())
    }
}

/// What a tool's call comes to: its output for the model, or why it failed. Every tool's `invoke`
/// returns one, so the type is named once here.
pub type ToolFuture = BoxFuture<'static, Result<String, ToolError>>;

/// A tool.
pub trait Tool: Send + Sync + 'static {
    /// Name, description and JSON schema, as the model sees them.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool. Arguments have been validated against the schema.
    fn invoke(&self, arguments: Value, context: ToolContext) -> ToolFuture;

    /// Whether a call needs the user's approval before it runs (subject to the approval policy).
    fn requires_approval(&self) -> bool {
        false
    }

    /// The most characters of output the model sees (the rest is cut, with a note giving the
    /// total); `None` uses the toolbox's default.
    fn max_output_chars(&self) -> Option<usize> {
        None
    }

    /// A limit of this tool's own for one call; the toolbox uses the smaller of this and its
    /// timeout, and a call over it gets the seed's timed-out sentence.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// The risk of one call (arguments already validated). A tool that reports one is governed by
    /// `[agent.approvals.risk]` instead of `default` (see [`crate::approval`]); `None`: the
    /// tool's calls carry no risk of their own.
    fn risk(&self, _arguments: &Value) -> Option<RiskAssessment> {
        None
    }

    /// Whether an instruction injected into tool output could abuse this tool (a memory write, a
    /// shell command): once tool output has reached the model, its calls are tightened to at least
    /// `[agent.approvals] after_tool_output` (docs/src/security.md, "Tool output is untrusted").
    fn guarded_after_tool_output(&self) -> bool {
        false
    }
}

type Handler = dyn Fn(Value, ToolContext) -> ToolFuture + Send + Sync;

type RiskFn = dyn Fn(&Value) -> Option<RiskAssessment> + Send + Sync;

/// A tool made from a closure:
///
/// ```
/// use serde_json::json;
/// use toolbridge_agent::tool::{FnTool, ToolError};
///
/// let add = FnTool::new(
///     "add",
///     "Add two integers.",
///     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
///     |args, _ctx| async move {
///         let a = args["a"].as_i64().ok_or("a must be an integer")?;
///         let b = args["b"].as_i64().ok_or("b must be an integer")?;
///         Ok::<_, ToolError>((a + b).to_string())
///     },
/// );
/// ```
#[derive(Clone)]
pub struct FnTool {
    spec: ToolSpec,
    handler: Arc<Handler>,
    approval: bool,
    max_output: Option<usize>,
    risk: Option<Arc<RiskFn>>,
    guarded: bool,
}

impl FnTool {
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        f: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        FnTool {
            spec: ToolSpec::new(name, description, schema),
            handler: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
            approval: false,
            max_output: None,
            risk: None,
            guarded: false,
        }
    }

    /// Calls need approval.
    pub fn requiring_approval(mut self) -> Self {
        self.approval = true;
        self
    }

    /// Output shown to the model is cut after this many characters.
    pub fn with_max_output_chars(mut self, chars: usize) -> Self {
        self.max_output = Some(chars);
        self
    }

    /// Each call's risk comes from `f` (see [`Tool::risk`]).
    pub fn with_risk<F>(mut self, f: F) -> Self
    where
        F: Fn(&Value) -> Option<RiskAssessment> + Send + Sync + 'static,
    {
        self.risk = Some(Arc::new(f));
        self
    }

    /// Calls are tightened after tool output (see [`Tool::guarded_after_tool_output`]).
    pub fn guarded_after_tool_output(mut self) -> Self {
        self.guarded = true;
        self
    }
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, arguments: Value, context: ToolContext) -> ToolFuture {
        (self.handler)(arguments, context)
    }

    fn requires_approval(&self) -> bool {
        self.approval
    }

    fn max_output_chars(&self) -> Option<usize> {
        self.max_output
    }

    fn risk(&self, arguments: &Value) -> Option<RiskAssessment> {
        self.risk.as_ref().and_then(|f| f(arguments))
    }

    fn guarded_after_tool_output(&self) -> bool {
        self.guarded
    }
}
