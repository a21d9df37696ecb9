//! `toolbridge memory list|rm`: what save_memory stored, and removing it.

use std::process::ExitCode;

use anyhow::Context;
use toolbridge_tools::memory::ACTIVE;

use crate::config;

/// The long-term memory written by save_memory ([tools.memory] in toolbridge.toml).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: MemoryCommand,
    /// The configuration file.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<std::path::PathBuf>,
}

#[derive(clap::Subcommand)]
enum MemoryCommand {
    /// List entries (ACTIVE ones unless --all), oldest first, with their provenance.
    List {
        /// Only this user's entries.
        #[arg(long)]
        user: Option<String>,
        /// Entries of every status (SUPERSEDED too).
        #[arg(long)]
        all: bool,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Remove entries by id.
    Rm {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<i64>,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = config::load(args.config.as_deref())?;
    let store = toolbridge_tools::memory_store(&loaded.config.tools)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match args.command {
        MemoryCommand::List { user, all, json } => {
            let status = (!all).then(|| ACTIVE.to_owned());
            let list = runtime.block_on(store.list(user, status))?;
            if json {
                for m in &list {
                    println!("{}", serde_json::to_string(m)?);
                }
            } else if list.is_empty() {
                println!("(no memories)");
            } else {
                for m in &list {
                    let slot = match (&m.slot, &m.value) {
                        (Some(s), Some(v)) => format!(" [{s} = {v}]"),
                        (Some(s), None) => format!(" [{s}]"),
                        _ => String::new(),
                    };
                    println!(
                        "{:>5}  {}  {}  {}{}  (conversation {}, call {}, at {})",
                        m.id,
                        m.user,
                        m.status,
                        m.memory_text,
                        slot,
                        m.conversation.as_deref().unwrap_or("-"),
                        m.tool_call.as_deref().unwrap_or("-"),
                        m.created_at
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Rm { ids } => {
            let mut missing = false;
            for id in ids {
                if runtime.block_on(store.remove(id))? {
                    println!("removed {id}");
                } else {
                    eprintln!("toolbridge: no memory with id {id}");
                    missing = true;
                }
            }
            Ok(if missing {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
