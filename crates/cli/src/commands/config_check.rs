//! `toolbridge config check`: loads `toolbridge.toml` and validates every section without
//! starting anything — no model is loaded, no server or MCP process started, no sandbox probed,
//! no memory store opened, nothing fetched.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use toolbridge_agent::{Toolbox, ToolboxConfig};
use toolbridge_providers::config::{ArmConfig, Env, ProcessEnv};
use toolbridge_tools::net::SystemResolver;
use toolbridge_tools::{Builtin, ToolsConfig};

use crate::config;

/// Work with the configuration file.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Load the configuration and validate every section: unknown or mistyped keys, model arms
    /// and their settings, the `[agent]` model name, skill folders, the built-in tools'
    /// back-ends, MCP servers. Prints `ok: FILE` (exit 0) or the error (exit 1). Nothing is
    /// started: API keys that are not set are notes, and the sandbox and the memory store are
    /// not opened (`toolbridge sandbox check` probes the sandbox).
    Check {
        /// The configuration file (default: ./toolbridge.toml, then the user config folder).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Action::Check { config } = args.action;
    let loaded = config::load(config.as_deref())?;
    for note in check(&loaded.config)? {
        eprintln!("toolbridge: note: {note}");
    }
    crate::outln!("ok: {}", loaded.origin())?;
    Ok(ExitCode::SUCCESS)
}

/// Answers every variable, so an arm's or a back-end's settings are checked whether or not its
/// key is set in this environment.
struct AnyKey;

impl Env for AnyKey {
    fn var(&self, _name: &str) -> Option<String> {
        Some("placeholder".to_owned())
    }
}

/// Validates the loaded file; the notes are things that are fine in the file but will matter
/// when it is used (an unset key).
fn check(file: &config::FileConfig) -> anyhow::Result<Vec<String>> {
    let registry = crate::providers::registry();
    let mut notes = Vec::new();
    for entry in &file.models {
        registry.check_model(entry)?;
        for (i, arm) in entry.arms.iter().enumerate() {
            let context = || format!("model `{}`, arm {}", entry.name, i + 1);
            if arm.provider_name() == Some("embedded") && registry.has("embedded") {
                check_embedded_file(arm).with_context(context)?;
                continue;
            }
            registry.build_arm(arm, &AnyKey).with_context(context)?;
            if let Err(e) = registry.build_arm(arm, &ProcessEnv) {
                if e.is_missing_key() {
                    notes.push(format!("{}: {e}", context()));
                }
            }
        }
    }
    if let Some(name) = file.agent.model.as_deref() {
        let configured = file.models.iter().any(|m| m.name == name);
        if !configured {
            let arm = ArmConfig {
                model: Some(name.to_owned()),
                ..Default::default()
            };
            if arm.provider_name() == Some("embedded") && registry.has("embedded") {
                check_embedded_file(&arm).context("[agent] model")?;
            } else if name.contains(':') || registry.knows(name) {
                registry
                    .model_from_spec(name, file.agent.tool_mode, &AnyKey)
                    .context("[agent] model")?;
            } else {
                anyhow::bail!(
                    "[agent] model = \"{name}\": no [[models]] entry has this name (a bare name must be defined under [[models]], or written provider:model)"
                );
            }
        }
    }
    toolbridge_agent::skills::load_dirs(&file.agent.skill_dirs).context("[agent] skill_dirs")?;
    check_tools(&file.tools).context("[tools]")?;
    toolbridge_mcp::config::validate_all(&file.mcp_servers).context("[[mcp_servers]]")?;
    Ok(notes)
}

/// An embedded arm's settings and, when it names a model file, that the file exists; nothing
/// is loaded.
#[cfg(feature = "embedded")]
fn check_embedded_file(arm: &ArmConfig) -> anyhow::Result<()> {
    let (path, _, _) = toolbridge_embedded::provider::settings(arm)?;
    match path {
        Some(path) if !path.is_file() => {
            anyhow::bail!("model file {} does not exist", path.display())
        }
        _ => Ok(()),
    }
}

/// Without the embedded provider in this build there is nothing to check it with.
#[cfg(not(feature = "embedded"))]
fn check_embedded_file(_arm: &ArmConfig) -> anyhow::Result<()> {
    Ok(())
}

/// The built-in tools' settings, as a run would set them up, less the tools whose set-up has
/// effects (probing the sandbox, opening the memory store): their sections are checked by
/// parsing alone.
fn check_tools(tools: &ToolsConfig) -> anyhow::Result<()> {
    let with_effects = [
        Builtin::PythonExecute,
        Builtin::RunInTerminal,
        Builtin::SaveMemory,
    ];
    let checked = ToolsConfig {
        enabled: tools
            .enabled
            .iter()
            .copied()
            .filter(|tool| !with_effects.contains(tool))
            .collect(),
        ..tools.clone()
    };
    let mut toolbox = Toolbox::new(ToolboxConfig::default());
    let any_key = |_: &str| Some("placeholder".to_owned());
    toolbridge_tools::register_with(&mut toolbox, &checked, &any_key, Arc::new(SystemResolver))?;
    Ok(())
}
