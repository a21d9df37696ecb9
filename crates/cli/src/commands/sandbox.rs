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
            crate::out!("{report}")?;
            // The probes above use a scratch folder: only a real cell in a real workspace
            // location shows what python_execute will do (a root-owned home, a venv out of
            // reach, ...).
            let cell_ok = report.isolated() && {
                let (ok, text) = python_cell(&loaded.config.tools);
                crate::outln!(
                    "{} {:<20} {text}",
                    if ok { "ok" } else { "--" },
                    "python_execute"
                )?;
                ok
            };
            Ok(if report.isolated() && cell_ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        SandboxCommand::Setup { venv } => {
            let explicit = venv.is_some();
            let dir = toolbridge_sandbox::setup_venv(venv.as_deref())?;
            crate::outln!(
                "sandbox Python ready: {}",
                dir.join("bin").join("python").display()
            )?;
            if explicit && Some(&dir) != toolbridge_sandbox::default_venv_dir().as_ref() {
                crate::outln!(
                    "set it in toolbridge.toml:\n[tools.sandbox]\npython = \"{}\"",
                    dir.join("bin").join("python").display()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `print(6 * 7)` with python_execute in a throwaway workspace where the configuration puts
/// workspaces; `(passed, what happened)`.
fn python_cell(tools: &toolbridge_tools::ToolsConfig) -> (bool, String) {
    use toolbridge_agent::{Tool, ToolContext};
    let base = match &tools.workspace {
        Some(path) => path.parent().map(std::path::Path::to_path_buf),
        None => tools.workspaces.root(),
    };
    let Some(base) = base else {
        return (
            false,
            "no folder for workspaces: set [tools.workspaces] root, XDG_DATA_HOME or HOME".into(),
        );
    };
    let dir = base.join(format!(".sandbox-check-{}", std::process::id()));
    let outcome = (|| -> Result<String, String> {
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let sandbox =
            toolbridge_sandbox::Sandbox::new(tools.sandbox.clone()).map_err(|e| e.to_string())?;
        let tool = toolbridge_tools::python::PythonExecute::new(sandbox, tools.python.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let ctx = ToolContext {
            workspace: Some(dir.clone()),
            user: "sandbox-check".into(),
            conversation: "sandbox-check".into(),
            ..ToolContext::default()
        };
        let result =
            runtime.block_on(tool.invoke(serde_json::json!({ "code": "print(6 * 7)" }), ctx));
        drop(tool);
        drop(runtime);
        match result {
            Ok(text) if text.trim() == "42" => Ok(format!(
                "a cell ran in a workspace under {}",
                base.display()
            )),
            Ok(text) => Err(format!("unexpected output {text:?}")),
            Err(e) => Err(e.to_string()),
        }
    })();
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(text) => (true, text),
        Err(reason) => (
            false,
            format!(
                "a cell in a workspace under {} failed: {reason}",
                base.display()
            ),
        ),
    }
}
