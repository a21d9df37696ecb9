//! The sections of a loaded configuration the runtime reads, and where they came from.

use std::path::PathBuf;

use toolbridge_mcp::McpServerConfig;
use toolbridge_providers::config::ModelConfig;
use toolbridge_tools::ToolsConfig;

use crate::section::AgentSection;

/// The sections of `toolbridge.toml` that make models and agents (the caller parses the file;
/// `[server]` and other sections stay the caller's).
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `[[models]]`.
    pub models: Vec<ModelConfig>,
    /// `[agent]`.
    pub agent: AgentSection,
    /// `[tools]`: the built-in tools and their back-ends.
    pub tools: ToolsConfig,
    /// `[[mcp_servers]]`.
    pub mcp_servers: Vec<McpServerConfig>,
    /// Where the configuration came from (for messages).
    pub origin: Origin,
}

/// Where the configuration came from, for messages that depend on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Read from this file.
    File(PathBuf),
    /// No file was found at any of these paths.
    NotFound(Vec<PathBuf>),
}

impl Default for Origin {
    fn default() -> Self {
        Origin::NotFound(Vec::new())
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::NotFound(paths) => {
                let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "no configuration file was found (looked for {})",
                    list.join(" and ")
                )
            }
        }
    }
}
