//! `toolbridge sandbox check|setup`: what isolation model-written code gets here, and the
//! Python environment with the document libraries.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config;

/// The sandbox python_execute and run_in_terminal run code in ([tools.sandbox] in toolbridge.toml).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SandboxCommand,
}

#[derive(clap::Subcommand)]
enum SandboxCommand {
    /// Report which isolation this machine gives (bubblewrap, Landlock + seccomp), which backend
    /// is used, the sandbox's Python and whether the document libraries import. Exit code 0 when
    /// the configured sandbox isolates, 1 otherwise (no isolation, or only unsandboxed).
    Check {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Create the virtual environment the sandbox's Python uses (default
    /// $XDG_DATA_HOME/toolbridge/sandbox/venv) and pip-install the document-generation
    /// libraries into it. Running it again only checks.
    Setup {
        /// Where to create the virtual environment (then set [tools.sandbox] python to
        /// DIR/bin/python).
        #[arg(long, value_name = "DIR")]
        venv: Option<PathBuf>,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        SandboxCommand::Check { config } => {
            let loaded = config::load(config.as_deref())?;
            let report = toolbridge_sandbox::check(&loaded.config.tools.sandbox);
            print!("{report}");
            Ok(if report.isolated() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        SandboxCommand::Setup { venv } => {
            let explicit = venv.is_some();
            let dir = toolbridge_sandbox::setup_venv(venv.as_deref())?;
            println!(
                "sandbox Python ready: {}",
                dir.join("bin").join("python").display()
            );
            if explicit && Some(&dir) != toolbridge_sandbox::default_venv_dir().as_ref() {
                println!(
                    "set it in toolbridge.toml:\n[tools.sandbox]\npython = \"{}\"",
                    dir.join("bin").join("python").display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
