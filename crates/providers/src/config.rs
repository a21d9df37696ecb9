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
//! auto = "route"
//! ```
//!
//! The embedded provider's arms are built by the program that links it (the CLI); this module
//! only parses their keys and refuses keys that do not apply.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::texts::CallTag;

use crate::anthropic::{AnthropicClient, AnthropicConfig};
use crate::error::ProviderError;
use crate::http::{RetryPolicy, Timeouts};
use crate::model::{Arm, Model};
use crate::openai::{OpenAiClient, OpenAiConfig};
use crate::scripted::ScriptedUpstream;
use crate::spec::{Api, ModelSpec, PRESETS};
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
    /// The tag taught in text modes: `tool_call` (default) or `tool_use`.
    pub tag: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Stream from the upstream (default true).
    pub stream: Option<bool>,
    pub connect_timeout_secs: Option<f64>,
    pub first_byte_timeout_secs: Option<f64>,
    pub idle_timeout_secs: Option<f64>,
    pub total_timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    /// Anthropic requires `max_tokens`; this is used when a request has none (default 4096; the
    /// embedded provider: 512).
    pub max_tokens: Option<u32>,
    /// Embedded only: the GGUF file (default: the pulled default model).
    pub path: Option<String>,
    /// Embedded only: CPU threads of a forward pass.
    pub threads: Option<usize>,
    /// Embedded only: the temperature when a request gives none (default 0: greedy).
    pub temperature: Option<f64>,
    /// Embedded only: top-p when a request gives none (default 1).
    pub top_p: Option<f64>,
    /// Embedded only: the sampling seed when a request gives none (default 0).
    pub seed: Option<u64>,
    /// Embedded only: how `auto` tool choice decides (a strategy name, default `route`).
    pub auto: Option<String>,
    /// Embedded only: what 5-bit and k-quant weights are converted to at load, `q8_0` (default)
    /// or `q4_0` (Q4_0/Q4_1/Q8_0 are used as stored).
    pub weights: Option<String>,
}

impl ArmConfig {
    /// Whether the arm runs the embedded model: `provider = "embedded"`, or `model = "embedded"`
    /// / `"embedded:PATH"`.
    pub fn is_embedded(&self) -> bool {
        self.provider.as_deref() == Some("embedded")
            || self
                .model
                .as_deref()
                .is_some_and(|m| m == "embedded" || m.starts_with("embedded:"))
    }

    /// The keys only the embedded provider reads that this arm sets.
    fn embedded_keys(&self) -> Vec<&'static str> {
        [
            ("path", self.path.is_some()),
            ("threads", self.threads.is_some()),
            ("temperature", self.temperature.is_some()),
            ("top_p", self.top_p.is_some()),
            ("seed", self.seed.is_some()),
            ("auto", self.auto.is_some()),
            ("weights", self.weights.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// The keys of remote providers that this arm sets.
    fn remote_keys(&self) -> Vec<&'static str> {
        [
            ("base_url", self.base_url.is_some()),
            ("upstream_model", self.upstream_model.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("tag", self.tag.is_some()),
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
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// Checks an embedded arm's keys: none that only remote providers read, and the path given
    /// once (in `model = "embedded:PATH"` or in `path`).
    pub fn check_embedded(&self) -> Result<(), ProviderError> {
        let remote = self.remote_keys();
        if !remote.is_empty() {
            return Err(ProviderError::Config(format!(
                "the embedded provider does not use {}",
                quoted(&remote)
            )));
        }
        let in_model = self
            .model
            .as_deref()
            .is_some_and(|m| m.starts_with("embedded:") && m != "embedded:default");
        if in_model && self.path.is_some() {
            return Err(ProviderError::Config(
                "give the model file once: `model = \"embedded:PATH\"` or `path`".into(),
            ));
        }
        if self.model.is_some() && self.provider.is_some() {
            return Err(ProviderError::Config(
                "give either `model` or `provider`, not both".into(),
            ));
        }
        Ok(())
    }
}

fn quoted(keys: &[&str]) -> String {
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
}

impl<'de> Deserialize<'de> for ModelConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let name = match map.remove("name") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s,
            _ => return Err(D::Error::custom("every model needs a non-empty `name`")),
        };
        let mut arms: Vec<ArmConfig> = match map.remove("arms") {
            Some(v) => serde_json::from_value(v)
                .map_err(|e| D::Error::custom(format!("model `{name}`: arms: {e}")))?,
            None => Vec::new(),
        };
        if !map.is_empty() {
            let inline: ArmConfig = serde_json::from_value(serde_json::Value::Object(map))
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
        Ok(ModelConfig { name, arms })
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

/// Builds one arm.
pub fn build_arm(arm: &ArmConfig, env: &dyn Env) -> Result<Arm, ProviderError> {
    if arm.is_embedded() {
        arm.check_embedded()?;
        return Err(ProviderError::Config(
            "the embedded provider is not available in this build".into(),
        ));
    }
    let embedded_only = arm.embedded_keys();
    if !embedded_only.is_empty() {
        return Err(ProviderError::Config(format!(
            "{} only apply to provider = \"embedded\"",
            quoted(&embedded_only)
        )));
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
    let base_url = custom_url
        .clone()
        .unwrap_or_else(|| preset.base_url.to_owned());
    let api_key = match &arm.api_key_env {
        Some(var) => Some(env.var(var).ok_or_else(|| {
            ProviderError::Config(format!(
                "the environment variable {var} (api_key_env) is not set"
            ))
        })?),
        // A provider's key is only sent to that provider's own URL.
        None if custom_url.is_none() => match preset.key_env {
            Some(var) => match env.var(var) {
                Some(key) => Some(key),
                None if preset.key_required => {
                    return Err(ProviderError::Config(format!(
                        "{}: set {var} to use this provider (or give api_key_env)",
                        preset.name
                    )))
                }
                None => None,
            },
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
    let upstream: Arc<dyn Upstream> = match preset.api {
        Api::OpenAi => {
            let mut c = OpenAiConfig::new(base_url, model.clone());
            c.name = match &custom_url {
                Some(url) => format!("{}:{model}@{url}", preset.name),
                None => format!("{}:{model}", preset.name),
            };
            c.api_key = api_key;
            c.extra_headers = headers;
            c.timeouts = timeouts;
            c.retry = retry;
            c.stream = arm.stream.unwrap_or(true);
            c.native_tools = preset.native_tools;
            Arc::new(OpenAiClient::new(c)?)
        }
        Api::Anthropic => {
            let mut c = AnthropicConfig::new(model);
            c.base_url = base_url;
            c.api_key = api_key;
            c.extra_headers = headers;
            c.timeouts = timeouts;
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
    })
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

        let typo = serde_json::from_value::<ModelConfig>(
            serde_json::json!({"name": "x", "upstream_modle": "m"}),
        );
        assert!(typo
            .unwrap_err()
            .to_string()
            .contains("unknown field `upstream_modle`"));
        let none = serde_json::from_value::<ModelConfig>(serde_json::json!({"name": "x"}));
        assert!(none.unwrap_err().to_string().contains("has no upstream"));
    }

    #[test]
    fn embedded_keys_are_parsed_and_checked() {
        let cfg: ModelConfig = serde_json::from_value(serde_json::json!({
            "name": "small", "provider": "embedded", "path": "/m.gguf", "threads": 2,
            "temperature": 0.7, "top_p": 0.9, "seed": 7, "max_tokens": 64, "auto": "route",
            "weights": "q4_0"
        }))
        .unwrap();
        let arm = &cfg.arms[0];
        assert!(arm.is_embedded());
        assert_eq!(arm.path.as_deref(), Some("/m.gguf"));
        assert_eq!(
            (arm.threads, arm.seed, arm.max_tokens),
            (Some(2), Some(7), Some(64))
        );
        arm.check_embedded().unwrap();
        // Unknown keys are still refused.
        let typo = serde_json::from_value::<ModelConfig>(
            serde_json::json!({"name": "x", "provider": "embedded", "thread": 2}),
        );
        assert!(typo
            .unwrap_err()
            .to_string()
            .contains("unknown field `thread`"));
        // Remote keys on an embedded arm, a path given twice, embedded keys elsewhere.
        let remote = ArmConfig {
            provider: Some("embedded".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ArmConfig::default()
        };
        assert!(remote
            .check_embedded()
            .unwrap_err()
            .to_string()
            .contains("`base_url`"));
        let twice = ArmConfig {
            model: Some("embedded:/a.gguf".into()),
            path: Some("/b.gguf".into()),
            ..ArmConfig::default()
        };
        assert!(twice.is_embedded());
        assert!(twice
            .check_embedded()
            .unwrap_err()
            .to_string()
            .contains("once"));
        let elsewhere = ArmConfig {
            model: Some("openai:gpt-4o-mini".into()),
            threads: Some(2),
            ..ArmConfig::default()
        };
        let err = build_arm(&elsewhere, &env(&[("OPENAI_API_KEY", "k")]))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("`threads` only apply to provider = \"embedded\""),
            "{err}"
        );
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
