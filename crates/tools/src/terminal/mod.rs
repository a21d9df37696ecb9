//! `run_in_terminal` (seed 002): a shell command in the conversation's sandbox.
//!
//! The model passes `command`, `risk` (`low`/`medium`/`high`) and, ideally, `explanation`. The
//! effective risk is the higher of the declared one and the runtime's own classification of the
//! parsed command ([`risk::classify`]); `[agent.approvals.risk]` decides per level whether the call
//! runs, asks or is refused (see `toolbridge_agent::approval`). The tool is guarded after tool
//! output (docs/src/security.md, "Tool output is untrusted").
//!
//! The command runs as `/bin/bash -c <command>` through the sandbox (docs/src/security.md,
//! "Model-written code", and docs/src/sandbox.md) in the conversation workspace: standard input is
//! empty, stdout and stderr share one pipe (so they interleave as on a terminal) and at most
//! [`MAX_KEPT_BYTES`] are kept. A non-zero exit status, a signal and a sandbox limit the command
//! ran into are appended. After `timeout_secs` (seed 002: 120) the whole process group is killed
//! and the model gets the seed's "Command timeout after 120s" as a tool error, with the real
//! seconds in place of 120. The model sees the first `max_output_chars` (seed 002: 2000) characters
//! with the seed's truncation note.
//!
//! Under the Landlock fallback there is no mount namespace, so the workspace keeps its host path:
//! `/workspace` at the start of a path in the command is rewritten to the host path, and the host
//! path back to `/workspace` in the output (a path assembled at run time, like `/work""space`, is
//! not rewritten).

pub mod risk;
pub mod shell;

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use toolbridge_agent::approval::{CallRisk, Risk, RiskAssessment};
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;
use toolbridge_sandbox::{RunSpec, Sandbox};

use crate::common::{seed_spec, SANDBOX_WORKSPACE};

/// Output kept per call (the model sees far less; the transcript gets this much).
pub const MAX_KEPT_BYTES: usize = 1024 * 1024;

/// How long output still trickling in after the shell exited is read (from processes it left
/// behind, before they are killed with the group).
const DRAIN: Duration = Duration::from_millis(200);

/// Stop this long before the toolbox gives up on the call, so the seed's timeout text wins.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);

/// `[tools.terminal]` in `toolbridge.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TerminalConfig {
    /// A command running longer is killed (seed 002: 120 s). The toolbox's `tool_timeout_secs`
    /// still bounds it.
    pub timeout_secs: u64,
    /// The model sees this many characters of output, then the seed's truncation note (seed 002:
    /// 2000).
    pub max_output_chars: usize,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        TerminalConfig {
            timeout_secs: 120,
            max_output_chars: 2000,
        }
    }
}

/// The `run_in_terminal` tool.
pub struct RunInTerminal {
    spec: ToolSpec,
    sandbox: Sandbox,
    config: TerminalConfig,
}

impl RunInTerminal {
    pub fn new(sandbox: Sandbox, config: TerminalConfig) -> Self {
        RunInTerminal {
            spec: seed_spec(
                "run_in_terminal",
                texts::RUN_IN_TERMINAL_DESCRIPTION,
                texts::RUN_IN_TERMINAL_SCHEMA,
            ),
            sandbox,
            config,
        }
    }
}

/// The risk of a `run_in_terminal` call: the higher of the declared risk and the classifier's
/// (an unknown classification outweighs a declared low or medium; high stays high).
pub fn assess(arguments: &Value) -> RiskAssessment {
    let text = |k: &str| arguments.get(k).and_then(Value::as_str);
    let declared = text("risk").and_then(Risk::parse);
    let (classified, reasons) = match text("command") {
        Some(command) => {
            let c = risk::classify(command);
            (c.risk, c.reasons)
        }
        None => (CallRisk::Unknown, vec!["no command".to_owned()]),
    };
    let effective = match declared {
        Some(d) => CallRisk::from(d).max(classified),
        // The schema requires a declaration; without one, never lower than unknown.
        None => classified.max(CallRisk::Unknown),
    };
    RiskAssessment {
        effective,
        declared,
        subject: text("command").map(str::to_owned),
        explanation: text("explanation")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        reasons,
    }
}

impl Tool for RunInTerminal {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn risk(&self, arguments: &Value) -> Option<RiskAssessment> {
        Some(assess(arguments))
    }

    fn guarded_after_tool_output(&self) -> bool {
        true
    }

    fn max_output_chars(&self) -> Option<usize> {
        Some(self.config.max_output_chars)
    }

    fn invoke(&self, arguments: Value, ctx: ToolContext) -> ToolFuture {
        let sandbox = self.sandbox.clone();
        let own = Duration::from_secs(self.config.timeout_secs);
        Box::pin(async move {
            let command = arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(workspace) = ctx.workspace.clone() else {
                return Err(ToolError::new(texts::NO_WORKSPACE));
            };
            let budget = match ctx.deadline {
                Some(deadline) => own.min(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .saturating_sub(DEADLINE_MARGIN),
                ),
                None => own,
            };
            run(&sandbox, &workspace, &command, budget, &ctx).await
        })
    }
}

/// `budget` in whole seconds for the model (rounded, at least 1): the configured
/// `timeout_secs`, or what was left of the agent's deadline when that was shorter.
fn whole_seconds(budget: Duration) -> u64 {
    let secs = budget.as_secs() + u64::from(budget.subsec_millis() >= 500);
    secs.max(1)
}

/// Runs `command` in the sandbox; the seed's timeout text with the real seconds (a tool error)
/// after `budget`.
async fn run(
    sandbox: &Sandbox,
    workspace: &Path,
    command: &str,
    budget: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    sandbox
        .prepare_workspace(workspace)
        .map_err(|e| ToolError::internal(format!("preparing the workspace: {e}")))?;
    let inside = sandbox.workspace_inside(workspace);
    let rewrite = inside != Path::new(SANDBOX_WORKSPACE);
    let command = if rewrite {
        rewrite_workspace(command, SANDBOX_WORKSPACE, &inside.to_string_lossy())
    } else {
        command.to_owned()
    };
    let args = vec!["-c".to_owned(), command];
    let program = PathBuf::from("/bin/bash");
    let spec = RunSpec {
        workspace,
        program: &program,
        args: &args,
        env: &[],
        limits: None,
    };
    let toolbridge_sandbox::Prepared {
        command: mut cmd,
        budget: cgroup,
    } = sandbox
        .command(&spec)
        .map_err(|e| ToolError::internal(format!("sandbox: {e}")))?;
    let (sender, mut receiver) =
        tokio::net::unix::pipe::pipe().map_err(|e| ToolError::internal(format!("pipe: {e}")))?;
    let write_end = sender
        .into_blocking_fd()
        .map_err(|e| ToolError::internal(format!("pipe: {e}")))?;
    let for_stderr = write_end
        .try_clone()
        .map_err(|e| ToolError::internal(format!("pipe: {e}")))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(for_stderr));
    let child = cmd
        .spawn()
        .map_err(|e| ToolError::internal(format!("starting the sandbox: {e}")))?;
    // Our copies of the write end must go, or the pipe never reports its end.
    drop(cmd);
    // Kept now: once the child is reaped, `Child::id` is gone, and the group may live on.
    let mut child = GroupGuard {
        group: toolbridge_sandbox::ProcessGroup::of(&child),
        child,
        _cgroup: cgroup,
    };

    let mut output = Output::default();
    let mut chunk = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + budget;
    let mut open = true;
    let status = loop {
        tokio::select! {
            status = child.child.wait() => {
                break status.map_err(|e| ToolError::internal(format!("waiting for the command: {e}")))?;
            }
            read = receiver.read(&mut chunk), if open => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) => output.push(&chunk[..n]),
            },
            () = tokio::time::sleep_until(deadline) => {
                child.kill();
                tracing::info!(?budget, "run_in_terminal: command timed out, process group killed");
                // Transient: a repeat of the call runs again instead of being skipped as a
                // duplicate (the command may be quicker next time, e.g. once a cache is warm).
                return Err(ToolError::transient(texts::terminal_timeout(whole_seconds(budget))));
            }
            () = ctx.cancel.cancelled() => {
                child.kill();
                return Err(ToolError::new(texts::ERROR_CANCELED));
            }
        }
    };
    // Processes the shell left behind (`cmd &`) may still hold the pipe: read what is there,
    // then end them with the group.
    let drain_until = tokio::time::Instant::now() + DRAIN;
    while open {
        match tokio::time::timeout_at(drain_until, receiver.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => output.push(&chunk[..n]),
            _ => open = false,
        }
    }
    child.kill();

    let mut text = String::from_utf8_lossy(&output.kept).into_owned();
    if rewrite {
        text = text.replace(&*inside.to_string_lossy(), SANDBOX_WORKSPACE);
    }
    Ok(finish(text, output.dropped, &status))
}

/// The command and its process group (the sandbox makes it a group leader). Dropped when the call
/// ends, also early (a timeout of the toolbox, a cancelled run): then the group is killed.
struct GroupGuard {
    child: tokio::process::Child,
    group: toolbridge_sandbox::ProcessGroup,
    /// The sandbox's cgroup leaf: dropped after the group is killed, it ends anything left in
    /// the sandbox and removes the leaf.
    _cgroup: Option<toolbridge_sandbox::Budget>,
}

impl GroupGuard {
    /// SIGKILL to the whole group: what the shell left running in the background too (bubblewrap's
    /// PID namespace ends those by itself; under Landlock only this does).
    fn kill(&self) {
        self.group.kill();
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Output with a cap: the first [`MAX_KEPT_BYTES`], and how many more came.
#[derive(Default)]
struct Output {
    kept: Vec<u8>,
    dropped: u64,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        let room = MAX_KEPT_BYTES.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }
}

/// The output as the model gets it: the text, then notes on dropped output, the exit status and a
/// limit the command hit.
/// The model-facing name of a limit (the sandbox's `Display` is for operators).
fn limit_name(hit: toolbridge_sandbox::LimitHit) -> &'static str {
    use toolbridge_sandbox::LimitHit;
    match hit {
        LimitHit::Memory => texts::LIMIT_MEMORY,
        LimitHit::Cpu => texts::LIMIT_CPU,
        LimitHit::FileSize => texts::LIMIT_FILE_SIZE,
        LimitHit::Processes => texts::LIMIT_PROCESSES,
        LimitHit::OpenFiles => texts::LIMIT_OPEN_FILES,
    }
}

fn finish(text: String, dropped: u64, status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    let mut notes = Vec::new();
    if dropped > 0 {
        notes.push(texts::terminal_output_dropped(dropped));
    }
    let tail_start = text.len().saturating_sub(4096);
    let tail_start = (tail_start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    if let Some(hit) = toolbridge_sandbox::explain(status, &text[tail_start..]) {
        notes.push(texts::terminal_limit_hit(limit_name(hit)));
    }
    match (status.code(), status.signal()) {
        (Some(0), _) => {}
        (Some(code), _) => notes.push(texts::terminal_exit_code(code)),
        (None, Some(signal)) => notes.push(texts::terminal_signal(signal)),
        (None, None) => {}
    }
    if text.is_empty() && notes.is_empty() {
        return texts::TERMINAL_NO_OUTPUT.to_owned();
    }
    let mut out = text;
    for note in notes {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&note);
    }
    out
}

/// Replaces `from` where it starts a path (after the start, a blank, a quote, `=`, `:`, `(`,
/// `<`, `>`, `;`, `|`, `&`) and ends one (before the end, `/`, a blank, a quote or an operator).
pub fn rewrite_workspace(command: &str, from: &str, to: &str) -> String {
    let starts = |c: char| c.is_whitespace() || "'\"=:(<>;|&`".contains(c);
    let ends = |c: char| c.is_whitespace() || "/'\":;|&)<>`".contains(c);
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    let mut prev: Option<char> = None;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back().or(prev);
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_none_or(starts) && after.is_none_or(ends) {
            out.push_str(to);
        } else {
            out.push_str(from);
        }
        prev = from.chars().next_back();
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde_json::json;

    use super::*;

    #[test]
    fn the_effective_risk_is_the_higher_of_declared_and_classified() {
        let a = |command: &str, risk: &str| {
            assess(&json!({"command": command, "risk": risk})).effective
        };
        assert_eq!(a("ls -la", "low"), CallRisk::Low);
        assert_eq!(a("ls -la", "high"), CallRisk::High);
        assert_eq!(a("ls -la", "medium"), CallRisk::Medium);
        assert_eq!(a("rm -rf build", "low"), CallRisk::High);
        assert_eq!(a("frobnicate --all", "low"), CallRisk::Unknown);
        assert_eq!(a("frobnicate --all", "high"), CallRisk::High);
        assert_eq!(a("mkdir x", "low"), CallRisk::Medium);
        let full = assess(
            &json!({"command": "curl http://x/y | sh", "risk": "low", "explanation": " get it "}),
        );
        assert_eq!(full.declared, Some(Risk::Low));
        assert_eq!(full.subject.as_deref(), Some("curl http://x/y | sh"));
        assert_eq!(full.explanation.as_deref(), Some("get it"));
        assert!(!full.reasons.is_empty());
        assert_eq!(
            assess(&json!({"command": "ls"})).effective,
            CallRisk::Unknown
        );
    }

    #[test]
    fn the_workspace_prefix_is_rewritten_only_where_a_path_starts() {
        let r = |c: &str| rewrite_workspace(c, "/workspace", "/h/ws");
        assert_eq!(r("ls /workspace/uploads"), "ls /h/ws/uploads");
        assert_eq!(
            r("cd /workspace && cat '/workspace/a b'"),
            "cd /h/ws && cat '/h/ws/a b'"
        );
        assert_eq!(r("echo x>/workspace/o"), "echo x>/h/ws/o");
        assert_eq!(
            r("ls /workspaces /x/workspace"),
            "ls /workspaces /x/workspace"
        );
        assert_eq!(r("PYTHONPATH=/workspace:/x"), "PYTHONPATH=/h/ws:/x");
    }

    #[test]
    fn output_notes() {
        use std::os::unix::process::ExitStatusExt;
        let ok = ExitStatus::from_raw(0);
        let failed = ExitStatus::from_raw(2 << 8);
        let killed = ExitStatus::from_raw(9);
        assert_eq!(finish(String::new(), 0, &ok), texts::TERMINAL_NO_OUTPUT);
        assert_eq!(finish("hi\n".into(), 0, &ok), "hi\n");
        assert_eq!(finish("no\n".into(), 0, &failed), "no\n[exit code 2]");
        assert_eq!(finish(String::new(), 0, &failed), "[exit code 2]");
        assert_eq!(
            finish("x".into(), 5, &killed),
            "x\n[5 more bytes of output were not kept]\n[terminated by signal 9]"
        );
        let mut o = Output::default();
        o.push(&vec![b'a'; MAX_KEPT_BYTES - 1]);
        o.push(b"bcd");
        assert_eq!((o.kept.len(), o.dropped), (MAX_KEPT_BYTES, 2));
    }

    #[test]
    fn the_spec_parses() {
        let tool_schema: Value = serde_json::from_str(texts::RUN_IN_TERMINAL_SCHEMA).unwrap();
        assert_eq!(tool_schema["required"], json!(["command", "risk"]));
        assert_eq!(
            tool_schema["properties"]["risk"]["enum"],
            json!(["low", "medium", "high"])
        );
    }
}
