//! `toolbridge workspaces list|path|clean`: the conversation workspaces on this machine.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use toolbridge_tools::workspace;

use crate::config;

/// Conversation workspaces (uploads/, downloads/, outputs/ per conversation; [tools.workspaces]).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: WorkspacesCommand,
    /// The configuration file.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<std::path::PathBuf>,
}

#[derive(clap::Subcommand)]
enum WorkspacesCommand {
    /// List workspaces, least recently used first, with their age and size.
    List,
    /// Print the folder of a conversation's workspace (an error when it does not exist).
    Path {
        #[arg(value_name = "CONVERSATION")]
        conversation: String,
    },
    /// Remove workspaces not used for N days (default: [tools.workspaces] idle_days).
    Clean {
        #[arg(long, value_name = "N")]
        idle_days: Option<u64>,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = config::load(args.config.as_deref())?;
    let tools = &loaded.config.tools;
    let root = tools
        .workspaces
        .root()
        .context("no data folder: set [tools.workspaces] root, XDG_DATA_HOME or HOME")?;
    match args.command {
        WorkspacesCommand::List => {
            let list = workspace::list(&root);
            if list.is_empty() {
                crate::outln!("(no workspaces under {})", root.display())?;
            }
            for w in list {
                let age = SystemTime::now()
                    .duration_since(w.last_used)
                    .unwrap_or_default()
                    .as_secs();
                crate::outln!(
                    "{}  used {} ago  {} bytes  {}",
                    w.conversation,
                    human_age(age),
                    workspace::disk_usage(&w.path).bytes,
                    w.path.display()
                )?;
            }
        }
        WorkspacesCommand::Path { conversation } => {
            match toolbridge_tools::workspace_for(tools, &conversation) {
                Some(p) if workspace::valid_conversation(&conversation) => {
                    if !p.is_dir() {
                        anyhow::bail!(
                            "no workspace for conversation `{conversation}` (it would be {}; a run with --conversation {conversation} creates it)",
                            p.display()
                        );
                    }
                    crate::outln!("{}", p.display())?
                }
                _ => anyhow::bail!("{conversation:?} is not a conversation id"),
            }
        }
        WorkspacesCommand::Clean { idle_days } => {
            let days = idle_days.unwrap_or(tools.workspaces.idle_days);
            let removed = workspace::clean_idle(
                &root,
                Duration::from_secs(days.saturating_mul(86_400)),
                None,
            );
            crate::outln!(
                "removed {} workspace(s) idle for more than {days} day(s)",
                removed.len()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn human_age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}
