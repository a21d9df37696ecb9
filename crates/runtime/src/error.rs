//! The runtime's errors. Each names what was being set up; the cause is its source (printed
//! after it, `outer: inner`, as the CLI prints error chains).

use toolbridge_providers::BuildError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No model is configured and the embedded default cannot be used.
    #[error("no model configured: pass --model (for example --model openai:gpt-4o-mini, --model ollama:qwen2.5 or --model scripted:FILE.json) or set `model` under [agent] in toolbridge.toml")]
    NoModel(#[source] BuildError),
    /// A `[[models]]` entry cannot be built.
    #[error("model `{name}`")]
    Model {
        name: String,
        #[source]
        source: BuildError,
    },
    /// A model name (`provider:model`) cannot be built.
    #[error(transparent)]
    Spec(BuildError),
    /// A name without `provider:` that no `[[models]]` entry defines (the message says what was
    /// looked at).
    #[error("{0}")]
    UnknownModel(String),
    /// A `[[models]]` entry the gateway cannot serve (other than for a missing API key).
    #[error("cannot set up the configured models")]
    Served(#[source] BuildError),
    #[error("loading skills")]
    Skills(#[source] toolbridge_agent::skills::SkillError),
    #[error("setting up the built-in tools")]
    Tools(#[source] toolbridge_tools::SetupError),
    #[error(transparent)]
    Agent(#[from] toolbridge_agent::AgentError),
    /// A `--mcp` flag that does not parse.
    #[error(transparent)]
    McpFlag(toolbridge_mcp::ConfigError),
    #[error("MCP servers")]
    Mcp(#[source] toolbridge_mcp::ConfigError),
}
