//! # toolbridge-tools
//!
//! The built-in tools (DESIGN.md §5, seed 000) with the seed's names, descriptions and schemas:
//! `web_search` ([`search`]), `web_fetch` ([`web_fetch`]), `fetch_image` ([`fetch_image`]),
//! `image_generate` ([`images`]) and `save_memory` ([`save_memory`], stores in [`memory`]); and
//! the outbound-fetch guard every URL a model chose goes through ([`net`], SECURITY.md §1).
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
pub mod save_memory;
pub mod search;
pub mod web_fetch;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toolbridge_agent::toolbox::ToolboxError;
use toolbridge_agent::Toolbox;

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
}

impl ToolsConfig {
    pub fn is_enabled(&self, tool: Builtin) -> bool {
        self.enabled.contains(&tool)
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

/// The conversation workspace on the host: `[tools] workspace`, else
/// `$XDG_DATA_HOME/toolbridge/workspaces/<conversation>`.
pub fn workspace_for(config: &ToolsConfig, conversation: &str) -> Option<PathBuf> {
    if let Some(w) = &config.workspace {
        return Some(w.clone());
    }
    let safe = common::safe_stem(conversation).unwrap_or_else(|| "default".to_owned());
    memory::default_sqlite_path().and_then(|p| p.parent().map(|d| d.join("workspaces").join(safe)))
}
