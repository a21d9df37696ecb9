//! `toolbridge.toml`: found with `--config FILE`, else `./toolbridge.toml`, else
//! `$XDG_CONFIG_HOME/toolbridge/toolbridge.toml` (`~/.config/toolbridge/toolbridge.toml`).
//! Secrets never live in the file: keys come from environment variables it names.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;
use toolbridge_providers::config::ModelConfig;

use crate::agent::setup::AgentSection;

/// The whole file. Unknown sections and keys are errors, so a typo does not silently do nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `[server]`, read by `toolbridge serve` (every key has a default; see the README).
    #[serde(default)]
    pub server: toolbridge_gateway::ServerConfig,
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    #[serde(default)]
    pub agent: AgentSection,
    /// `[tools]`: the built-in tools (toolbridge-tools) and their back-ends.
    #[serde(default)]
    pub tools: toolbridge_tools::ToolsConfig,
    /// `[[mcp_servers]]`: MCP servers whose tools join the agent's (see the README).
    #[serde(default)]
    pub mcp_servers: Vec<toolbridge_mcp::McpServerConfig>,
}

/// Where the configuration came from (for messages).
pub struct Loaded {
    pub config: FileConfig,
    pub path: Option<PathBuf>,
}

/// The user configuration folder's file.
fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("toolbridge").join("toolbridge.toml"))
}

/// Loads the configuration; no file at all is an empty configuration.
pub fn load(explicit: Option<&Path>) -> anyhow::Result<Loaded> {
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => [Some(PathBuf::from("toolbridge.toml")), user_file()]
            .into_iter()
            .flatten()
            .find(|p| p.is_file()),
    };
    let Some(path) = path else {
        return Ok(Loaded {
            config: FileConfig::default(),
            path: None,
        });
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let config: FileConfig =
        toml::from_str(&text).with_context(|| format!("in {}", path.display()))?;
    Ok(Loaded {
        config,
        path: Some(path),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn parses_models_and_agent_and_rejects_typos() {
        let c: FileConfig = toml::from_str(
            r#"
            [agent]
            model = "local"
            max_rounds = 5
            skill_dirs = ["skills"]

            [[models]]
            name = "local"
            base_url = "http://127.0.0.1:18000/v1"
            upstream_model = "mock-model"
            tool_mode = "prompt"
            "#,
        )
        .unwrap();
        assert_eq!(c.agent.max_rounds, Some(5));
        assert_eq!(c.models[0].name, "local");
        let e = toml::from_str::<FileConfig>("[agent]\nmax_round = 5\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `max_round`"), "{e}");
        let e = toml::from_str::<FileConfig>("[agnet]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `agnet`"), "{e}");
    }
}
