//! The embedded provider's place in a [`ProviderRegistry`](toolbridge_providers::ProviderRegistry):
//! its `[[models]]` settings, its factory and its pull policy.
//!
//! `embedded:PATH.gguf` runs a local GGUF in-process; `embedded` or `embedded:default` is the
//! default model, SmolLM2-135M-Instruct, which `toolbridge model pull` fetches into the user
//! cache folder — and which is pulled on first use when it is asked for (also when no model is
//! configured at all). Settings are keys of a `[[models]]` entry with `provider = "embedded"`
//! (see [`SETTINGS_HELP`]); `--model embedded[:PATH]` uses the defaults. TOOLBRIDGE_NO_PULL=1
//! never downloads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toolbridge_protocol::parser::{Dialect, DialectSetting};
use toolbridge_protocol::texts::CallTag;
use toolbridge_providers::config::{quoted, ArmConfig, Env};
use toolbridge_providers::{Arm, BuildError, ProviderError, ProviderFactory};

use crate::pull::{self, StderrProgress};
use crate::{AutoStrategy, EmbeddedConfig, EmbeddedUpstream, EngineOptions};

/// The provider's name.
pub const NAME: &str = "embedded";

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
  auto = "mutual"             # tool_choice auto: mutual (default), route, relevance, gate,
                              # route_use, route_channel, route_name,
                              # route_name_lexical, call_then_answer, free
  weights = "q8_0"            # Q5/k-quant weights converted at load to q8_0 (default) or q4_0; Q4_0/Q4_1/Q8_0 kept
  max_string_length = 200     # the longest string value a forced tool call writes (default 200)
  ground_arguments = true     # a call made after a user's message takes its strings and numbers
                              # from the conversation, where not free text (default true)

--model embedded[:PATH] (and no configured model at all) uses the defaults.
TOOLBRIDGE_NO_PULL=1 never downloads the default model."#;

/// The keys of an embedded arm beyond the shared ones (`model`, `provider`, `tool_mode`,
/// `max_tokens`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedSettings {
    /// The GGUF file (default: the pulled default model).
    pub path: Option<String>,
    /// CPU threads of a forward pass.
    pub threads: Option<usize>,
    /// The temperature when a request gives none (default 0: greedy).
    pub temperature: Option<f64>,
    /// Top-p when a request gives none (default 1).
    pub top_p: Option<f64>,
    /// The sampling seed when a request gives none (default 0).
    pub seed: Option<u64>,
    /// How `auto` tool choice decides (a strategy name, default `route`).
    pub auto: Option<String>,
    /// What 5-bit and k-quant weights are converted to at load, `q8_0` (default) or `q4_0`
    /// (Q4_0/Q4_1/Q8_0 are used as stored).
    pub weights: Option<String>,
    /// The longest string value a forced tool call may write, in characters (default 200).
    pub max_string_length: Option<usize>,
    /// Whether a call made after a user's message takes its string and number values from the
    /// conversation (default true; see [`crate::ground`]).
    pub ground_arguments: Option<bool>,
}

/// The keys of [`EmbeddedSettings`], in the order messages list them.
pub const SETTING_KEYS: &[&str] = &[
    "path",
    "threads",
    "temperature",
    "top_p",
    "seed",
    "auto",
    "weights",
    "max_string_length",
    "ground_arguments",
];

impl EmbeddedSettings {
    /// Reads an arm's settings table (unknown keys and wrong types are refused).
    pub fn of(arm: &ArmConfig) -> Result<EmbeddedSettings, BuildError> {
        let table: serde_json::Map<String, serde_json::Value> = arm
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        serde_json::from_value(serde_json::Value::Object(table))
            .map_err(|e| BuildError::Message(e.to_string()))
    }
}

/// The embedded provider, for a [`ProviderRegistry`](toolbridge_providers::ProviderRegistry).
#[derive(Clone, Copy, Debug, Default)]
pub struct EmbeddedFactory;

impl ProviderFactory for EmbeddedFactory {
    fn name(&self) -> &'static str {
        NAME
    }

    fn setting_keys(&self) -> &'static [&'static str] {
        SETTING_KEYS
    }

    fn check(&self, arm: &ArmConfig) -> Result<(), BuildError> {
        EmbeddedSettings::of(arm).map(drop)
    }

    fn build_arm(&self, arm: &ArmConfig, _env: &dyn Env) -> Result<Arm, BuildError> {
        configured_arm(arm)
    }
}

/// Checks an embedded arm's keys: none that only remote providers read, and the path given
/// once (in `model = "embedded:PATH"` or in `path`).
pub fn check_embedded(arm: &ArmConfig, settings: &EmbeddedSettings) -> Result<(), ProviderError> {
    // `dialect` is the embedded model's too: its template's call format unless set.
    let remote: Vec<&str> = arm
        .remote_keys()
        .into_iter()
        .filter(|k| *k != "dialect")
        .collect();
    if !remote.is_empty() {
        return Err(ProviderError::Config(format!(
            "the embedded provider does not use {}",
            quoted(&remote)
        )));
    }
    let in_model = arm
        .model
        .as_deref()
        .is_some_and(|m| m.starts_with("embedded:") && m != "embedded:default");
    if in_model && settings.path.is_some() {
        return Err(ProviderError::Config(
            "give the model file once: `model = \"embedded:PATH\"` or `path`".into(),
        ));
    }
    if arm.model.is_some() && arm.provider.is_some() {
        return Err(ProviderError::Config(
            "give either `model` or `provider`, not both".into(),
        ));
    }
    Ok(())
}

/// An error and its causes on one line, `outer: inner`, leaving out a cause whose text the one
/// before it already shows (as the CLI prints error chains).
fn chain_text(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut previous = line.clone();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !text.is_empty() && !previous.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
            previous = text;
        }
        next = cause.source();
    }
    line
}

/// The default model's path, pulled if needed (unless TOOLBRIDGE_NO_PULL is set).
pub fn default_model() -> Result<PathBuf, BuildError> {
    let dir = pull::models_dir().map_err(|e| BuildError::Message(chain_text(&e)))?;
    let path = pull::default_model_path(&dir);
    if path.is_file() {
        return Ok(path);
    }
    if std::env::var_os("TOOLBRIDGE_NO_PULL").is_some_and(|v| !v.is_empty()) {
        return Err(BuildError::Message(format!(
            "the default embedded model is not downloaded yet ({}); run `toolbridge model pull`, or pass --model",
            path.display()
        )));
    }
    eprintln!(
        "toolbridge: no model configured, so using the embedded default model (SmolLM2-135M-Instruct); downloading it once into {}",
        dir.display()
    );
    pull::pull_default(&dir, "python3", &mut StderrProgress::default()).map_err(|e| {
        BuildError::Message(format!(
            "pulling the default model (or pass --model): {}",
            chain_text(&e)
        ))
    })
}

fn bad(message: String) -> BuildError {
    BuildError::Message(message)
}

/// The settings of an embedded arm, checked: the model file (none: the default model), the
/// engine's options and the upstream's configuration.
pub fn settings(
    arm: &ArmConfig,
) -> Result<(Option<PathBuf>, EngineOptions, EmbeddedConfig), BuildError> {
    let keys = EmbeddedSettings::of(arm)?;
    check_embedded(arm, &keys)?;
    let from_model = arm
        .model
        .as_deref()
        .and_then(|m| m.strip_prefix("embedded:"))
        .filter(|p| !p.is_empty() && *p != "default");
    let path = keys.path.as_deref().or(from_model).map(PathBuf::from);
    let q4_0 = match keys.weights.as_deref() {
        None | Some("q8_0") => false,
        Some("q4_0") => true,
        Some(other) => {
            return Err(bad(format!(
                "weights = \"{other}\": expected \"q8_0\" or \"q4_0\""
            )))
        }
    };
    if keys.threads == Some(0) {
        return Err(bad("threads must be at least 1".into()));
    }
    let unit = |v: Option<f64>, what: &str, max: f64| -> Result<Option<f32>, BuildError> {
        match v {
            Some(x) if !(0.0..=max).contains(&x) => {
                Err(bad(format!("{what} = {x}: expected 0 to {max}")))
            }
            other => Ok(other.map(|x| x as f32)),
        }
    };
    let defaults = EmbeddedConfig::default();
    let auto = match keys.auto.as_deref() {
        None => defaults.auto,
        Some(name) => name.parse::<AutoStrategy>().map_err(bad)?,
    };
    let config = EmbeddedConfig {
        temperature: unit(keys.temperature, "temperature", 2.0)?.unwrap_or(defaults.temperature),
        top_p: unit(keys.top_p, "top_p", 1.0)?.unwrap_or(defaults.top_p),
        seed: keys.seed.unwrap_or(defaults.seed),
        max_tokens: arm.max_tokens.map_or(defaults.max_tokens, |n| n as usize),
        auto,
        max_string_length: match keys.max_string_length {
            Some(0) => return Err(bad("max_string_length must be at least 1".into())),
            Some(n) => n,
            None => defaults.max_string_length,
        },
        ground_arguments: keys.ground_arguments.unwrap_or(defaults.ground_arguments),
        dialect: match arm.dialect.unwrap_or_default() {
            DialectSetting::Auto => None,
            DialectSetting::Fixed(d) => Some(d),
        },
        ..defaults
    };
    let options = EngineOptions {
        threads: keys.threads,
        q4_0,
    };
    Ok((path, options, config))
}

/// An embedded arm from its `[[models]]` keys (or an `embedded[:PATH]` name).
pub fn configured_arm(arm: &ArmConfig) -> Result<Arm, BuildError> {
    let (path, options, config) = settings(arm)?;
    let path = match path {
        Some(p) => p,
        None => default_model()?,
    };
    let engine = crate::engine::shared(Path::new(&path), &options)
        .map_err(|e| bad(format!("loading {}: {}", path.display(), chain_text(&e))))?;
    let config = EmbeddedConfig {
        name: format!("embedded:{}", path.display()),
        ..config
    };
    Ok(Arm {
        upstream: Arc::new(EmbeddedUpstream::new(engine, config)),
        mode: arm.tool_mode.unwrap_or_default(),
        tag: CallTag::default(),
        // The embedded model's calls come out native (its own grammar, in its own dialect: see
        // `EmbeddedConfig::dialect`); the arm has nothing left to parse.
        dialect: Dialect::Hermes,
        reasoning_open: false,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use toolbridge_providers::config::ModelConfig;
    use toolbridge_providers::ProviderRegistry;

    use super::*;

    fn arm(json: serde_json::Value) -> ArmConfig {
        let mut table = json.as_object().unwrap().clone();
        table.insert("name".into(), "m".into());
        let cfg: ModelConfig = serde_json::from_value(serde_json::Value::Object(table)).unwrap();
        cfg.arms.into_iter().next().unwrap()
    }

    #[test]
    fn settings_come_from_the_models_entry() {
        let (path, options, config) = settings(&arm(serde_json::json!({
            "provider": "embedded", "path": "/m.gguf", "threads": 3, "temperature": 0.5,
            "top_p": 0.9, "seed": 9, "max_tokens": 99, "auto": "call_then_answer", "weights": "q4_0"
        })))
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
        let (path, options, config) =
            settings(&arm(serde_json::json!({"model": "embedded:/x.gguf"}))).unwrap();
        assert_eq!(path, Some(PathBuf::from("/x.gguf")));
        assert_eq!(options, EngineOptions::default());
        assert_eq!(config, EmbeddedConfig::default());
        let (path, ..) = settings(&arm(serde_json::json!({"provider": "embedded"}))).unwrap();
        assert_eq!(path, None, "the default model");
    }

    #[test]
    fn bad_settings_are_refused() {
        for (json, needle) in [
            (
                serde_json::json!({"provider": "embedded", "auto": "sometimes"}),
                "unknown auto strategy",
            ),
            (
                serde_json::json!({"provider": "embedded", "weights": "q2"}),
                "q8_0",
            ),
            (
                serde_json::json!({"provider": "embedded", "threads": 0}),
                "at least 1",
            ),
            (
                serde_json::json!({"provider": "embedded", "temperature": -1.0}),
                "temperature",
            ),
            (
                serde_json::json!({"provider": "embedded", "base_url": "http://127.0.0.1:1/v1"}),
                "`base_url`",
            ),
            (
                serde_json::json!({"provider": "embedded", "dialect": "qwen3-coder", "reasoning_open": true}),
                "does not use `reasoning_open`",
            ),
            (
                serde_json::json!({"model": "embedded:/a.gguf", "path": "/b.gguf"}),
                "once",
            ),
            (
                serde_json::json!({"model": "embedded", "provider": "embedded"}),
                "not both",
            ),
        ] {
            let err = settings(&arm(json.clone())).err().unwrap().to_string();
            assert!(err.contains(needle), "{json}: {err}");
        }
        // A wrong type is refused by the factory's check (at configuration load).
        let wrong = arm(serde_json::json!({"provider": "embedded", "threads": "two"}));
        let err = EmbeddedFactory.check(&wrong).unwrap_err().to_string();
        assert!(err.contains("invalid type"), "{err}");
        // A typo is refused by the registry, listing every key that is read.
        let mut registry = ProviderRegistry::new();
        registry.register(Arc::new(EmbeddedFactory));
        let typo: ModelConfig = serde_json::from_value(
            serde_json::json!({"name": "m", "provider": "embedded", "thread": 2}),
        )
        .unwrap();
        let err = registry.check_model(&typo).unwrap_err().to_string();
        assert!(
            err.starts_with("model `m`: unknown field `thread`, expected one of `model`"),
            "{err}"
        );
        assert!(
            err.ends_with("`auto`, `weights`, `max_string_length`, `ground_arguments`"),
            "{err}"
        );
    }

    #[test]
    fn setting_keys_are_the_settings_fields() {
        for key in SETTING_KEYS {
            let value = match *key {
                "path" | "auto" | "weights" => serde_json::json!("x"),
                "temperature" | "top_p" => serde_json::json!(0.5),
                "ground_arguments" => serde_json::json!(false),
                _ => serde_json::json!(1),
            };
            let a = arm(serde_json::json!({"provider": "embedded", *key: value}));
            EmbeddedFactory.check(&a).unwrap();
        }
    }

    #[test]
    fn a_missing_model_file_is_named() {
        let err = configured_arm(&arm(
            serde_json::json!({"model": "embedded:/nonexistent.gguf"}),
        ))
        .err()
        .unwrap()
        .to_string();
        assert!(err.starts_with("loading /nonexistent.gguf: "), "{err}");
    }
}
