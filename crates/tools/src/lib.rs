//! # toolbridge-tools
//!
//! The built-in tools (docs/src/tools.md, seed 000) with the seed's names, descriptions and
//! schemas: `web_search` ([`search`]), `web_fetch` ([`web_fetch`]), `fetch_image`
//! ([`fetch_image`]), `image_generate` ([`images`]) and `save_memory` ([`save_memory`], stores in
//! [`memory`]); and the outbound-fetch guard every URL a model chose goes through ([`net`],
//! docs/src/security.md, "Outbound fetches: the guard"). `run_in_terminal` ([`terminal`], seed
//! 002's arguments) runs shell commands in the sandbox, with a risk the runtime classifies itself
//! ([`terminal::risk`], docs/src/security.md, "Model-written code", and docs/src/sandbox.md).
//!
//! Tools that write files need the conversation workspace (`ToolContext::workspace`, with
//! `uploads/`, `downloads/`, `outputs/`); without one they refuse with a tool error. The model is
//! given sandbox paths (`/workspace/downloads/<name>`), which are `<workspace>/downloads/<name>`
//! on the host.

pub mod common;
pub mod fetch_image;
pub mod images;
pub mod memory;
pub mod net;
pub mod python;
pub mod quota;
pub mod save_memory;
pub mod search;
pub mod terminal;
pub mod web_fetch;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toolbridge_agent::toolbox::ToolboxError;
use toolbridge_agent::{Tool, Toolbox};

use crate::images::{ImageGenerate, ImagesConfig, ImagesEndpoint};
use crate::memory::{MemoryConfig, MemoryError, MemoryStore};
use crate::net::{FetchConfig, Guard, Policy, Resolver, SystemResolver};
use crate::search::{Backend, SearchConfig, WebSearch};

/// A built-in tool's name in `[tools] enabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    WebSearch,
    WebFetch,
    FetchImage,
    PythonExecute,
    RunInTerminal,
    ImageGenerate,
    SaveMemory,
}

/// `[tools]` in `toolbridge.toml`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// The built-in tools a run offers (none by default).
    #[serde(default)]
    pub enabled: Vec<Builtin>,
    /// The conversation workspace on the host (default
    /// `$XDG_DATA_HOME/toolbridge/workspaces/<conversation>`).
    pub workspace: Option<PathBuf>,
    /// `save_memory` calls need approval (then `[agent.approvals]` decides).
    #[serde(default)]
    pub save_memory_approval: bool,
    #[serde(default)]
    pub fetch: FetchConfig,
    #[serde(default)]
    pub search: SearchConfig,
    /// The images endpoint; without it `image_generate` says it is not configured.
    pub images: Option<ImagesConfig>,
    #[serde(default)]
    pub memory: MemoryConfig,
    /// `[tools.python]`: `python_execute`'s interpreter sessions.
    #[serde(default)]
    pub python: python::PythonConfig,
    /// `[tools.sandbox]`: the isolation model-written code runs in.
    #[serde(default)]
    pub sandbox: toolbridge_sandbox::SandboxConfig,
    /// `[tools.terminal]`: `run_in_terminal`'s timeout and output cut.
    #[serde(default)]
    pub terminal: terminal::TerminalConfig,
    /// `[tools.workspaces]`: where conversation workspaces live and when idle ones are removed.
    #[serde(default)]
    pub workspaces: workspace::WorkspacesConfig,
}

impl ToolsConfig {
    pub fn is_enabled(&self, tool: Builtin) -> bool {
        self.enabled.contains(&tool)
    }

    /// Whether an enabled tool reads or writes the conversation workspace (so a run should open
    /// and mark it before the first call).
    pub fn uses_workspace(&self) -> bool {
        [
            Builtin::FetchImage,
            Builtin::ImageGenerate,
            Builtin::PythonExecute,
            Builtin::RunInTerminal,
        ]
        .into_iter()
        .any(|t| self.is_enabled(t))
    }
}

/// Set-up problems (operator-facing).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("[tools]: {0}")]
    Config(String),
    #[error(transparent)]
    Toolbox(#[from] ToolboxError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// Adds the enabled built-in tools to a toolbox, in the seed's order, with the system resolver and
/// keys from the process environment.
pub fn register(toolbox: &mut Toolbox, config: &ToolsConfig) -> Result<(), SetupError> {
    register_with(
        toolbox,
        config,
        &|name| std::env::var(name).ok(),
        Arc::new(SystemResolver),
    )
}

/// [`register`] with the environment and the resolver given (tests).
pub fn register_with(
    toolbox: &mut Toolbox,
    config: &ToolsConfig,
    env: &dyn Fn(&str) -> Option<String>,
    resolver: Arc<dyn Resolver>,
) -> Result<(), SetupError> {
    let policy = Policy::from_config(&config.fetch).map_err(SetupError::Config)?;
    let guard = Guard::new(policy, resolver);
    if config.is_enabled(Builtin::WebSearch) {
        let backend = Backend::from_config(&config.search, env).map_err(SetupError::Config)?;
        toolbox.add(Arc::new(WebSearch::new(backend)))?;
    }
    if config.is_enabled(Builtin::WebFetch) {
        toolbox.add(Arc::new(web_fetch::WebFetch::new(guard.clone())))?;
    }
    if config.is_enabled(Builtin::FetchImage) {
        toolbox.add(Arc::new(fetch_image::FetchImage::new(guard.clone())))?;
    }
    // One sandbox (probed once) for the tools that run code.
    let needs_sandbox =
        config.is_enabled(Builtin::PythonExecute) || config.is_enabled(Builtin::RunInTerminal);
    let shared_sandbox = if needs_sandbox {
        Some(
            toolbridge_sandbox::Sandbox::new(config.sandbox.clone())
                .and_then(|sandbox| {
                    // A fixed workspace is handed to the sandbox uid itself; what must be
                    // searchable is the folder above it.
                    let workspaces = match &config.workspace {
                        Some(fixed) => fixed.parent().map(Path::to_path_buf),
                        None => config.workspaces.root(),
                    };
                    match workspaces {
                        Some(dir) => sandbox.check_layout(dir.as_path()).map(|()| sandbox),
                        None => Ok(sandbox),
                    }
                })
                .map_err(|e| SetupError::Config(e.to_string()))?,
        )
    } else {
        None
    };
    if let (true, Some(sandbox)) = (
        config.is_enabled(Builtin::PythonExecute),
        shared_sandbox.clone(),
    ) {
        let python = Arc::new(python::PythonExecute::new(sandbox, config.python.clone()));
        toolbox.add(held_to_quota(python, config))?;
    }
    if let (true, Some(sandbox)) = (config.is_enabled(Builtin::RunInTerminal), shared_sandbox) {
        let terminal = Arc::new(terminal::RunInTerminal::new(
            sandbox,
            config.terminal.clone(),
        ));
        toolbox.add(held_to_quota(terminal, config))?;
    }
    if config.is_enabled(Builtin::ImageGenerate) {
        let endpoint = match &config.images {
            Some(c) => Some(ImagesEndpoint::from_config(c, env).map_err(SetupError::Config)?),
            None => None,
        };
        toolbox.add(Arc::new(ImageGenerate::new(endpoint, guard.clone())))?;
    }
    if config.is_enabled(Builtin::SaveMemory) {
        let store = memory::open_store(config.memory.url.as_deref())?;
        toolbox.add(Arc::new(
            save_memory::SaveMemory::new(store).requiring_approval(config.save_memory_approval),
        ))?;
    }
    Ok(())
}

/// A code-running tool wrapped in the workspace quota, when there is one.
fn held_to_quota(tool: Arc<dyn Tool>, config: &ToolsConfig) -> Arc<dyn Tool> {
    match config.workspaces.max_bytes() {
        Some(max) => Arc::new(quota::WorkspaceQuota::new(tool, max)),
        None => tool,
    }
}

/// The memory store of a configuration.
pub fn memory_store(config: &ToolsConfig) -> Result<Arc<dyn MemoryStore>, SetupError> {
    Ok(memory::open_store(config.memory.url.as_deref())?)
}

/// The user's ACTIVE memories for the system prompt, when `save_memory` is enabled (an empty list
/// otherwise: nothing is opened).
pub async fn memories_for(config: &ToolsConfig, user: &str) -> Result<Vec<String>, SetupError> {
    if !config.is_enabled(Builtin::SaveMemory) {
        return Ok(Vec::new());
    }
    let store = memory_store(config)?;
    Ok(memory::active_lines(store.as_ref(), user).await?)
}

/// The conversation workspace on the host: `[tools] workspace` (one fixed folder), else
/// `<[tools.workspaces] root>/<conversation>` (default root `$XDG_DATA_HOME/toolbridge/workspaces`).
pub fn workspace_for(config: &ToolsConfig, conversation: &str) -> Option<PathBuf> {
    if let Some(w) = &config.workspace {
        return Some(w.clone());
    }
    let safe = if workspace::valid_conversation(conversation) {
        conversation.to_owned()
    } else {
        common::safe_stem(conversation).unwrap_or_else(|| "default".to_owned())
    };
    config.workspaces.root().map(|root| root.join(safe))
}

/// Opens (creating, marking as used) the workspace of a conversation.
pub fn open_workspace(
    config: &ToolsConfig,
    conversation: &str,
) -> Result<workspace::Workspace, workspace::WorkspaceError> {
    match &config.workspace {
        Some(fixed) => workspace::Workspace::at(fixed.clone()),
        None => {
            let root = config
                .workspaces
                .root()
                .ok_or(workspace::WorkspaceError::NoRoot)?;
            workspace::Workspace::open(&root, conversation)
        }
    }
}
