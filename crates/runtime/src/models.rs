//! Models from configuration: `[[models]]` entries and `--model` names through the program's
//! [`ProviderRegistry`], and the one rule for "no model configured": the embedded default.

use toolbridge_protocol::mode::ToolMode;
use toolbridge_providers::config::{Env, ModelConfig};
use toolbridge_providers::{Model, ProviderRegistry};

use crate::config::Origin;
use crate::error::RuntimeError;

/// The model used when none is configured: the embedded default (pulled on first use).
pub const DEFAULT_MODEL: &str = "embedded";

/// How messages name the model a run uses when none is configured.
pub const DEFAULT_MODEL_LABEL: &str = "embedded (SmolLM2-135M-Instruct)";

/// Resolves the model of a run: a `[[models]]` name wins over a `provider:model` reading of the
/// same text; no name at all is the [`DEFAULT_MODEL`]. `origin` says where `models` came from
/// (for the message when a bare name is not among them).
pub fn resolve_model(
    registry: &ProviderRegistry,
    env: &dyn Env,
    name: Option<&str>,
    mode: Option<ToolMode>,
    models: &[ModelConfig],
    origin: &Origin,
) -> Result<Model, RuntimeError> {
    let Some(name) = name else {
        // No model configured: the embedded default (pulled on first use).
        return registry
            .model_from_spec(DEFAULT_MODEL, mode, env)
            .map_err(RuntimeError::NoModel);
    };
    if let Some(config) = models.iter().find(|m| m.name == name) {
        return registry
            .build_model(config, env)
            .map_err(|source| RuntimeError::Model {
                name: name.to_owned(),
                source,
            });
    }
    // `embedded` alone names a provider; any other name without `provider:` must be configured.
    if !name.contains(':') && !registry.knows(name) {
        return Err(RuntimeError::UnknownModel(unknown_bare_name(
            name, models, origin,
        )));
    }
    registry
        .model_from_spec(name, mode, env)
        .map_err(RuntimeError::Spec)
}

/// The known name closest to `name` when it is close enough to be a typo (`embeded` →
/// `embedded`): within a third of its length in edits, at least one.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = (name.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|candidate| (strsim::damerau_levenshtein(name, candidate), candidate))
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// A name without `provider:` that no `[[models]]` entry defines: say what was looked at, and
/// the name it was probably meant to be.
fn unknown_bare_name(name: &str, models: &[ModelConfig], origin: &Origin) -> String {
    const HOW: &str = "a bare model name must be defined under [[models]] in toolbridge.toml, or written provider:model (for example openai:gpt-4o-mini, ollama:qwen2.5, scripted:replies.json)";
    let known = models
        .iter()
        .map(|m| m.name.as_str())
        .chain([DEFAULT_MODEL]);
    let named = match did_you_mean(name, known) {
        Some(meant) => format!("no model named `{name}` (did you mean `{meant}`?)"),
        None => format!("no model named `{name}`"),
    };
    match origin {
        Origin::NotFound(_) => format!("{named}: {origin}; {HOW}"),
        Origin::File(path) => {
            let defined = if models.is_empty() {
                "it defines no [[models]]".to_owned()
            } else {
                let names: Vec<String> = models.iter().map(|m| format!("`{}`", m.name)).collect();
                format!("it defines {}", names.join(", "))
            };
            format!("{named} in {} ({defined}); {HOW}", path.display())
        }
    }
}

/// The models a gateway serves (see [`crate::Runtime::served_models`]).
#[derive(Clone, Default)]
pub struct ServedModels {
    /// Ready to serve, in the order configured.
    pub models: Vec<Model>,
    /// Configured models whose API key variable is unset, with the reason: served with 503
    /// until the key is set (a missing key is the environment's, not the file's).
    pub unavailable: Vec<(String, String)>,
    /// When no `[[models]]` entry can answer: whether the model `run` uses by default (see
    /// [`run_default`]) is served (`Ok`), or why not.
    pub default_model: Option<Result<(), String>>,
}

impl std::fmt::Debug for ServedModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModels")
            .field(
                "models",
                &self.models.iter().map(|m| &m.name).collect::<Vec<_>>(),
            )
            .field("unavailable", &self.unavailable)
            .field("default_model", &self.default_model)
            .finish()
    }
}

/// The model `run` and `chat` use without `--model`, when it is not a `[[models]]` entry: the
/// `[agent] model` written `provider:model` (or `embedded`), or the embedded default
/// ([`DEFAULT_MODEL`]) when `[agent] model` is unset. `None` when `[agent] model` names an
/// entry. `toolbridge models` lists it after the entries, under this name.
pub fn run_default<'a>(
    agent_model: Option<&'a str>,
    configured: &[ModelConfig],
) -> Option<&'a str> {
    match agent_model {
        None => Some(DEFAULT_MODEL),
        Some(name) if configured.iter().any(|m| m.name == name) => None,
        Some(name) => Some(name),
    }
}

/// Whether a server serves the [`run_default`] model besides the `[[models]]` entries: when
/// none of them can answer (none is configured, or every one lacks its API key), so that
/// `serve` answers with the model `run` would use rather than with nothing. With an entry that
/// can answer the default is not served: the embedded default would be loaded (or downloaded)
/// at every start for a model nobody asked the server for. `toolbridge models` says the same
/// from the same rule.
pub fn serves_run_default(usable_entries: usize) -> bool {
    usable_entries == 0
}

/// Builds every `[[models]]` entry for a server, and the model `run` uses by default when no
/// entry can answer ([`serves_run_default`]). What is left out and why goes to stderr as it is
/// found (a missing key, no default model).
pub fn served_models(
    registry: &ProviderRegistry,
    env: &dyn Env,
    configured: &[ModelConfig],
    agent_model: Option<&str>,
    mode: Option<ToolMode>,
) -> Result<ServedModels, RuntimeError> {
    let mut served = ServedModels::default();
    for config in configured {
        match registry.build_model(config, env) {
            Ok(model) => served.models.push(model),
            // A missing key is the environment's, not the file's: serve the other models.
            Err(err) if err.is_missing_key() => {
                let reason = error_line(&err);
                eprintln!(
                    "toolbridge: warning: model `{}` is not available until this is fixed (requests for it get 503): {reason}",
                    config.name
                );
                served.unavailable.push((config.name.clone(), reason));
            }
            Err(err) => return Err(RuntimeError::Served(err)),
        }
    }
    let default = run_default(agent_model, configured);
    if let Some(spec) = default.filter(|_| serves_run_default(served.models.len())) {
        served.default_model = Some(
            serve_run_default(registry, env, spec, mode, configured.is_empty())
                .map(|model| served.models.push(model)),
        );
    }
    Ok(served)
}

/// The [`run_default`] model `spec` for a server, saying why it is served (or why it cannot
/// be).
fn serve_run_default(
    registry: &ProviderRegistry,
    env: &dyn Env,
    spec: &str,
    mode: Option<ToolMode>,
    none_configured: bool,
) -> Result<Model, String> {
    let why = if none_configured {
        "no [[models]] configured"
    } else {
        "no [[models]] entry can answer"
    };
    match registry.model_from_spec(spec, mode, env) {
        Ok(model) => {
            eprintln!("toolbridge: {why}; serving `{spec}`, the model run and chat use");
            Ok(model)
        }
        Err(err) => {
            let reason = error_line(&err);
            eprintln!("toolbridge: {why}, and the model run and chat use, `{spec}`, cannot be served: {reason}");
            Err(reason)
        }
    }
}

/// An error and its causes on one line, `outer: inner`.
pub fn error_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        next = cause.source();
    }
    line
}
