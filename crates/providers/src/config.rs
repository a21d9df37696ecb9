//! Models from configuration: the `[[models]]` tables of `toolbridge.toml` and `--model` names.
//!
//! ```toml
//! [[models]]
//! name = "local"                          # what clients send as `model`
//! base_url = "http://127.0.0.1:18000/v1"  # any OpenAI-compatible upstream
//! upstream_model = "mock-model"
//! tool_mode = "prompt"                    # native | prompt | verbatim | auto
//!
//! [[models]]
//! name = "smart"                          # several arms, tried in order (fallback)
//! [[models.arms]]
//! model = "anthropic:claude-sonnet-4-5"
//! [[models.arms]]
//! model = "openai:qwen2.5@http://127.0.0.1:8000/v1"
//! tool_mode = "verbatim"
//!
//! [[models]]
//! name = "small"                          # a local GGUF run in-process (toolbridge-embedded)
//! provider = "embedded"
//! path = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"   # default: the pulled default model
//! threads = 2
//! auto = "mutual"
//! ```
//!
//! Keys beyond the shared ones ([`ARM_KEYS`]) belong to the provider the arm names: they are kept
//! in [`ArmConfig::settings`] for a registered provider (the embedded provider's arms are built by
//! the program that links it, through [`crate::registry`]); the built-in providers refuse them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::parser::{Dialect, DialectSetting};
use toolbridge_protocol::texts::CallTag;

use crate::anthropic::{AnthropicClient, AnthropicConfig};
use crate::error::ProviderError;
use crate::http::{RetryPolicy, Timeouts};
use crate::model::{Arm, Model};
use crate::openai::{OpenAiClient, OpenAiConfig};
use crate::scripted::ScriptedUpstream;
use crate::spec::{Api, ModelSpec, Preset, PRESETS};
use crate::wire::Upstream;

/// One upstream of a model.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmConfig {
    /// `provider:model[@BASE_URL]` (see [`crate::spec`]).
    pub model: Option<String>,
    /// A provider name (`openai`, `anthropic`, …) when `model` is not used.
    pub provider: Option<String>,
    /// The API base URL (OpenAI-compatible unless `provider` says otherwise).
    pub base_url: Option<String>,
    /// The upstream's name for the model, with `provider`/`base_url`.
    pub upstream_model: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub tool_mode: Option<ToolMode>,
    /// The tag taught in text modes: `tool_call` (default) or `tool_use` (hermes only).
    pub tag: Option<String>,
    /// The call format a text-mode arm is taught and read in: `auto` (default: from the
    /// upstream model's name, [`Dialect::for_model`]) or a dialect's name.
    pub dialect: Option<DialectSetting>,
    /// The reply begins inside reasoning (the chat template wrote `<think>`), for text-mode arms.
    pub reasoning_open: Option<bool>,
    /// How an Anthropic client's `thinking` setting reaches an OpenAI-compatible upstream:
    /// `drop` (default: not sent), `reasoning_effort` (OpenAI's `low`/`medium`/`high` from the
    /// budget) or `enable_thinking` (`chat_template_kwargs.enable_thinking`, as vLLM and SGLang
    /// take it for Qwen3 and similar templates).
    pub client_thinking: Option<crate::openai::ClientThinking>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Stream from the upstream (default true).
    pub stream: Option<bool>,
    pub connect_timeout_secs: Option<f64>,
    pub first_byte_timeout_secs: Option<f64>,
    pub idle_timeout_secs: Option<f64>,
    pub total_timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    /// The cap on one response in bytes: a whole non-streamed body, or the text, reasoning and
    /// call arguments a stream delivers (default 16 MiB). Past it the request fails as a bad
    /// response (the gateway answers 502 `upstream_bad_response`).
    pub max_response_bytes: Option<usize>,
    /// Anthropic requires `max_tokens`; this is used when a request has none (default 4096; the
    /// embedded provider: 512).
    pub max_tokens: Option<u32>,
    /// The keys this struct does not know, for the provider that owns them (the embedded
    /// provider's `path`, `threads`, …): a registered
    /// [`ProviderFactory`](crate::registry::ProviderFactory) reads them into its own settings;
    /// the built-in providers refuse them.
    #[serde(skip)]
    pub settings: BTreeMap<String, serde_json::Value>,
}

/// The keys of [`ArmConfig`] (the ones the built-in providers read), in the order error messages
/// list them; other keys of an arm go to [`ArmConfig::settings`].
pub const ARM_KEYS: &[&str] = &[
    "model",
    "provider",
    "base_url",
    "upstream_model",
    "api_key_env",
    "tool_mode",
    "tag",
    "dialect",
    "reasoning_open",
    "client_thinking",
    "headers",
    "stream",
    "connect_timeout_secs",
    "first_byte_timeout_secs",
    "idle_timeout_secs",
    "total_timeout_secs",
    "max_retries",
    "max_response_bytes",
    "max_tokens",
];

impl ArmConfig {
    /// The provider this arm names: `provider`, else the part of `model` before `:` (all of it
    /// when there is no `:`, as in `model = "embedded"`).
    pub fn provider_name(&self) -> Option<&str> {
        if let Some(p) = self.provider.as_deref() {
            return Some(p);
        }
        let model = self.model.as_deref()?;
        Some(model.split_once(':').map_or(model, |(p, _)| p))
    }

    /// Reads one arm's table: the shared keys into the struct, the others into `settings`.
    pub fn from_table(
        table: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ArmConfig, serde_json::Error> {
        let mut known = serde_json::Map::new();
        let mut settings = BTreeMap::new();
        for (key, value) in table {
            if ARM_KEYS.contains(&key.as_str()) {
                known.insert(key, value);
            } else {
                settings.insert(key, value);
            }
        }
        let mut arm: ArmConfig = serde_json::from_value(serde_json::Value::Object(known))?;
        arm.settings = settings;
        Ok(arm)
    }

    /// The keys of remote (HTTP) providers that this arm sets.
    pub fn remote_keys(&self) -> Vec<&'static str> {
        [
            ("base_url", self.base_url.is_some()),
            ("upstream_model", self.upstream_model.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("tag", self.tag.is_some()),
            ("dialect", self.dialect.is_some()),
            ("reasoning_open", self.reasoning_open.is_some()),
            ("client_thinking", self.client_thinking.is_some()),
            ("headers", !self.headers.is_empty()),
            ("stream", self.stream.is_some()),
            ("connect_timeout_secs", self.connect_timeout_secs.is_some()),
            (
                "first_byte_timeout_secs",
                self.first_byte_timeout_secs.is_some(),
            ),
            ("idle_timeout_secs", self.idle_timeout_secs.is_some()),
            ("total_timeout_secs", self.total_timeout_secs.is_some()),
            ("max_retries", self.max_retries.is_some()),
            ("max_response_bytes", self.max_response_bytes.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }
}

/// `` `a`, `b` `` (for messages).
pub fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A model: a name and one arm written inline, or several `arms`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelConfig {
    pub name: String,
    pub arms: Vec<ArmConfig>,
    /// Whether the arms were given as `arms = [...]` (for messages that point into the table).
    pub listed_arms: bool,
}

impl<'de> Deserialize<'de> for ModelConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let name = match map.remove("name") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s,
            _ => return Err(D::Error::custom("every model needs a non-empty `name`")),
        };
        let listed_arms = map.contains_key("arms");
        let mut arms: Vec<ArmConfig> = match map.remove("arms") {
            Some(v) => serde_json::from_value::<Vec<serde_json::Map<String, serde_json::Value>>>(v)
                .and_then(|tables| tables.into_iter().map(ArmConfig::from_table).collect())
                .map_err(|e| D::Error::custom(format!("model `{name}`: arms: {e}")))?,
            None => Vec::new(),
        };
        if !map.is_empty() {
            let inline = ArmConfig::from_table(map)
                .map_err(|e| D::Error::custom(format!("model `{name}`: {e}")))?;
            if !arms.is_empty() {
                return Err(D::Error::custom(format!(
                    "model `{name}`: give either an inline upstream or `arms`, not both"
                )));
            }
            arms.push(inline);
        }
        if arms.is_empty() {
            return Err(D::Error::custom(format!(
                "model `{name}` has no upstream (give `model`, `base_url` or `arms`)"
            )));
        }
        Ok(ModelConfig {
            name,
            arms,
            listed_arms,
        })
    }
}

/// Where keys come from (the process environment, or a map in tests).
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Env for BTreeMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

fn secs(value: Option<f64>, default: Duration, what: &str) -> Result<Duration, ProviderError> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(ProviderError::Config(format!(
            "{what} must be a positive number of seconds, not {s}"
        ))),
    }
}

/// The error for a key no provider of the arm reads (worded like serde's; `expected` lists the
/// keys that are read).
pub fn unknown_key(key: &str, expected: &[&str]) -> ProviderError {
    ProviderError::Config(format!(
        "unknown field `{key}`, expected one of {}",
        quoted(expected)
    ))
}

/// Where a built-in provider's arm sends its requests, read from its keys alone: nothing is
/// built and no key is looked up (for listings such as `toolbridge models`; [`build_arm`] reads
/// the same, so the two cannot disagree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmTarget {
    pub preset: Preset,
    /// The upstream's name for the model (a script's path for `scripted`).
    pub model: String,
    /// The API base URL (empty for providers without one, such as `scripted`).
    pub base_url: String,
    /// Whether the base URL is the arm's own (`base_url` or `@URL`) rather than the provider's:
    /// the provider's key variable is then not sent.
    pub custom_url: bool,
    /// The variable the API key is read from, if any.
    pub key_env: Option<String>,
    /// Whether the arm cannot be built without that variable set.
    pub key_required: bool,
}

/// Reads an arm's target (see [`ArmTarget`]); keys beyond [`ARM_KEYS`] are refused.
pub fn arm_target(arm: &ArmConfig) -> Result<ArmTarget, ProviderError> {
    if let Some(key) = arm.settings.keys().next() {
        return Err(unknown_key(key, ARM_KEYS));
    }
    let (preset, model, spec_url) = match (&arm.model, &arm.provider) {
        (Some(spec), None) => {
            if arm.upstream_model.is_some() {
                return Err(ProviderError::Config(format!(
                    "`{spec}`: give either `model = \"provider:model\"` or `upstream_model`, not both"
                )));
            }
            let s = ModelSpec::parse(spec)?;
            (s.preset, s.model, s.base_url)
        }
        (Some(_), Some(_)) => {
            return Err(ProviderError::Config(
                "give either `model` or `provider`, not both".into(),
            ))
        }
        (None, provider) => {
            let name = provider.as_deref().unwrap_or("openai");
            let preset = PRESETS
                .iter()
                .find(|p| p.name == name)
                .copied()
                .ok_or_else(|| ProviderError::Config(format!("unknown provider `{name}`")))?;
            if provider.is_none() && arm.base_url.is_none() {
                return Err(ProviderError::Config(
                    "an upstream needs `model`, `provider` or `base_url`".into(),
                ));
            }
            let model = arm.upstream_model.clone().ok_or_else(|| {
                ProviderError::Config(format!("the `{name}` upstream needs `upstream_model`"))
            })?;
            (preset, model, None)
        }
    };
    let custom_url = arm.base_url.clone().or(spec_url);
    let (key_env, key_required) = match &arm.api_key_env {
        Some(var) => (Some(var.clone()), true),
        // A provider's key is only sent to that provider's own URL.
        None if custom_url.is_none() => (preset.key_env.map(str::to_owned), preset.key_required),
        None => (None, false),
    };
    Ok(ArmTarget {
        preset,
        model,
        base_url: custom_url
            .clone()
            .unwrap_or_else(|| preset.base_url.to_owned()),
        custom_url: custom_url.is_some(),
        key_env,
        key_required,
    })
}

/// Builds one arm of a built-in provider (the [`PRESETS`]); keys beyond [`ARM_KEYS`] are
/// refused. A [`ProviderRegistry`](crate::registry::ProviderRegistry) adds the registered
/// providers (and names another provider's keys as such).
pub fn build_arm(arm: &ArmConfig, env: &dyn Env) -> Result<Arm, ProviderError> {
    let target = arm_target(arm)?;
    let ArmTarget {
        preset,
        model,
        base_url,
        custom_url,
        ..
    } = target.clone();
    let api_key = match &target.key_env {
        Some(var) => match env.var(var) {
            Some(key) => Some(key),
            None if arm.api_key_env.is_some() => {
                return Err(ProviderError::MissingKey(format!(
                    "the environment variable {var} (api_key_env) is not set"
                )))
            }
            None if target.key_required => {
                return Err(ProviderError::MissingKey(format!(
                    "{}: set {var} to use this provider (or give api_key_env)",
                    preset.name
                )))
            }
            None => None,
        },
        None => None,
    };
    let defaults = Timeouts::default();
    let timeouts = Timeouts {
        connect: secs(
            arm.connect_timeout_secs,
            defaults.connect,
            "connect_timeout_secs",
        )?,
        first_byte: secs(
            arm.first_byte_timeout_secs,
            defaults.first_byte,
            "first_byte_timeout_secs",
        )?,
        idle: secs(arm.idle_timeout_secs, defaults.idle, "idle_timeout_secs")?,
        total: secs(arm.total_timeout_secs, defaults.total, "total_timeout_secs")?,
    };
    let retry = RetryPolicy {
        max_retries: arm.max_retries.unwrap_or(2),
        ..RetryPolicy::default()
    };
    let max_response_bytes = match arm.max_response_bytes {
        None => crate::http::DEFAULT_MAX_RESPONSE_BYTES,
        Some(n) if n >= 1024 => n,
        Some(n) => {
            return Err(ProviderError::Config(format!(
                "max_response_bytes must be at least 1024, not {n}"
            )))
        }
    };
    let headers: Vec<(String, String)> = arm
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let tag = match &arm.tag {
        None => CallTag::default(),
        Some(t) => CallTag::parse(t).ok_or_else(|| {
            ProviderError::Config(format!(
                "unknown tag `{t}` (expected tool_call or tool_use)"
            ))
        })?,
    };
    let dialect = arm_dialect(arm, &target)?;
    let upstream: Arc<dyn Upstream> = match preset.api {
        Api::OpenAi => {
            let name = if custom_url {
                format!(
                    "{}:{model}@{}",
                    preset.name,
                    crate::http::shown_url(&base_url)
                )
            } else {
                format!("{}:{model}", preset.name)
            };
            let mut c = OpenAiConfig::new(base_url, model.clone());
            c.name = name;
            c.api_key = api_key;
            c.extra_headers = headers;
            c.timeouts = timeouts;
            c.retry = retry;
            c.stream = arm.stream.unwrap_or(true);
            c.native_tools = preset.native_tools;
            c.max_response_bytes = max_response_bytes;
            c.client_thinking = arm.client_thinking.unwrap_or_default();
            Arc::new(OpenAiClient::new(c)?)
        }
        Api::Anthropic => {
            let mut c = AnthropicConfig::new(model);
            c.base_url = base_url;
            c.api_key = api_key;
            c.extra_headers = headers;
            c.timeouts = timeouts;
            c.retry = retry;
            c.max_response_bytes = max_response_bytes;
            if let Some(n) = arm.max_tokens {
                c.max_tokens = n;
            }
            Arc::new(AnthropicClient::new(c)?)
        }
        Api::Scripted => Arc::new(ScriptedUpstream::from_file(Path::new(&model))?),
        Api::Embedded => {
            return Err(ProviderError::Config(
                "the embedded provider is not available in this build".into(),
            ))
        }
    };
    Ok(Arm {
        upstream,
        mode: arm.tool_mode.unwrap_or_default(),
        tag,
        dialect,
        reasoning_open: arm.reasoning_open.unwrap_or(false),
    })
}

/// The dialect of a built-in provider's arm: `dialect`, with `auto` read from the upstream
/// model's name (a scripted arm's "model" is a file, so `auto` is hermes there). `tag` belongs to
/// hermes: with another dialect it is an error rather than silently unused.
pub fn arm_dialect(arm: &ArmConfig, target: &ArmTarget) -> Result<Dialect, ProviderError> {
    let setting = arm.dialect.unwrap_or_default();
    let dialect = match (setting, target.preset.api) {
        (DialectSetting::Auto, Api::Scripted) => Dialect::Hermes,
        (setting, _) => setting.resolve(&target.model),
    };
    if let (Some(tag), false) = (&arm.tag, dialect == Dialect::Hermes) {
        let why = match setting {
            DialectSetting::Auto => format!(
                "`dialect = \"auto\"` reads {dialect} from the model name `{}`; set `dialect = \"hermes\"` to teach the reference format",
                target.model
            ),
            DialectSetting::Fixed(_) => format!("the arm's dialect is {dialect}"),
        };
        return Err(ProviderError::Config(format!(
            "`tag = \"{tag}\"` applies to the hermes dialect only: {why}"
        )));
    }
    Ok(dialect)
}

/// Builds a configured model.
pub fn build_model(config: &ModelConfig, env: &dyn Env) -> Result<Model, ProviderError> {
    let arms = config
        .arms
        .iter()
        .enumerate()
        .map(|(i, arm)| {
            build_arm(arm, env).map_err(|e| match e {
                ProviderError::Config(m) => {
                    ProviderError::Config(format!("model `{}`, arm {}: {m}", config.name, i + 1))
                }
                ProviderError::MissingKey(m) => ProviderError::MissingKey(format!(
                    "model `{}`, arm {}: {m}",
                    config.name,
                    i + 1
                )),
                other => other,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Model::new(config.name.clone(), arms))
}

/// A model from a command-line name (`provider:model[@BASE_URL]`) and an optional tool mode.
pub fn model_from_spec(
    spec: &str,
    mode: Option<ToolMode>,
    env: &dyn Env,
) -> Result<Model, ProviderError> {
    let arm = ArmConfig {
        model: Some(spec.to_owned()),
        tool_mode: mode,
        ..ArmConfig::default()
    };
    Ok(Model::new(spec.to_owned(), vec![build_arm(&arm, env)?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_gateway_issue_form_works() {
        let toml_like = serde_json::json!({
            "name": "local",
            "base_url": "http://127.0.0.1:18000/v1",
            "upstream_model": "mock-model",
            "tool_mode": "prompt"
        });
        let cfg: ModelConfig = serde_json::from_value(toml_like).unwrap();
        let model = build_model(&cfg, &env(&[])).unwrap();
        assert_eq!(model.arms.len(), 1);
        assert_eq!(model.arms[0].mode, ToolMode::Prompt);
        assert_eq!(
            model.arms[0].upstream.describe(),
            "openai:mock-model@http://127.0.0.1:18000/v1"
        );
    }

    #[test]
    fn arms_and_errors() {
        let cfg: ModelConfig = serde_json::from_value(serde_json::json!({
            "name": "smart",
            "arms": [{"model": "openai:gpt-4o-mini"}, {"model": "ollama:qwen2.5", "tool_mode": "verbatim"}]
        }))
        .unwrap();
        let err = build_model(&cfg, &env(&[])).err().unwrap().to_string();
        assert!(
            err.contains("arm 1") && err.contains("set OPENAI_API_KEY"),
            "{err}"
        );
        let model = build_model(&cfg, &env(&[("OPENAI_API_KEY", "sk-x")])).unwrap();
        assert_eq!(model.arms[1].mode, ToolMode::Verbatim);

        // A key no provider reads is kept for the registry's check, and refused when built.
        let typo: ModelConfig = serde_json::from_value(serde_json::json!(
            {"name": "x", "base_url": "http://127.0.0.1:9/v1", "upstream_modle": "m"}
        ))
        .unwrap();
        assert_eq!(typo.arms[0].settings["upstream_modle"], "m");
        let err = build_model(&typo, &env(&[])).err().unwrap().to_string();
        assert!(err.contains("unknown field `upstream_modle`"), "{err}");
        let none = serde_json::from_value::<ModelConfig>(serde_json::json!({"name": "x"}));
        assert!(none.unwrap_err().to_string().contains("has no upstream"));
    }

    #[test]
    fn provider_keys_go_to_the_settings_table() {
        let cfg: ModelConfig = serde_json::from_value(serde_json::json!({
            "name": "small", "provider": "embedded", "path": "/m.gguf", "threads": 2,
            "max_tokens": 64
        }))
        .unwrap();
        let arm = &cfg.arms[0];
        assert_eq!(arm.provider_name(), Some("embedded"));
        assert_eq!(arm.max_tokens, Some(64));
        assert_eq!(arm.settings.keys().collect::<Vec<_>>(), ["path", "threads"]);
        let two: ModelConfig = serde_json::from_value(serde_json::json!({
            "name": "two", "arms": [{"model": "embedded:/a.gguf", "seed": 1}, {"model": "openai:m"}]
        }))
        .unwrap();
        assert_eq!(two.arms[0].provider_name(), Some("embedded"));
        assert_eq!(two.arms[0].settings["seed"], 1);
        assert!(two.arms[1].settings.is_empty());
        assert_eq!(two.arms[1].provider_name(), Some("openai"));
        // A built-in provider refuses a key it does not read.
        let elsewhere = ArmConfig {
            model: Some("openai:gpt-4o-mini".into()),
            settings: [("threads".to_owned(), serde_json::json!(2))].into(),
            ..ArmConfig::default()
        };
        let err = build_arm(&elsewhere, &env(&[("OPENAI_API_KEY", "k")]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown field `threads`"), "{err}");
        // Every shared key is a field of the struct (none lands in the settings table).
        for key in ARM_KEYS {
            let value = match *key {
                "headers" => serde_json::json!({}),
                "stream" => serde_json::json!(true),
                "tool_mode" | "dialect" => serde_json::json!("auto"),
                "reasoning_open" => serde_json::json!(true),
                "client_thinking" => serde_json::json!("enable_thinking"),
                k if k.ends_with("_secs") || k.starts_with("max_") => serde_json::json!(1),
                _ => serde_json::json!("x"),
            };
            let mut table = serde_json::Map::new();
            table.insert((*key).to_owned(), value);
            let arm = ArmConfig::from_table(table).unwrap();
            assert!(arm.settings.is_empty(), "{key}");
        }
    }

    #[test]
    fn the_target_is_read_without_building() {
        let arm = |json: serde_json::Value| {
            ArmConfig::from_table(json.as_object().unwrap().clone()).unwrap()
        };
        let t = arm_target(&arm(
            serde_json::json!({"model": "anthropic:claude-sonnet-4-5"}),
        ))
        .unwrap();
        assert_eq!(
            (
                t.preset.name,
                t.model.as_str(),
                t.base_url.as_str(),
                t.custom_url
            ),
            (
                "anthropic",
                "claude-sonnet-4-5",
                "https://api.anthropic.com",
                false
            )
        );
        assert_eq!(
            (t.key_env.as_deref(), t.key_required),
            (Some("ANTHROPIC_API_KEY"), true)
        );
        // A custom URL gets no provider key unless asked for one.
        let t = arm_target(&arm(
            serde_json::json!({"model": "openai:m@http://127.0.0.1:9/v1"}),
        ))
        .unwrap();
        assert_eq!(
            (t.base_url.as_str(), t.custom_url, t.key_env),
            ("http://127.0.0.1:9/v1", true, None)
        );
        let t = arm_target(&arm(serde_json::json!(
            {"base_url": "http://127.0.0.1:9/v1", "upstream_model": "m", "api_key_env": "MY_KEY"}
        )))
        .unwrap();
        assert_eq!(
            (t.preset.name, t.key_env.as_deref(), t.key_required),
            ("openai", Some("MY_KEY"), true)
        );
        let t = arm_target(&arm(serde_json::json!({"model": "vllm:q"}))).unwrap();
        assert_eq!(
            (t.key_env.as_deref(), t.key_required),
            (Some("VLLM_API_KEY"), false)
        );
        assert!(arm_target(&arm(
            serde_json::json!({"provider": "nope", "upstream_model": "m"})
        ))
        .is_err());
    }

    #[test]
    fn the_dialect_key_is_checked_at_load_and_auto_reads_the_model_name() {
        let model = |json: serde_json::Value| serde_json::from_value::<ModelConfig>(json);
        let e = env(&[]);
        // A name: that dialect.
        let cfg = model(serde_json::json!({
            "name": "m", "model": "ollama:qwen2.5", "tool_mode": "prompt", "dialect": "mistral",
            "reasoning_open": true
        }))
        .unwrap();
        assert_eq!(
            cfg.arms[0].dialect,
            Some(DialectSetting::Fixed(Dialect::Mistral))
        );
        let arm = &build_model(&cfg, &e).unwrap().arms[0];
        assert_eq!((arm.dialect, arm.reasoning_open), (Dialect::Mistral, true));
        // `auto` (the default) reads the upstream model's name; a scripted arm's is a file.
        for (spec, want) in [
            ("ollama:llama3.2:3b", Dialect::Llama3Json),
            (
                "vllm:Qwen/Qwen3-Coder-30B-A3B-Instruct",
                Dialect::Qwen3Coder,
            ),
            ("ollama:qwen2.5", Dialect::Hermes),
            ("scripted:/tmp/llama3-mistral.json", Dialect::Hermes),
        ] {
            let target = arm_target(&ArmConfig {
                model: Some(spec.into()),
                ..ArmConfig::default()
            })
            .unwrap();
            let arm = ArmConfig {
                model: Some(spec.into()),
                dialect: Some(DialectSetting::Auto),
                ..ArmConfig::default()
            };
            assert_eq!(arm_dialect(&arm, &target).unwrap(), want, "{spec}");
        }
        // An unknown name fails when the file is read, listing the names.
        let err = model(serde_json::json!({"name": "m", "model": "ollama:x", "dialect": "llama"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "model `m`: unknown dialect \"llama\"; known dialects: hermes, llama3-json,"
            ) && err.contains("phi4-mini, or auto"),
            "{err}"
        );
        // `tag` is hermes's: with another dialect it is refused, saying why.
        let cfg =
            model(serde_json::json!({"name": "m", "model": "ollama:llama3.1", "tag": "tool_use"}))
                .unwrap();
        let err = build_model(&cfg, &e).err().unwrap().to_string();
        assert!(
            err.contains("`tag = \"tool_use\"` applies to the hermes dialect only")
                && err.contains("reads llama3-json from the model name `llama3.1`"),
            "{err}"
        );
        let cfg = model(serde_json::json!(
            {"name": "m", "model": "ollama:llama3.1", "tag": "tool_use", "dialect": "hermes"}
        ))
        .unwrap();
        let arm = &build_model(&cfg, &e).unwrap().arms[0];
        assert_eq!((arm.dialect, arm.tag), (Dialect::Hermes, CallTag::ToolUse));
    }

    #[test]
    fn keys_never_go_to_a_custom_url_unless_asked() {
        let e = env(&[("OPENAI_API_KEY", "sk-x"), ("MY_KEY", "k2")]);
        let model = model_from_spec("openai:m@http://127.0.0.1:9/v1", None, &e).unwrap();
        assert_eq!(
            model.arms[0].upstream.describe(),
            "openai:m@http://127.0.0.1:9/v1"
        );
        let arm = ArmConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            upstream_model: Some("m".into()),
            api_key_env: Some("MISSING".into()),
            ..ArmConfig::default()
        };
        assert!(build_arm(&arm, &e)
            .err()
            .unwrap()
            .to_string()
            .contains("MISSING (api_key_env) is not set"));
    }
}
