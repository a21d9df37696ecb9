//! The workspace quota (`[tools.workspaces] max_size_mb`): the tools that run code
//! (`python_execute`, `run_in_terminal`) are wrapped so that a call in a workspace holding more
//! than the quota is refused with a text telling the model to delete files, and a call after
//! which the workspace is over the quota says so in its result.
//!
//! Sizes are measured by [`crate::workspace::disk_usage`] (allocated bytes, walked by
//! descriptor: sandboxed code may have planted links, which are never followed). The sandbox's
//! per-file limit bounds what one call can write; the quota bounds what calls keep. While over
//! the quota a `run_in_terminal` command that only removes files (`rm …`, no shell operators)
//! still runs, so the model can clean up.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use toolbridge_agent::approval::RiskAssessment;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

/// A code-running tool held to the workspace quota.
pub struct WorkspaceQuota {
    inner: Arc<dyn Tool>,
    max_bytes: u64,
}

impl WorkspaceQuota {
    /// `inner` held to `max_bytes` per workspace.
    pub fn new(inner: Arc<dyn Tool>, max_bytes: u64) -> Self {
        WorkspaceQuota { inner, max_bytes }
    }
}

/// Bytes to whole MiB, rounded up (a workspace 1 byte over shows as over).
fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// What the workspace at `path` holds, measured off the async runtime (the walk is I/O).
pub async fn workspace_bytes(path: PathBuf) -> u64 {
    tokio::task::spawn_blocking(move || crate::workspace::disk_usage(&path).bytes)
        .await
        .unwrap_or(0)
}

/// Whether the workspace at `path` holds more than `max_bytes`: `Some(used)` when it does.
pub async fn over_quota(path: &Path, max_bytes: u64) -> Option<u64> {
    let used = workspace_bytes(path.to_path_buf()).await;
    (used > max_bytes).then_some(used)
}

/// A shell command that does nothing but remove files: `rm` and its arguments, with no shell
/// operator, substitution or redirection that could run or write anything else.
pub fn only_removes(command: &str) -> bool {
    const SHELL: &[char] = &[
        ';', '&', '|', '$', '`', '<', '>', '(', ')', '{', '}', '\n', '\r', '\\',
    ];
    let command = command.trim();
    command.split_whitespace().next() == Some("rm") && !command.contains(SHELL)
}

impl Tool for WorkspaceQuota {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn invoke(&self, arguments: Value, context: ToolContext) -> ToolFuture {
        let inner = Arc::clone(&self.inner);
        let max = self.max_bytes;
        Box::pin(async move {
            let Some(workspace) = context.workspace.clone() else {
                return inner.invoke(arguments, context).await;
            };
            let cleanup = arguments
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(only_removes);
            if let (Some(used), false) = (over_quota(&workspace, max).await, cleanup) {
                tracing::info!(workspace = %workspace.display(), used, quota = max, "a call refused: the workspace is over its quota");
                return Err(ToolError::transient(texts::workspace_over_quota(
                    mib(used),
                    mib(max),
                )));
            }
            let mut output = inner.invoke(arguments, context).await?;
            if let Some(used) = over_quota(&workspace, max).await {
                output.push_str("\n\n");
                output.push_str(&texts::workspace_now_over_quota(mib(used), mib(max)));
            }
            Ok(output)
        })
    }

    fn requires_approval(&self) -> bool {
        self.inner.requires_approval()
    }

    fn max_output_chars(&self) -> Option<usize> {
        self.inner.max_output_chars()
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        self.inner.timeout()
    }

    fn risk(&self, arguments: &Value) -> Option<RiskAssessment> {
        self.inner.risk(arguments)
    }

    fn guarded_after_tool_output(&self) -> bool {
        self.inner.guarded_after_tool_output()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::workspace::Workspace;
    use toolbridge_agent::FnTool;

    #[test]
    fn only_plain_rm_commands_count_as_cleanup() {
        assert!(only_removes("rm /workspace/outputs/big.csv"));
        assert!(only_removes("  rm -rf outputs/*  "));
        for not in [
            "rm a; python -c 'x'",
            "rm a && dd if=/dev/zero of=b",
            "rm $(cat list)",
            "rmdir x",
            "echo rm",
            "rm a > b",
        ] {
            assert!(!only_removes(not), "{not}");
        }
    }

    /// A tool that writes `bytes` bytes into the workspace's outputs per call.
    fn writer(bytes: usize) -> Arc<dyn Tool> {
        Arc::new(FnTool::new(
            "writer",
            "writes",
            serde_json::json!({"type": "object"}),
            move |_args: Value, ctx: ToolContext| async move {
                let dir = ctx.workspace.unwrap().join("outputs");
                let n = std::fs::read_dir(&dir).unwrap().count();
                std::fs::write(dir.join(format!("f{n}")), vec![1u8; bytes]).unwrap();
                Ok::<_, ToolError>("written".to_owned())
            },
        ))
    }

    #[tokio::test]
    async fn a_workspace_over_its_quota_is_reported_and_refuses_the_next_run() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c1").unwrap();
        let tool = WorkspaceQuota::new(writer(3 << 20), 5 << 20);
        let ctx = ToolContext {
            workspace: Some(ws.path().to_path_buf()),
            ..ToolContext::default()
        };
        let first = tool.invoke(Value::Null, ctx.clone()).await.unwrap();
        assert_eq!(first, "written");
        // The second write takes the workspace over 5 MiB: said in that call's result…
        let second = tool.invoke(Value::Null, ctx.clone()).await.unwrap();
        assert!(second.contains("more than its quota of 5 MiB"), "{second}");
        // …and the next call is refused, and writes nothing.
        let third = tool.invoke(Value::Null, ctx.clone()).await.unwrap_err();
        assert!(
            matches!(&third, ToolError::Transient(t) if t.contains("quota of 5 MiB") && t.contains("delete")),
            "{third:?}"
        );
        assert_eq!(
            std::fs::read_dir(ws.path().join("outputs"))
                .unwrap()
                .count(),
            2
        );
        // A command that only removes files still reaches the tool (this one writes a third
        // file instead); once files are deleted, code runs again.
        let rm = serde_json::json!({"command": "rm /workspace/outputs/f0"});
        let cleanup = tool.invoke(rm, ctx.clone()).await.unwrap();
        assert!(cleanup.starts_with("written"), "{cleanup}");
        for f in ["f0", "f2"] {
            std::fs::remove_file(ws.path().join("outputs").join(f)).unwrap();
        }
        assert_eq!(tool.invoke(Value::Null, ctx).await.unwrap(), "written");
    }
}
