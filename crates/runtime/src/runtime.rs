//! [`Runtime`]: one per process, built from the configuration without I/O; [`Session`]: one
//! agent for a user and a conversation, cheap to make per run or per request.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use toolbridge_agent::approval::{ApprovalPolicy, Approver, CallRisk};
use toolbridge_agent::{Agent, Tool, ToolContext, Toolbox};
use toolbridge_mcp::McpManager;
use toolbridge_protocol::mode::ToolMode;
use toolbridge_providers::config::{Env, ProcessEnv};
use toolbridge_providers::{Model, ProviderRegistry};
use toolbridge_tools::ToolsConfig;

use crate::config::Config;
use crate::error::RuntimeError;
use crate::models::{self, ServedModels, DEFAULT_MODEL_LABEL};
use crate::{build, mcp};

/// What the caller overrides of the configuration (the CLI's `--model`, `--tool-mode`, …); every
/// field is optional and wins over `[agent]`.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// A `[[models]]` name or a `provider:model` name.
    pub model: Option<String>,
    pub tool_mode: Option<ToolMode>,
    pub max_rounds: Option<usize>,
    /// Folders of skills offered besides `[agent] skill_dirs`.
    pub skill_dirs: Vec<PathBuf>,
    /// The system prompt.
    pub system: Option<String>,
    /// MCP servers over stdio, `NAME=COMMAND [ARGS…]`, besides `[[mcp_servers]]`.
    pub mcp: Vec<String>,
    /// Tightenings of `[agent.approvals.risk]` (never loosenings).
    pub approve_risk: Vec<(CallRisk, ApprovalPolicy)>,
}

/// The composition root of a process: the configuration, the providers it can build, the MCP
/// servers once started, and the run's model once resolved.
pub struct Runtime {
    config: Config,
    registry: ProviderRegistry,
    overrides: Overrides,
    env: Box<dyn Env + Send + Sync>,
    mcp: Arc<McpManager>,
    /// The model of [`Runtime::session`], resolved on first use (loading an embedded model or
    /// pulling the default one happens once, not per session).
    model: Mutex<Option<Model>>,
    /// The configured tools (built-in and MCP), built once for a server: every request's agent
    /// shares them (a Python session lives in its tool, across requests).
    shared_tools: Mutex<Option<Arc<Toolbox>>>,
}

/// What one server request asks of its agent ([`Runtime::request_session`]).
pub struct RequestAgent {
    pub model: Model,
    pub user: String,
    pub conversation: String,
    /// Which configured tools (built-in and MCP, by name) the request offers.
    pub offer: Box<dyn Fn(&str) -> bool + Send + Sync>,
    /// The request's own tools (a client's functions), after the offered ones.
    pub extra: Vec<Arc<dyn Tool>>,
    /// Replaces the configured system prompt.
    pub system_prompt: Option<String>,
    /// Tightens `[agent] max_tool_calls` (never loosens it).
    pub max_tool_calls: Option<usize>,
    /// Who answers approval questions (none: calls that need approval are denied).
    pub approver: Option<Arc<dyn Approver>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .field("registry", &self.registry)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Nothing is started or built yet; API keys come from the process environment.
    pub fn new(config: Config, registry: ProviderRegistry, overrides: Overrides) -> Runtime {
        Runtime {
            config,
            registry,
            overrides,
            env: Box::new(ProcessEnv),
            mcp: Arc::new(McpManager::empty()),
            model: Mutex::new(None),
            shared_tools: Mutex::new(None),
        }
    }

    /// Reads API keys from `env` instead of the process environment.
    pub fn with_env(mut self, env: Box<dyn Env + Send + Sync>) -> Runtime {
        self.env = env;
        self
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `[tools]` of the configuration.
    pub fn tools(&self) -> &ToolsConfig {
        &self.config.tools
    }

    pub fn registry(&self) -> &ProviderRegistry {
        &self.registry
    }

    /// The MCP servers (none until [`Runtime::start_mcp`]).
    pub fn mcp(&self) -> &McpManager {
        &self.mcp
    }

    /// Starts the MCP servers of `[[mcp_servers]]` and the overrides on the caller's async
    /// runtime; their tools join every session's toolbox.
    pub async fn start_mcp(&mut self) -> Result<(), RuntimeError> {
        self.mcp = mcp::start(&self.config.mcp_servers, &self.overrides.mcp).await?;
        Ok(())
    }

    /// Stops the MCP servers (stdio processes are stopped and reaped).
    pub async fn shutdown(&self) {
        self.mcp.shutdown().await;
    }

    /// The model name asked for: the overrides' over `[agent] model` (none: the default).
    pub fn model_name(&self) -> Option<&str> {
        self.overrides
            .model
            .as_deref()
            .or(self.config.agent.model.as_deref())
    }

    fn tool_mode(&self) -> Option<ToolMode> {
        self.overrides.tool_mode.or(self.config.agent.tool_mode)
    }

    fn resolve(&self, name: Option<&str>) -> Result<Model, RuntimeError> {
        models::resolve_model(
            &self.registry,
            self.env.as_ref(),
            name,
            self.tool_mode(),
            &self.config.models,
            &self.config.origin,
        )
    }

    /// The model of a run (see [`Runtime::model_name`]), built once.
    pub fn model(&self) -> Result<Model, RuntimeError> {
        let mut cached = self.model.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(model) = cached.as_ref() {
            return Ok(model.clone());
        }
        let model = self.resolve(self.model_name())?;
        *cached = Some(model.clone());
        Ok(model)
    }

    /// The model a name stands for, by the rules of [`Runtime::model`] (a `[[models]]` name
    /// wins over a `provider:model` reading), built now and not cached: `chat`'s `/model NAME`.
    pub fn model_named(&self, name: &str) -> Result<Model, RuntimeError> {
        self.resolve(Some(name))
    }

    /// The agent for `user` in `conversation`: the toolbox (built-in and MCP tools), the
    /// user's memories (loaded on the caller's async runtime), the model, the skills and
    /// limits. Approval questions go to `approver` when there is one (else calls that need
    /// approval are denied).
    pub async fn session(
        &self,
        user: &str,
        conversation: &str,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<Session, RuntimeError> {
        let section = &self.config.agent;
        let mut toolbox = build::toolbox(section, &self.config.tools)?;
        mcp::add_to(&mut toolbox, &self.mcp);
        let memories = build::memories(&self.config.tools, user).await;
        let model = self.model()?;
        let agent = build::agent(section, &self.overrides, model, toolbox, memories)?;
        let agent = match approver {
            Some(approver) => agent.with_approver(approver),
            None => agent,
        };
        Ok(Session {
            agent,
            model_name: self.model_name().unwrap_or(DEFAULT_MODEL_LABEL).to_owned(),
            user: user.to_owned(),
            conversation: conversation.to_owned(),
            tools: self.config.tools.clone(),
        })
    }

    /// The configured tools, built once (see [`RequestAgent`]); MCP tools join after
    /// [`Runtime::start_mcp`].
    pub fn shared_toolbox(&self) -> Result<Arc<Toolbox>, RuntimeError> {
        let mut cached = self.shared_tools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(toolbox) = cached.as_ref() {
            return Ok(Arc::clone(toolbox));
        }
        let mut toolbox = build::toolbox(&self.config.agent, &self.config.tools)?;
        mcp::add_to(&mut toolbox, &self.mcp);
        let toolbox = Arc::new(toolbox);
        *cached = Some(Arc::clone(&toolbox));
        Ok(toolbox)
    }

    /// The agent of one server request: the shared tools the request offers plus its own, the
    /// user's memories, the configured skills and limits, and the request's model.
    pub async fn request_session(&self, request: RequestAgent) -> Result<Session, RuntimeError> {
        let shared = self.shared_toolbox()?;
        let mut toolbox = shared.filtered(|name| (request.offer)(name));
        for tool in request.extra {
            toolbox
                .add(tool)
                .map_err(|e| RuntimeError::Agent(e.into()))?;
        }
        let memories = build::memories(&self.config.tools, &request.user).await;
        let mut overrides = self.overrides.clone();
        if request.system_prompt.is_some() {
            overrides.system = request.system_prompt;
        }
        let mut section = self.config.agent.clone();
        if let Some(n) = request.max_tool_calls {
            section.max_tool_calls = Some(section.max_tool_calls.map_or(n, |c| c.min(n)));
        }
        let model_name = request.model.name.clone();
        let agent = build::agent(&section, &overrides, request.model, toolbox, memories)?;
        let agent = match request.approver {
            Some(approver) => agent.with_approver(approver),
            None => agent,
        };
        Ok(Session {
            agent,
            model_name,
            user: request.user,
            conversation: request.conversation,
            tools: self.config.tools.clone(),
        })
    }

    /// The agent for listing its tools and skills: no model is needed (none is called), so
    /// none is built unless one is named; no memories.
    pub fn listing(&self) -> Result<Session, RuntimeError> {
        let section = &self.config.agent;
        let mut toolbox = build::toolbox(section, &self.config.tools)?;
        mcp::add_to(&mut toolbox, &self.mcp);
        let model = match self.model_name() {
            Some(name) => self.resolve(Some(name))?,
            None => Model::new("(none)", Vec::new()),
        };
        let agent = build::agent(section, &self.overrides, model, toolbox, Vec::new())?;
        let default_user = ToolContext::default().user;
        Ok(Session {
            agent,
            model_name: self.model_name().unwrap_or("(none)").to_owned(),
            user: default_user,
            conversation: String::new(),
            tools: self.config.tools.clone(),
        })
    }

    /// Every `[[models]]` entry, for a server: a model whose API key variable is unset is
    /// listed as unavailable (the server starts without it); any other error is returned.
    /// When no entry can answer, the model `run` uses without `--model` is served too, under
    /// its name (`embedded` when `[agent] model` is unset), when it can be
    /// ([`models::serves_run_default`]).
    pub fn served_models(&self) -> Result<ServedModels, RuntimeError> {
        models::served_models(
            &self.registry,
            self.env.as_ref(),
            &self.config.models,
            self.model_name(),
            self.tool_mode(),
        )
    }
}

/// One agent for a user and a conversation.
pub struct Session {
    pub agent: Agent,
    /// How messages name the model (the name asked for, or the default's label).
    pub model_name: String,
    user: String,
    conversation: String,
    tools: ToolsConfig,
}

impl Session {
    /// The context of one run of the conversation (its workspace, the user, a fresh
    /// cancellation token).
    pub fn context(&self) -> ToolContext {
        build::context(&self.tools, &self.user, &self.conversation)
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn conversation(&self) -> &str {
        &self.conversation
    }
}
