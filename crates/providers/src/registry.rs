//! Providers registered by name. The built-in providers (the [`PRESETS`](crate::spec::PRESETS):
//! OpenAI-compatible services, Anthropic, scripted replies) are always there; a program adds
//! others — the embedded model of `toolbridge-embedded` — as a [`ProviderFactory`], which owns
//! its settings: the keys of a `[[models]]` arm beyond the shared ones
//! ([`ArmConfig::settings`]).
//!
//! A provider a program knows of but did not link is recorded with [`ProviderRegistry::absent`]:
//! asking for it says that it is not in this build, and why.

use std::sync::Arc;

use toolbridge_protocol::mode::ToolMode;

use crate::config::{self, quoted, unknown_key, ArmConfig, Env, ModelConfig, ARM_KEYS};
use crate::error::ProviderError;
use crate::model::{Arm, Model};

/// A provider that builds arms from its own settings.
pub trait ProviderFactory: Send + Sync {
    /// Its name: `provider = "NAME"`, `model = "NAME"` or `model = "NAME:…"`.
    fn name(&self) -> &'static str;
    /// The keys of its settings table. The registry refuses any other key on its arms, and
    /// tells an arm of another provider that sets one of them whose key it is.
    fn setting_keys(&self) -> &'static [&'static str];
    /// Checks an arm's settings without building it (when the configuration is loaded): the
    /// values' types, so that a wrong one is reported whichever model a run uses.
    fn check(&self, arm: &ArmConfig) -> Result<(), BuildError>;
    /// Builds an arm.
    fn build_arm(&self, arm: &ArmConfig, env: &dyn Env) -> Result<Arm, BuildError>;
}

/// Why a model or an arm could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A provider's own message, shown as it is.
    #[error("{0}")]
    Message(String),
    /// An arm of a configured model.
    #[error("model `{model}`, arm {arm}")]
    Arm {
        model: String,
        /// From 1.
        arm: usize,
        #[source]
        source: Box<BuildError>,
    },
}

impl BuildError {
    /// Whether it failed only because an API key variable is unset (which a server can start
    /// with: it answers that model with an error until the key is set).
    pub fn is_missing_key(&self) -> bool {
        match self {
            BuildError::Provider(e) => matches!(e, ProviderError::MissingKey(_)),
            BuildError::Message(_) => false,
            BuildError::Arm { source, .. } => source.is_missing_key(),
        }
    }
}

/// The providers a program can build, by name.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    factories: Vec<Arc<dyn ProviderFactory>>,
    absent: Vec<(String, String)>,
}

impl std::fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderRegistry")
            .field(
                "factories",
                &self.factories.iter().map(|f| f.name()).collect::<Vec<_>>(),
            )
            .field("absent", &self.absent)
            .finish()
    }
}

impl ProviderRegistry {
    /// The built-in providers only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a provider (one of the same name registered before is replaced).
    pub fn register(&mut self, factory: Arc<dyn ProviderFactory>) {
        let name = factory.name();
        self.factories.retain(|f| f.name() != name);
        self.absent.retain(|(n, _)| n != name);
        self.factories.push(factory);
    }

    /// Records a provider this build does not have, with the reason (e.g. "built without the
    /// `embedded` feature").
    pub fn absent(&mut self, name: &str, reason: &str) {
        if self.factory(name).is_none() {
            self.absent.retain(|(n, _)| n != name);
            self.absent.push((name.to_owned(), reason.to_owned()));
        }
    }

    /// Whether `name` is a registered provider.
    pub fn has(&self, name: &str) -> bool {
        self.factory(name).is_some()
    }

    /// Whether `name` is a registered provider or one recorded as absent from this build (so a
    /// model name that is just `name` is meant for it).
    pub fn knows(&self, name: &str) -> bool {
        self.has(name) || self.absent.iter().any(|(n, _)| n == name)
    }

    fn factory(&self, name: &str) -> Option<&dyn ProviderFactory> {
        self.factories
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.as_ref())
    }

    fn not_built(&self, name: &str) -> Option<ProviderError> {
        self.absent.iter().find(|(n, _)| n == name).map(|(n, why)| {
            ProviderError::Config(format!("the {n} provider is not in this build ({why})"))
        })
    }

    /// Every key some provider reads: the shared ones, then each registered provider's.
    fn known_keys(&self) -> Vec<&'static str> {
        let mut keys = ARM_KEYS.to_vec();
        for factory in &self.factories {
            for key in factory.setting_keys() {
                if !keys.contains(key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// The first settings key of an arm that no provider reads.
    fn unknown_setting<'a>(&self, arm: &'a ArmConfig) -> Option<&'a str> {
        let known = self.known_keys();
        arm.settings
            .keys()
            .map(String::as_str)
            .find(|k| !known.contains(k))
    }

    /// Settings keys on an arm of a built-in provider: another provider's keys are named as
    /// such, others are unknown.
    fn check_builtin(&self, arm: &ArmConfig) -> Result<(), ProviderError> {
        if let Some(key) = self.unknown_setting(arm) {
            return Err(unknown_key(key, &self.known_keys()));
        }
        for factory in &self.factories {
            let theirs: Vec<&str> = factory
                .setting_keys()
                .iter()
                .copied()
                .filter(|k| arm.settings.contains_key(*k))
                .collect();
            if !theirs.is_empty() {
                return Err(ProviderError::Config(format!(
                    "{} only apply to provider = \"{}\"",
                    quoted(&theirs),
                    factory.name()
                )));
            }
        }
        Ok(())
    }

    /// Checks an arm without building it — the configuration-load check, in place of refusing
    /// unknown keys while parsing: keys no provider reads, and the settings' types of a
    /// registered provider. Another provider's keys on an arm, and arms of a provider not in
    /// this build, are reported when the arm is built.
    pub fn check_arm(&self, arm: &ArmConfig) -> Result<(), BuildError> {
        if let Some(key) = self.unknown_setting(arm) {
            return Err(BuildError::Message(
                unknown_key(key, &self.known_keys())
                    .to_string()
                    .trim_start_matches("configuration error: ")
                    .to_owned(),
            ));
        }
        match arm.provider_name().and_then(|n| self.factory(n)) {
            Some(factory) => {
                let theirs = factory.setting_keys();
                match arm.settings.keys().find(|k| !theirs.contains(&k.as_str())) {
                    // Another registered provider's key: said when the arm is built.
                    Some(_) => Ok(()),
                    None => factory.check(arm),
                }
            }
            None => Ok(()),
        }
    }

    /// Checks every arm of a model (see [`ProviderRegistry::check_arm`]); the error names the
    /// model, as a parse error of its table would.
    pub fn check_model(&self, config: &ModelConfig) -> Result<(), BuildError> {
        let within = if config.listed_arms { "arms: " } else { "" };
        for arm in &config.arms {
            self.check_arm(arm).map_err(|e| {
                BuildError::Message(format!("model `{}`: {within}{e}", config.name))
            })?;
        }
        Ok(())
    }

    /// Builds one arm with the provider it names.
    pub fn build_arm(&self, arm: &ArmConfig, env: &dyn Env) -> Result<Arm, BuildError> {
        if let Some(name) = arm.provider_name() {
            if let Some(factory) = self.factory(name) {
                let theirs = factory.setting_keys();
                if let Some(key) = arm.settings.keys().find(|k| !theirs.contains(&k.as_str())) {
                    let mut expected = ARM_KEYS.to_vec();
                    expected.extend_from_slice(theirs);
                    return Err(unknown_key(key, &expected).into());
                }
                return factory.build_arm(arm, env);
            }
            if let Some(err) = self.not_built(name) {
                return Err(err.into());
            }
        }
        self.check_builtin(arm)?;
        Ok(config::build_arm(arm, env)?)
    }

    /// Builds a configured model (an error names the model and the arm).
    pub fn build_model(&self, config: &ModelConfig, env: &dyn Env) -> Result<Model, BuildError> {
        let arms = config
            .arms
            .iter()
            .enumerate()
            .map(|(i, arm)| {
                self.build_arm(arm, env).map_err(|source| BuildError::Arm {
                    model: config.name.clone(),
                    arm: i + 1,
                    source: Box::new(source),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Model::new(config.name.clone(), arms))
    }

    /// A model from a command-line name (`provider:model[@BASE_URL]`, `embedded[:PATH]`) and an
    /// optional tool mode.
    pub fn model_from_spec(
        &self,
        spec: &str,
        mode: Option<ToolMode>,
        env: &dyn Env,
    ) -> Result<Model, BuildError> {
        let arm = ArmConfig {
            model: Some(spec.to_owned()),
            tool_mode: mode,
            ..ArmConfig::default()
        };
        Ok(Model::new(
            spec.to_owned(),
            vec![self.build_arm(&arm, env)?],
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::collections::BTreeMap;

    use super::*;

    /// A provider with one setting, `depth` (a number), whose arms are never built.
    struct Deep;

    impl ProviderFactory for Deep {
        fn name(&self) -> &'static str {
            "deep"
        }
        fn setting_keys(&self) -> &'static [&'static str] {
            &["depth"]
        }
        fn check(&self, arm: &ArmConfig) -> Result<(), BuildError> {
            match arm.settings.get("depth") {
                Some(v) if !v.is_u64() => Err(BuildError::Message("depth: not a number".into())),
                _ => Ok(()),
            }
        }
        fn build_arm(&self, arm: &ArmConfig, _env: &dyn Env) -> Result<Arm, BuildError> {
            self.check(arm)?;
            Err(BuildError::Message("deep arms are not built".into()))
        }
    }

    fn model(json: serde_json::Value) -> ModelConfig {
        serde_json::from_value(json).unwrap()
    }

    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(s) = next {
            out.push_str(": ");
            out.push_str(&s.to_string());
            next = s.source();
        }
        out
    }

    #[test]
    fn a_registered_provider_gets_its_settings_and_others_refuse_them() {
        let mut registry = ProviderRegistry::new();
        registry.register(Arc::new(Deep));
        assert!(registry.has("deep"));
        let env = BTreeMap::new();
        let cfg = model(serde_json::json!({"name": "d", "provider": "deep", "depth": 3}));
        registry.check_model(&cfg).unwrap();
        let err = registry.build_model(&cfg, &env).err().unwrap();
        assert_eq!(chain(&err), "model `d`, arm 1: deep arms are not built");
        // `model = "deep:…"` reaches the factory too.
        let err = registry
            .model_from_spec("deep:x", None, &env)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "deep arms are not built");
        let listed =
            model(serde_json::json!({"name": "l", "arms": [{"provider": "deep", "dpeth": 1}]}));
        let err = registry.check_model(&listed).unwrap_err().to_string();
        assert!(
            err.starts_with("model `l`: arms: unknown field `dpeth`"),
            "{err}"
        );
        // A setting of the wrong type is found at load.
        let bad = model(serde_json::json!({"name": "d", "provider": "deep", "depth": "x"}));
        let err = registry.check_model(&bad).unwrap_err().to_string();
        assert_eq!(err, "model `d`: depth: not a number");
        // Its key on a built-in provider's arm is named as its key when built.
        let other = model(serde_json::json!({"name": "o", "model": "scripted:x.json", "depth": 3}));
        registry.check_model(&other).unwrap();
        let err = chain(&registry.build_model(&other, &env).err().unwrap());
        assert!(
            err.contains("`depth` only apply to provider = \"deep\""),
            "{err}"
        );
        // A key nobody reads is refused at load, with every key that is read.
        let typo = model(serde_json::json!({"name": "o", "model": "scripted:x.json", "dpeth": 3}));
        let err = registry.check_model(&typo).unwrap_err().to_string();
        assert!(
            err.starts_with("model `o`: unknown field `dpeth`, expected one of `model`"),
            "{err}"
        );
        assert!(err.ends_with("`max_tokens`, `depth`"), "{err}");
    }

    #[test]
    fn absent_and_unknown_providers_are_named() {
        let mut registry = ProviderRegistry::new();
        registry.absent("deep", "built without the `deep` feature");
        assert!(registry.knows("deep") && !registry.has("deep"));
        let env = BTreeMap::new();
        let err = registry
            .model_from_spec("deep:x", None, &env)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "configuration error: the deep provider is not in this build (built without the `deep` feature)"
        );
        let cfg =
            model(serde_json::json!({"name": "d", "provider": "deep", "upstream_model": "m"}));
        registry.check_model(&cfg).unwrap();
        let err = chain(&registry.build_model(&cfg, &env).err().unwrap());
        assert!(
            err.contains(
                "model `d`, arm 1: configuration error: the deep provider is not in this build"
            ),
            "{err}"
        );
        let err = registry
            .model_from_spec("nosuch:m", None, &env)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown provider `nosuch`"), "{err}");
        // Registering it later makes it present.
        registry.register(Arc::new(Deep));
        assert!(registry.has("deep"));
        let err = registry
            .model_from_spec("deep:x", None, &env)
            .err()
            .unwrap();
        assert_eq!(err.to_string(), "deep arms are not built");
    }

    #[test]
    fn a_missing_key_is_told_apart() {
        let registry = ProviderRegistry::new();
        let cfg = model(serde_json::json!({"name": "g", "model": "openai:gpt-4o-mini"}));
        let err = registry.build_model(&cfg, &BTreeMap::new()).err().unwrap();
        assert!(err.is_missing_key(), "{err:?}");
        let cfg = model(serde_json::json!({"name": "g", "model": "nosuch:x"}));
        let err = registry.build_model(&cfg, &BTreeMap::new()).err().unwrap();
        assert!(!err.is_missing_key(), "{err:?}");
    }
}
