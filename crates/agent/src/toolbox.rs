//! The toolbox: validates calls and runs tools with timeouts, panic capture, cancellation,
//! approval and output truncation. Whatever happens, a call gets exactly one result.
//!
//! A tool's own error goes to the model as its text. Failures of the machinery — a panic, a timeout,
//! cancellation — reach the model only as the seed's three sanitized sentences; the detail goes to
//! the operator log.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{ToolCall, ToolSpec};

use crate::approval::{ApprovalPolicy, ApprovalRequest, Approvals, Approver, CallFacts};
use crate::tool::{Tool, ToolContext, ToolError};

/// What happened to a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ok,
    /// The tool reported an error of its own.
    ToolError,
    UnknownTool,
    InvalidArguments,
    /// Not approved (by the policy or the user).
    Denied,
    TimedOut,
    /// The tool panicked or crashed.
    Failed,
    Cancelled,
    /// Not run: it repeats an earlier call of this run.
    Duplicate,
    /// Not run: the call budget was spent.
    BudgetExhausted,
    /// Not run: no capacity for the tool right now; the run stops.
    Overloaded,
}

impl CallStatus {
    /// Whether the model sees the result inside `<tool_error>`.
    pub fn is_error(self) -> bool {
        !matches!(
            self,
            CallStatus::Ok | CallStatus::Duplicate | CallStatus::BudgetExhausted
        )
    }
}

/// The result of one call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    pub status: CallStatus,
    /// What the model is shown (truncated, sanitized).
    pub for_model: String,
    /// The complete output, for the transcript.
    pub full: String,
    pub duration: Duration,
    /// The call failed in a way that may not happen again (timed out, an internal failure, a
    /// transient tool error): a repeat of it runs again instead of being skipped.
    pub transient: bool,
}

impl CallResult {
    pub fn note(status: CallStatus, text: impl Into<String>) -> Self {
        let text = text.into();
        CallResult {
            status,
            full: text.clone(),
            for_model: text,
            duration: Duration::ZERO,
            transient: false,
        }
    }
}

/// Registration problems.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolboxError {
    #[error("two tools are named `{0}`")]
    Duplicate(String),
    #[error("a tool has an empty name")]
    EmptyName,
    #[error("the input schema of `{name}` is not a valid JSON schema: {message}")]
    BadSchema { name: String, message: String },
    /// A name or schema providers would refuse (the check the gateway applies to `tools`).
    #[error("tool `{name}`: {error}")]
    Invalid {
        name: String,
        error: toolbridge_protocol::validate::ToolSpecError,
    },
}

/// Defaults for every tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolboxConfig {
    /// A call taking longer than this is stopped (seed 002: 120 s).
    pub timeout: Duration,
    /// Output beyond this many characters is cut, with the seed's note giving the total.
    pub max_output_chars: usize,
}

impl Default for ToolboxConfig {
    fn default() -> Self {
        ToolboxConfig {
            timeout: Duration::from_secs(120),
            max_output_chars: 16_000,
        }
    }
}

/// A source of tools whose list can change while the agent lives (an MCP server that sends
/// `notifications/tools/list_changed`). The loop asks for the list again only when `version`
/// changed, so the tool array stays byte-identical while the list does not change.
pub trait DynamicTools: Send + Sync + 'static {
    /// Grows whenever the list changes.
    fn version(&self) -> u64;
    /// The current tools, in a stable order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    // Shared so that resolving dynamic tools does not recompile the static tools' schemas.
    validator: Option<Arc<jsonschema::Validator>>,
}

/// The tools of a run, in a stable order: the static tools in registration order, then the
/// dynamic sources' tools in the order the sources were added.
#[derive(Default)]
pub struct Toolbox {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    config: ToolboxConfig,
    dynamic: Vec<Arc<dyn DynamicTools>>,
}

impl Toolbox {
    pub fn new(config: ToolboxConfig) -> Self {
        Toolbox {
            entries: Vec::new(),
            index: HashMap::new(),
            config,
            dynamic: Vec::new(),
        }
    }

    /// Adds a source of tools that may change between rounds (see [`DynamicTools`]).
    pub fn add_dynamic(&mut self, source: Arc<dyn DynamicTools>) {
        self.dynamic.push(source);
    }

    /// Whether any dynamic source was added.
    pub fn has_dynamic(&self) -> bool {
        !self.dynamic.is_empty()
    }

    /// The combined version of the dynamic sources: it changes whenever one of them changes
    /// (each only grows).
    pub fn dynamic_version(&self) -> u64 {
        self.dynamic
            .iter()
            .fold(0u64, |sum, d| sum.wrapping_add(d.version()))
    }

    /// A toolbox of plain tools: the static tools plus the dynamic sources' current tools. A
    /// dynamic tool whose name is taken or whose schema does not compile is left out (logged),
    /// so one bad server tool cannot stop a run.
    pub fn resolve(&self) -> Toolbox {
        let mut out = Toolbox {
            entries: self.entries.clone(),
            index: self.index.clone(),
            config: self.config,
            dynamic: Vec::new(),
        };
        for source in &self.dynamic {
            for tool in source.tools() {
                if let Err(e) = out.add(tool) {
                    tracing::warn!(error = %e, "dynamic tool left out");
                }
            }
        }
        out
    }

    pub fn config(&self) -> ToolboxConfig {
        self.config
    }

    /// This toolbox without the tools `approvals` refuses outright
    /// ([`Approvals::denies_outright`]): they are not offered to the model at all, and a call to
    /// one is answered like a call to an unknown tool. `None` when no tool is withheld (the
    /// toolbox can be used as it is). Dynamic sources stay (resolve first to filter their tools).
    pub fn without_denied(&self, approvals: &Approvals) -> Option<Toolbox> {
        let denied =
            |e: &Entry| approvals.denies_outright(&e.tool.spec().name, e.tool.requires_approval());
        if !self.entries.iter().any(denied) {
            return None;
        }
        let mut out = Toolbox {
            entries: Vec::with_capacity(self.entries.len()),
            index: HashMap::with_capacity(self.entries.len()),
            config: self.config,
            dynamic: self.dynamic.clone(),
        };
        for entry in &self.entries {
            if denied(entry) {
                tracing::debug!(tool = %entry.tool.spec().name, "denied by the approval policy: not offered");
                continue;
            }
            out.index
                .insert(entry.tool.spec().name.clone(), out.entries.len());
            out.entries.push(entry.clone());
        }
        Some(out)
    }

    /// The tools `keep` picks, by name, as a toolbox of plain tools (dynamic sources are
    /// resolved first). Tools are shared, not rebuilt, and schemas are not compiled again: a
    /// server keeps one toolbox and gives each request the part it asked for.
    pub fn filtered(&self, keep: impl Fn(&str) -> bool) -> Toolbox {
        let resolved;
        let source = if self.has_dynamic() {
            resolved = self.resolve();
            &resolved
        } else {
            self
        };
        let mut out = Toolbox::new(self.config);
        for entry in &source.entries {
            let name = &entry.tool.spec().name;
            if keep(name) {
                out.index.insert(name.clone(), out.entries.len());
                out.entries.push(entry.clone());
            }
        }
        out
    }

    /// Adds a tool; its schema is compiled now, so a bad schema fails here and not mid-run.
    pub fn add(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolboxError> {
        let name = tool.spec().name.clone();
        if name.trim().is_empty() {
            return Err(ToolboxError::EmptyName);
        }
        if self.index.contains_key(&name) {
            return Err(ToolboxError::Duplicate(name));
        }
        let validator = match &tool.spec().parameters {
            Some(schema) => Some(crate::validators::validator(schema).map_err(|message| {
                ToolboxError::BadSchema {
                    name: name.clone(),
                    message,
                }
            })?),
            None => None,
        };
        toolbridge_protocol::validate::validate_tool(self.entries.len(), tool.spec()).map_err(
            |error| ToolboxError::Invalid {
                name: name.clone(),
                error,
            },
        )?;
        self.index.insert(name, self.entries.len());
        self.entries.push(Entry { tool, validator });
        Ok(())
    }

    /// Adds a tool built from anything implementing [`Tool`].
    pub fn with(mut self, tool: impl Tool) -> Result<Self, ToolboxError> {
        self.add(Arc::new(tool))?;
        Ok(self)
    }

    /// The tool specs, in registration order (stable, so requests are byte-identical every round).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries.iter().map(|e| e.tool.spec().clone()).collect()
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries
            .iter()
            .map(|e| e.tool.spec().name.as_str())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.entries[i].tool)
    }

    /// Checks a call without running it: the tool exists and the arguments match its schema.
    pub fn check(&self, call: &ToolCall) -> Result<(Arc<dyn Tool>, Value), CallResult> {
        let Some(&i) = self.index.get(&call.name) else {
            return Err(CallResult::note(
                CallStatus::UnknownTool,
                texts::unknown_tool(&call.name, &self.names()),
            ));
        };
        let entry = &self.entries[i];
        let invalid = |problems: String| {
            CallResult::note(
                CallStatus::InvalidArguments,
                texts::invalid_arguments(&call.name, &problems),
            )
        };
        let text = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let args: Value = serde_json::from_str(text)
            .map_err(|e| invalid(texts::arguments_not_json(&e.to_string())))?;
        if !args.is_object() {
            return Err(invalid(texts::ARGUMENTS_NOT_OBJECT.to_owned()));
        }
        if let Some(validator) = &entry.validator {
            let problems: Vec<String> = validator
                .iter_errors(&args)
                .take(5)
                .map(|e| texts::schema_problem(&e.to_string(), &e.instance_path().to_string()))
                .collect();
            if !problems.is_empty() {
                return Err(invalid(texts::schema_problems(&problems)));
            }
        }
        Ok((Arc::clone(&entry.tool), args))
    }

    /// Runs a call: checks it, asks for approval when the policy says so, and runs the tool under
    /// the timeout, catching panics and honouring cancellation. For a call made before any tool
    /// output reached the model (see [`Toolbox::execute_after`]).
    pub async fn execute(
        &self,
        call: &ToolCall,
        context: &ToolContext,
        approvals: &Approvals,
        approver: &dyn Approver,
        timeout: Duration,
    ) -> CallResult {
        self.execute_after(call, context, approvals, approver, timeout, false)
            .await
    }

    /// [`Toolbox::execute`], saying whether tool output had already reached the model when it asked
    /// for this call: then guarded tools are tightened (docs/src/security.md, "Tool output is
    /// untrusted", [`crate::approval`]).
    pub async fn execute_after(
        &self,
        call: &ToolCall,
        context: &ToolContext,
        approvals: &Approvals,
        approver: &dyn Approver,
        timeout: Duration,
        after_tool_output: bool,
    ) -> CallResult {
        use tracing::Instrument;
        // The `execute_tool {name}` span of the GenAI semantic conventions (exported by the
        // CLI's `[telemetry]`); arguments and results only when content is captured.
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", call.name),
            otel.kind = "internal",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let capture = toolbridge_protocol::telemetry::capture_content() && !span.is_disabled();
        if capture {
            span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
        }
        let result = self
            .execute_in_span(
                call,
                context,
                approvals,
                approver,
                timeout,
                after_tool_output,
            )
            .instrument(span.clone())
            .await;
        if result.status.is_error() {
            span.record("error.type", format!("{:?}", result.status).as_str());
        }
        if capture {
            span.record("gen_ai.tool.call.result", result.for_model.as_str());
        }
        result
    }

    async fn execute_in_span(
        &self,
        call: &ToolCall,
        context: &ToolContext,
        approvals: &Approvals,
        approver: &dyn Approver,
        timeout: Duration,
        after_tool_output: bool,
    ) -> CallResult {
        let started = Instant::now();
        let (tool, args) = match self.check(call) {
            Ok(ok) => ok,
            Err(result) => return result,
        };
        let risk = tool.risk(&args);
        let facts = CallFacts {
            requires_approval: tool.requires_approval(),
            risk: risk.as_ref(),
            guarded: tool.guarded_after_tool_output(),
            after_tool_output,
        };
        let policy = approvals.policy_for(&call.name, &facts);
        if let Some(r) = &risk {
            tracing::info!(tool = %call.name, id = %call.id, risk = %r.effective, ?policy, after_tool_output, "call risk");
        }
        match policy {
            ApprovalPolicy::Allow => {}
            ApprovalPolicy::Deny => {
                return CallResult::note(CallStatus::Denied, texts::APPROVAL_DENIED)
            }
            ApprovalPolicy::Ask => {
                let request = ApprovalRequest {
                    call,
                    risk: risk.as_ref(),
                    after_tool_output,
                };
                if !approver.approve_request(&request).await {
                    return CallResult::note(CallStatus::Denied, texts::APPROVAL_DENIED);
                }
            }
        }
        let limit = tool
            .max_output_chars()
            .unwrap_or(self.config.max_output_chars);
        let timeout = tool.timeout().map_or(timeout, |own| own.min(timeout));
        let cancel = context.cancel.child_token();
        let ctx = ToolContext {
            cancel: cancel.clone(),
            call_id: Some(call.id.clone()),
            deadline: Instant::now().checked_add(timeout),
            ..context.clone()
        };
        let mut task = tokio::spawn(tracing::Instrument::in_current_span(tool.invoke(args, ctx)));
        let outcome = tokio::select! {
            joined = tokio::time::timeout(timeout, &mut task) => match joined {
                Ok(Ok(Ok(output))) => Ok(output),
                Ok(Ok(Err(ToolError::Tool(message)))) => Err((CallStatus::ToolError, message, false)),
                Ok(Ok(Err(ToolError::Transient(message)))) => {
                    tracing::info!(tool = %call.name, id = %call.id, %message, "tool failed transiently");
                    Err((CallStatus::ToolError, message, true))
                }
                Ok(Ok(Err(ToolError::Overloaded(message)))) => {
                    tracing::warn!(tool = %call.name, id = %call.id, %message, "no capacity for the tool: the run stops");
                    Err((CallStatus::Overloaded, message, true))
                }
                Ok(Ok(Err(ToolError::Internal(detail)))) => {
                    tracing::error!(tool = %call.name, id = %call.id, %detail, "tool failed internally");
                    Err((CallStatus::Failed, texts::ERROR_FAILED.to_owned(), true))
                }
                Ok(Err(join)) if join.is_panic() => {
                    tracing::error!(tool = %call.name, id = %call.id, panic = %panic_message(join), "tool panicked");
                    Err((CallStatus::Failed, texts::ERROR_FAILED.to_owned(), true))
                }
                Ok(Err(join)) => {
                    tracing::error!(tool = %call.name, id = %call.id, error = %join, "tool task failed");
                    Err((CallStatus::Failed, texts::ERROR_FAILED.to_owned(), true))
                }
                Err(_) => {
                    tracing::warn!(tool = %call.name, id = %call.id, ?timeout, "tool timed out");
                    Err((CallStatus::TimedOut, texts::ERROR_TIMED_OUT.to_owned(), true))
                }
            },
            () = context.cancel.cancelled() => {
                tracing::info!(tool = %call.name, id = %call.id, "tool call cancelled");
                Err((CallStatus::Cancelled, texts::ERROR_CANCELED.to_owned(), false))
            }
        };
        if outcome.is_err() {
            cancel.cancel();
            task.abort();
        }
        let duration = started.elapsed();
        match outcome {
            Ok(full) => {
                let for_model = truncate(&full, limit);
                CallResult {
                    status: CallStatus::Ok,
                    for_model,
                    full,
                    duration,
                    transient: false,
                }
            }
            Err((status, text, transient)) => {
                let for_model = truncate(&text, limit);
                CallResult {
                    status,
                    for_model,
                    full: text,
                    duration,
                    transient,
                }
            }
        }
    }
}

fn panic_message(join: tokio::task::JoinError) -> String {
    match join.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".to_owned()),
        Err(e) => e.to_string(),
    }
}

/// Cuts output after `limit` characters and appends the seed's note with the total.
pub fn truncate(output: &str, limit: usize) -> String {
    match output.char_indices().nth(limit) {
        None => output.to_owned(),
        Some((cut, _)) => {
            let total = output.chars().count();
            let mut s = String::with_capacity(cut + 48);
            s.push_str(&output[..cut]);
            s.push_str(&texts::truncation_note(total));
            s
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde_json::json;

    use super::*;
    use crate::approval::{AllowAll, DenyAll};
    use crate::tool::{FnTool, ToolError};

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn toolbox() -> Toolbox {
        Toolbox::new(ToolboxConfig::default())
            .with(FnTool::new(
                "echo",
                "Echo.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                |args, _| async move { Ok(args["text"].as_str().unwrap_or_default().to_owned()) },
            ))
            .unwrap()
    }

    async fn run(tb: &Toolbox, c: &ToolCall) -> CallResult {
        tb.execute(
            c,
            &ToolContext::default(),
            &Approvals::default(),
            &DenyAll,
            Duration::from_secs(5),
        )
        .await
    }

    #[tokio::test]
    async fn unknown_tools_and_bad_arguments_are_answered() {
        let tb = toolbox();
        let r = run(&tb, &call("ecko", "{}")).await;
        assert_eq!(r.status, CallStatus::UnknownTool);
        assert_eq!(
            r.for_model,
            "There is no tool named \"ecko\". The available tools are: echo."
        );
        let r = run(&tb, &call("echo", "{}")).await;
        assert_eq!(r.status, CallStatus::InvalidArguments);
        assert!(
            r.for_model
                .starts_with("The arguments for echo are invalid: "),
            "{}",
            r.for_model
        );
        assert!(
            r.for_model.contains("\"text\" is a required property"),
            "{}",
            r.for_model
        );
        assert_eq!(
            run(&tb, &call("echo", "[1]")).await.status,
            CallStatus::InvalidArguments
        );
        assert_eq!(
            run(&tb, &call("echo", "{oops")).await.status,
            CallStatus::InvalidArguments
        );
        assert_eq!(
            run(&tb, &call("echo", r#"{"text":"hi"}"#)).await.for_model,
            "hi"
        );
    }

    #[tokio::test]
    async fn registration_refuses_duplicates_and_bad_schemas() {
        let mut tb = toolbox();
        let dup = FnTool::new("echo", "", json!({}), |_, _| async { Ok(String::new()) });
        assert_eq!(
            tb.add(Arc::new(dup)),
            Err(ToolboxError::Duplicate("echo".into()))
        );
        let bad = FnTool::new("bad", "", json!({"type": 12}), |_, _| async {
            Ok(String::new())
        });
        assert!(matches!(
            tb.add(Arc::new(bad)),
            Err(ToolboxError::BadSchema { .. })
        ));
        // Issue 13 item 6: the gateway's check of names and schemas applies here too.
        for (name, schema) in [
            ("</tool_call>", json!({})),
            ("ok_name", json!({"type": "string"})),
        ] {
            let t = FnTool::new(name, "", schema, |_, _| async { Ok(String::new()) });
            assert!(
                matches!(tb.add(Arc::new(t)), Err(ToolboxError::Invalid { .. })),
                "{name}"
            );
        }
    }

    #[tokio::test]
    async fn approval_policy_and_approver() {
        let tb = Toolbox::new(ToolboxConfig::default())
            .with(
                FnTool::new("rm", "", json!({"type": "object"}), |_, _| async {
                    Ok("done".into())
                })
                .requiring_approval(),
            )
            .unwrap();
        let c = call("rm", "{}");
        let ctx = ToolContext::default();
        let t = Duration::from_secs(1);
        let r = tb
            .execute(&c, &ctx, &Approvals::default(), &DenyAll, t)
            .await;
        assert_eq!(
            (r.status, r.for_model.as_str()),
            (CallStatus::Denied, texts::APPROVAL_DENIED)
        );
        assert_eq!(
            tb.execute(&c, &ctx, &Approvals::default(), &AllowAll, t)
                .await
                .status,
            CallStatus::Ok
        );
        let mut deny = Approvals::default();
        deny.per_tool.insert("rm".into(), ApprovalPolicy::Deny);
        assert_eq!(
            tb.execute(&c, &ctx, &deny, &AllowAll, t).await.status,
            CallStatus::Denied
        );
    }

    /// How a call to a tool that fails with `error` finishes, and what the model is shown.
    async fn failed_call(error: ToolError) -> (CallStatus, String) {
        let tb = Toolbox::new(ToolboxConfig::default())
            .with(FnTool::new(
                "failing",
                "",
                json!({"type": "object"}),
                move |_, _| {
                    let error = error.clone();
                    async move { Err::<String, _>(error) }
                },
            ))
            .unwrap();
        let r = run(&tb, &call("failing", "{}")).await;
        (r.status, r.for_model)
    }

    #[tokio::test]
    async fn tool_errors_keep_their_text() {
        assert_eq!(
            failed_call(ToolError::new("repository not found")).await,
            (CallStatus::ToolError, "repository not found".to_owned())
        );
    }

    #[tokio::test]
    async fn internal_failures_are_sanitized() {
        assert_eq!(
            failed_call(ToolError::internal("transport closed: /run/secret.sock")).await,
            (CallStatus::Failed, texts::ERROR_FAILED.to_owned())
        );
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("héllo", 10), "héllo");
        assert_eq!(
            truncate("héllo wörld", 5),
            "héllo\n\n... (output truncated, total 11 chars)"
        );
    }
}
