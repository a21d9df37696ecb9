//! `toolbridge memory list|rm`: what save_memory stored, and removing it.

use std::process::ExitCode;
use toolbridge_tools::workspace::rfc3339_utc;

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
        /// A JSON array of the entries (`[]` when there are none); `created_at` stays Unix
        /// seconds, `created` is the same time in RFC 3339 (UTC).
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
                let entries = list
                    .iter()
                    .map(|m| {
                        let mut entry = serde_json::to_value(m)?;
                        if let Some(object) = entry.as_object_mut() {
                            object.insert("created".into(), rfc3339_utc(m.created_at).into());
                        }
                        Ok(entry)
                    })
                    .collect::<serde_json::Result<Vec<_>>>()?;
                crate::outln!("{}", serde_json::to_string_pretty(&entries)?)?;
            } else if list.is_empty() {
                crate::outln!("(no memories)")?;
            } else {
                for m in &list {
                    let slot = match (&m.slot, &m.value) {
                        (Some(s), Some(v)) => format!(" [{s} = {v}]"),
                        (Some(s), None) => format!(" [{s}]"),
                        _ => String::new(),
                    };
                    crate::outln!(
                        "{:>5}  {}  {}  {}{}  (conversation {}, call {}, at {})",
                        m.id,
                        m.user,
                        m.status,
                        m.memory_text,
                        slot,
                        m.conversation.as_deref().unwrap_or("-"),
                        m.tool_call.as_deref().unwrap_or("-"),
                        rfc3339_utc(m.created_at)
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Rm { ids } => {
            let mut missing = false;
            for id in ids {
                if runtime.block_on(store.remove(id))? {
                    crate::outln!("removed {id}")?;
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

#[cfg(test)]
mod tests {
    use toolbridge_tools::workspace::rfc3339_utc;

    #[test]
    fn unix_seconds_become_rfc3339() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_utc(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
    }
}
