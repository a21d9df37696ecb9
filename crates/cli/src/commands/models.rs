//! `toolbridge models [--json]`: the configured models and what each resolves to — provider,
//! upstream model, base URL (without user info or query), tool mode (and for a text mode the
//! dialect), and whether it can be used
//! here (an unset API key variable, a missing file). Read from the configuration alone: nothing
//! is built, loaded or contacted, and no key's value is shown.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::parser::{Dialect, DialectSetting};
use toolbridge_providers::config::{
    arm_dialect, arm_target, ArmConfig, Env, ModelConfig, ProcessEnv,
};
use toolbridge_providers::http::shown_url;
use toolbridge_runtime::models::{run_default, serves_run_default};
use toolbridge_runtime::DEFAULT_MODEL;

use crate::config;

/// List the configured models and what each resolves to.
///
/// For each `[[models]]` entry (and the model `[agent] model` names, and the embedded default
/// when no model is set): every arm's provider, upstream model, base URL, tool mode (`auto`
/// resolved) and whether it is available here. Nothing is contacted or loaded.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file (default: ./toolbridge.toml, then the user config folder).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One model of the listing.
#[derive(Debug, Serialize)]
struct ModelView {
    name: String,
    /// Where it comes from: `models` (a `[[models]]` entry), `agent` (a provider:model name in
    /// `[agent] model`), `default` (the embedded default model).
    source: &'static str,
    /// The model `run` and `chat` use when no `--model` is given.
    default: bool,
    /// `toolbridge serve` serves it (an entry without its key is answered with 503 instead; the
    /// default row is served when no entry can answer — the runtime's rule, shared with serve).
    served: bool,
    /// Every arm is available (a model with arms answers as long as one is, but this is what
    /// the listing can promise).
    available: bool,
    arms: Vec<ArmView>,
}

#[derive(Debug, Serialize)]
struct ArmView {
    provider: String,
    model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_url: Option<String>,
    /// As configured.
    tool_mode: ToolMode,
    /// `auto` resolved for the provider.
    resolved_tool_mode: ToolMode,
    /// For an arm whose text is parsed (prompt, verbatim): the dialect as configured and as
    /// resolved (`auto` from the model name).
    #[serde(skip_serializing_if = "Option::is_none")]
    dialect: Option<DialectSetting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved_dialect: Option<Dialect>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_key_env: Option<String>,
    available: bool,
    /// Why it is not available, or what happens on first use.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = config::load(args.config.as_deref())?;
    let views = list(&loaded.config, &ProcessEnv);
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&views)?)?;
    } else {
        crate::out!("{}", text(&views))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The listing of a configuration.
fn list(file: &config::FileConfig, env: &dyn Env) -> Vec<ModelView> {
    let chosen = file.agent.model.as_deref();
    let mut views: Vec<ModelView> = file
        .models
        .iter()
        .map(|m| model_view(m, "models", chosen == Some(m.name.as_str()), env))
        .collect();
    // The model run uses when no entry is it: a provider:model name (or `embedded`) in
    // [agent], or the embedded default.
    let extra = run_default(chosen, &file.models)
        .map(|name| (name, if chosen.is_some() { "agent" } else { "default" }));
    let usable = views.iter().filter(|v| v.available).count();
    if let Some((name, source)) = extra {
        let config = ModelConfig {
            name: if source == "default" {
                DEFAULT_MODEL.to_owned()
            } else {
                name.to_owned()
            },
            arms: vec![ArmConfig {
                model: Some(name.to_owned()),
                tool_mode: file.agent.tool_mode,
                ..ArmConfig::default()
            }],
            listed_arms: false,
        };
        let mut view = model_view(&config, source, true, env);
        view.served = view.available && serves_run_default(usable);
        views.push(view);
    }
    views
}

fn model_view(
    config: &ModelConfig,
    source: &'static str,
    default: bool,
    env: &dyn Env,
) -> ModelView {
    let arms: Vec<ArmView> = config.arms.iter().map(|arm| arm_view(arm, env)).collect();
    let available = arms.iter().all(|a| a.available);
    ModelView {
        name: config.name.clone(),
        source,
        default,
        served: available,
        available,
        arms,
    }
}

fn arm_view(arm: &ArmConfig, env: &dyn Env) -> ArmView {
    let mode = arm.tool_mode.unwrap_or_default();
    if arm.provider_name() == Some("embedded") {
        return embedded_view(arm, mode);
    }
    let target = match arm_target(arm) {
        Ok(target) => target,
        Err(e) => {
            return ArmView {
                provider: arm.provider_name().unwrap_or("openai").to_owned(),
                model: arm
                    .upstream_model
                    .clone()
                    .or_else(|| arm.model.clone())
                    .unwrap_or_default(),
                base_url: arm.base_url.as_deref().map(shown_url),
                tool_mode: mode,
                resolved_tool_mode: mode,
                dialect: None,
                resolved_dialect: None,
                api_key_env: arm.api_key_env.clone(),
                available: false,
                note: Some(e.to_string()),
            }
        }
    };
    let missing_key = target
        .key_env
        .as_deref()
        .filter(|var| target.key_required && env.var(var).is_none());
    let missing_script = (target.preset.name == "scripted" && !Path::new(&target.model).is_file())
        .then(|| format!("no script file {}", target.model));
    let resolved_tool_mode = mode.resolve(target.preset.native_tools);
    let (dialect, resolved_dialect, dialect_problem) = match arm_dialect(arm, &target) {
        _ if !resolved_tool_mode.parses_text() => (None, None, None),
        Ok(d) => (Some(arm.dialect.unwrap_or_default()), Some(d), None),
        Err(e) => (arm.dialect, None, Some(e.to_string())),
    };
    let note = dialect_problem
        .or(missing_key.map(|var| format!("set {var} to use it")))
        .or(missing_script);
    ArmView {
        provider: target.preset.name.to_owned(),
        model: target.model.clone(),
        base_url: (!target.base_url.is_empty()).then(|| shown_url(&target.base_url)),
        tool_mode: mode,
        resolved_tool_mode,
        dialect,
        resolved_dialect,
        api_key_env: target.key_env.clone(),
        available: note.is_none(),
        note,
    }
}

/// An embedded arm: its model file (or the default model, pulled on first use).
#[cfg(feature = "embedded")]
fn embedded_view(arm: &ArmConfig, mode: ToolMode) -> ArmView {
    use toolbridge_embedded::pull;

    let (model, available, note) = match toolbridge_embedded::provider::settings(arm) {
        Ok((Some(path), _, _)) => {
            let exists = path.is_file();
            let note = (!exists).then(|| format!("model file {} does not exist", path.display()));
            (path.display().to_string(), exists, note)
        }
        Ok((None, _, _)) => {
            let pulled = pull::models_dir()
                .map(|dir| pull::default_model_path(&dir))
                .is_ok_and(|path| path.is_file());
            let note =
                (!pulled).then(|| "downloaded on first use (toolbridge model pull)".to_owned());
            (
                "SmolLM2-135M-Instruct (the default model)".to_owned(),
                true,
                note,
            )
        }
        Err(e) => (String::new(), false, Some(e.to_string())),
    };
    ArmView {
        provider: "embedded".to_owned(),
        model,
        base_url: None,
        tool_mode: mode,
        // The embedded model takes tools natively (its calls are grammar-constrained).
        resolved_tool_mode: mode.resolve(true),
        dialect: None,
        resolved_dialect: None,
        api_key_env: None,
        available,
        note,
    }
}

#[cfg(not(feature = "embedded"))]
fn embedded_view(_arm: &ArmConfig, mode: ToolMode) -> ArmView {
    ArmView {
        provider: "embedded".to_owned(),
        model: toolbridge_runtime::DEFAULT_MODEL_LABEL.to_owned(),
        base_url: None,
        tool_mode: mode,
        resolved_tool_mode: mode.resolve(true),
        dialect: None,
        resolved_dialect: None,
        api_key_env: None,
        available: false,
        note: Some(format!(
            "the embedded provider is not in this build ({})",
            crate::providers::EMBEDDED_ABSENT
        )),
    }
}

/// The listing as text, one block per model.
fn text(views: &[ModelView]) -> String {
    let mut out = String::new();
    for view in views {
        out.push_str(&view.name);
        match (view.source, view.default) {
            ("default", _) => out.push_str("  (no [agent] model: run and chat use this"),
            (_, true) => out.push_str("  ([agent] model: run and chat use this"),
            _ => {}
        }
        if view.source != "models" {
            out.push_str(if view.served {
                "; serve serves it too, as no [[models]] entry can answer)"
            } else {
                "; serve does not: it serves the [[models]] entries)"
            });
        } else if view.default {
            out.push(')');
        }
        out.push('\n');
        for (i, arm) in view.arms.iter().enumerate() {
            out.push_str(&format!("  {}. {} {}", i + 1, arm.provider, arm.model));
            if let Some(url) = &arm.base_url {
                out.push_str(&format!(" at {url}"));
            }
            if arm.tool_mode == arm.resolved_tool_mode {
                out.push_str(&format!(", tool mode {}", arm.tool_mode));
            } else {
                out.push_str(&format!(
                    ", tool mode {} ({})",
                    arm.tool_mode, arm.resolved_tool_mode
                ));
            }
            match (arm.dialect, arm.resolved_dialect) {
                (Some(DialectSetting::Auto), Some(d)) => {
                    out.push_str(&format!(", dialect auto ({d})"))
                }
                (_, Some(d)) => out.push_str(&format!(", dialect {d}")),
                _ => {}
            }
            if let Some(var) = &arm.api_key_env {
                out.push_str(&format!(", key from {var}"));
            }
            match (&arm.note, arm.available) {
                (Some(note), false) => out.push_str(&format!(" — unavailable: {note}")),
                (Some(note), true) => out.push_str(&format!(" — {note}")),
                (None, _) => {}
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::collections::BTreeMap;

    use super::*;

    fn listing(toml: &str, env: &[(&str, &str)]) -> Vec<ModelView> {
        let file: config::FileConfig = toml::from_str(toml).unwrap();
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        list(&file, &env)
    }

    #[test]
    fn arms_resolve_without_secrets_and_missing_keys_are_unavailable() {
        let views = listing(
            r#"
            [agent]
            model = "smart"
            [[models]]
            name = "local"
            base_url = "http://user:pw@127.0.0.1:8080/v1?token=x"
            upstream_model = "qwen2.5"
            tool_mode = "prompt"
            [[models]]
            name = "smart"
            [[models.arms]]
            model = "anthropic:claude-sonnet-4-5"
            [[models.arms]]
            model = "openai:gpt-4o-mini"
            "#,
            &[("OPENAI_API_KEY", "sk-secret")],
        );
        assert_eq!(
            views.len(),
            2,
            "no default row when [agent] model names an entry"
        );
        let local = &views[0];
        assert_eq!(
            local.arms[0].base_url.as_deref(),
            Some("http://127.0.0.1:8080/v1")
        );
        assert_eq!(local.arms[0].resolved_tool_mode, ToolMode::Prompt);
        assert!(local.available && !local.default);
        let smart = &views[1];
        assert!(smart.default && !smart.available);
        assert_eq!(
            smart.arms[0].note.as_deref(),
            Some("set ANTHROPIC_API_KEY to use it")
        );
        assert_eq!(smart.arms[0].resolved_tool_mode, ToolMode::Native);
        assert!(smart.arms[1].available);
        let shown = text(&views) + &serde_json::to_string(&views).unwrap();
        assert!(
            !shown.contains("sk-secret") && !shown.contains("pw") && !shown.contains("token"),
            "{shown}"
        );
    }

    #[test]
    fn without_a_model_the_embedded_default_is_listed_as_used() {
        let views = listing("", &[]);
        assert_eq!(views.len(), 1);
        assert_eq!(
            (views[0].name.as_str(), views[0].source, views[0].default),
            ("embedded", "default", true)
        );
        assert_eq!(views[0].arms[0].provider, "embedded");
        // A provider:model name in [agent] is listed as such.
        let views = listing(
            "[agent]\nmodel = \"ollama:qwen2.5\"\ntool_mode = \"prompt\"\n",
            &[],
        );
        assert_eq!(views[0].source, "agent");
        assert_eq!(
            views[0].arms[0].base_url.as_deref(),
            Some("http://127.0.0.1:11434/v1")
        );
        assert_eq!(views[0].arms[0].tool_mode, ToolMode::Prompt);
        assert!(views[0].available, "ollama needs no key");
    }

    #[test]
    fn text_mode_arms_show_their_dialect() {
        let views = listing(
            r#"
            [[models]]
            name = "llama"
            model = "ollama:llama3.1"
            tool_mode = "prompt"
            [[models]]
            name = "fixed"
            model = "ollama:qwen2.5"
            tool_mode = "verbatim"
            dialect = "mistral"
            [[models]]
            name = "native"
            model = "ollama:llama3.1"
            [[models]]
            name = "clash"
            model = "ollama:llama3.1"
            tool_mode = "prompt"
            tag = "tool_use"
            "#,
            &[],
        );
        let shown = text(&views);
        assert!(
            shown.contains("llama3.1 at http://127.0.0.1:11434/v1, tool mode prompt, dialect auto (llama3-json)\n"),
            "{shown}"
        );
        assert!(
            shown.contains(", tool mode verbatim, dialect mistral\n"),
            "{shown}"
        );
        assert!(
            shown.contains(", tool mode auto (native)\n"),
            "a native arm parses no text: {shown}"
        );
        assert!(!views[3].available);
        assert!(
            shown.contains("unavailable: configuration error: `tag = \"tool_use\"` applies to the hermes dialect only"),
            "{shown}"
        );
        let json = serde_json::to_value(&views).unwrap();
        assert_eq!(json[0]["arms"][0]["dialect"], "auto");
        assert_eq!(json[0]["arms"][0]["resolved_dialect"], "llama3-json");
        assert!(json[2]["arms"][0].get("dialect").is_none());
    }
}
