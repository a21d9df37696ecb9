//! The conversation workspace of a CLI run: its id (`--conversation`, else a new one), the files
//! `--attach` copies into `uploads/`, the idle-workspace clean-up, and the report of what the
//! model wrote to `outputs/`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use toolbridge_protocol::texts;
use toolbridge_tools::workspace::{self, OutputFile, OutputsSnapshot};
use toolbridge_tools::ToolsConfig;

/// `--conversation` and `--attach`, shared by `run` and `chat`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WorkspaceArgs {
    /// The conversation id: its workspace (uploads/, downloads/, outputs/) is kept between runs
    /// under this name. Default: a new conversation.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Copy a file into the conversation's uploads/ folder and tell the model about it (repeatable).
    #[arg(long = "attach", value_name = "FILE")]
    pub attach: Vec<PathBuf>,
}

/// The workspace side of one CLI session.
pub struct RunWorkspace {
    pub conversation: String,
    /// The host folder (created on first use by a tool or by `--attach`).
    pub path: Option<PathBuf>,
    /// The names `--attach` gave the files in `uploads/`, in order: the first turn's
    /// attachments (`ToolContext::attachments`).
    pub attached: Vec<String>,
    before: OutputsSnapshot,
    tools: ToolsConfig,
}

impl RunWorkspace {
    /// The conversation of a run: `--conversation`, else a new id (checked by
    /// [`RunWorkspace::start`]).
    pub fn conversation(args: &WorkspaceArgs) -> String {
        args.conversation
            .clone()
            .unwrap_or_else(workspace::new_conversation_id)
    }

    /// Checks the conversation id (from [`RunWorkspace::conversation`]), removes idle
    /// workspaces (never this one) and copies attachments. Returns the note for the model
    /// listing the attachments (empty without any).
    pub fn start(
        args: &WorkspaceArgs,
        conversation: String,
        tools: &ToolsConfig,
    ) -> anyhow::Result<(RunWorkspace, String)> {
        if !workspace::valid_conversation(&conversation) {
            anyhow::bail!(
                "--conversation {conversation:?}: use 1-100 letters, digits, '-', '_' or '.' (not starting with '.')"
            );
        }
        if tools.workspace.is_none() {
            if let (Some(root), Some(idle)) =
                (tools.workspaces.root(), tools.workspaces.idle_limit())
            {
                for gone in workspace::clean_idle(&root, idle, Some(&conversation)) {
                    eprintln!(
                        "removed the idle workspace of conversation {}",
                        gone.conversation
                    );
                }
            }
        }
        let path = toolbridge_tools::workspace_for(tools, &conversation);
        let mut note = String::new();
        let mut before = OutputsSnapshot::default();
        let mut attached = Vec::new();
        // Opened (and marked) up front when a tool will use it: a folder the tools created on
        // their own would have no marker, so the clean-up could never remove it and the next
        // run could not tell it from someone else's folder.
        if !args.attach.is_empty()
            || tools.uses_workspace()
            || path.as_deref().is_some_and(Path::exists)
        {
            let ws = toolbridge_tools::open_workspace(tools, &conversation)
                .context("opening the conversation workspace")?;
            before = ws.outputs();
            let mut lines = Vec::new();
            for file in &args.attach {
                let shown = ws
                    .attach(file)
                    .with_context(|| format!("--attach {}", file.display()))?;
                let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
                eprintln!("attached {} as {shown}", file.display());
                if let Some(name) = shown.rsplit('/').next() {
                    attached.push(name.to_owned());
                }
                lines.push(texts::attached_file_line(&shown, size));
            }
            if !lines.is_empty() {
                note = texts::attachments_note(&lines);
            }
        }
        Ok((
            RunWorkspace {
                conversation,
                path,
                attached,
                before,
                tools: tools.clone(),
            },
            note,
        ))
    }

    /// The files written to `outputs/` since the start (or the last call), marking the workspace
    /// as used; nothing when no tool created the workspace.
    pub fn take_outputs(&mut self) -> Vec<OutputFile> {
        if !self.path.as_deref().is_some_and(Path::exists) {
            return Vec::new();
        }
        match toolbridge_tools::open_workspace(&self.tools, &self.conversation) {
            Ok(ws) => {
                let new = ws.new_outputs(&self.before);
                self.before = ws.outputs();
                new
            }
            Err(e) => {
                eprintln!("toolbridge: warning: workspace: {e}");
                Vec::new()
            }
        }
    }
}

/// Prints the produced files to standard error.
pub fn report_outputs(files: &[OutputFile]) {
    if files.is_empty() {
        return;
    }
    eprintln!("files written to outputs/:");
    for f in files {
        eprintln!("  {}  ({} bytes)", f.path.display(), f.size);
    }
}
