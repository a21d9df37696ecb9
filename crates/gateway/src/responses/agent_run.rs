//! A server-side run of the agent, whatever front door asked for it: the Responses API
//! (`run.rs`), an agent served as a chat model (`chat_agent.rs`, through `run.rs`) and the
//! Messages API's server tools (`crate::messages::server`).
//!
//! A front door decodes its request into a [`RunSpec`] (model, hosted tools, the client's
//! tools, instructions, the conversation's workspace), [`prepare`] turns it into an
//! [`AgentRun`] — the tools planned against the configured ones (with the MCP calls the
//! client approves first), the request's agent, its context and workspace (opened only when
//! code, images or files use it), the user's run admitted — and [`AgentRun::drive`] runs a machine to its
//! end or pause, handing each [`RunEvent`] to the front door's [`Front`], which turns it into
//! its own wire form. What is stored, and how the answer is written, stays with the front door.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;
use toolbridge_agent::approval::{ApprovalPolicy, Approver};
use toolbridge_agent::skills::SkillSet;
use toolbridge_agent::{
    Agent, AgentConfig, PauseWhen, RequestOptions, RunEvent, RunMachine, RunState, ToolContext,
    Toolbox, ToolboxConfig,
};
use toolbridge_protocol::types::{Message, ToolCall, ToolChoice};
use toolbridge_runtime::RequestAgent;
use toolbridge_tools::workspace::{OutputsSnapshot, Workspace};

use super::output::CallKind;
use super::remote_mcp;
use super::request::{ClientTool, Hosted};
use super::service::Admitted;
use super::tools::{self, Plan, UnavailableTools};
use crate::error::ApiError;
use crate::state::AppState;

/// What a front door asks of a run, in no front door's terms.
pub(crate) struct RunSpec {
    /// The model name the client sent (`model_map` applies).
    pub model: String,
    /// Hosted tools, served by the configured built-ins and MCP servers.
    pub hosted: Vec<Hosted>,
    /// The client's tools: their calls pause the run.
    pub client_tools: Vec<ClientTool>,
    /// No tool at all is offered (`tool_choice: none`).
    pub tools_off: bool,
    /// A tool the client's `tool_choice` forces in the run's first model request.
    pub forced: Option<ForcedTool>,
    /// Replaces the configured system prompt.
    pub instructions: Option<String>,
    /// Whom the tools act for (memories, the Python session).
    pub user: String,
    /// Tightens `[agent] max_tool_calls`.
    pub max_tool_calls: Option<usize>,
    /// The conversation's workspace folder (and Python session) name.
    pub workspace_key: String,
    /// What a hosted tool the configuration lacks comes to.
    pub unavailable: UnavailableTools,
    /// The request stages files into the workspace (so it needs one even without code tools).
    pub has_files: bool,
    /// Call ids the client approved (`mcp_approval_response`): they run; every other call an
    /// approval policy asks about pauses the run (or, asked by the agent, is denied).
    pub approved: HashSet<String>,
}

/// What a client's `tool_choice` forces, in no front door's terms (`none` is
/// [`RunSpec::tools_off`], `auto` is nothing).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ForcedTool {
    /// Some tool (`required`, Anthropic's `any`).
    Any,
    /// The client's function (or custom tool) of this name.
    Client(String),
    /// The built-in behind a hosted tool.
    Hosted(Hosted),
    /// An MCP server's tool, by its own name.
    Mcp { label: String, tool: String },
}

impl ForcedTool {
    /// What a Chat Completions `tool_choice` (also what the Messages decoder makes of
    /// Anthropic's) forces; `server_tool` maps a name to a hosted tool it stands for.
    pub(crate) fn of_chat(
        choice: Option<&ToolChoice>,
        server_tool: impl Fn(&str) -> Option<Hosted>,
    ) -> Option<ForcedTool> {
        match choice? {
            ToolChoice::None | ToolChoice::Auto => None,
            ToolChoice::Required => Some(ForcedTool::Any),
            ToolChoice::Named(name) => Some(match server_tool(name) {
                Some(hosted) => ForcedTool::Hosted(hosted),
                None => ForcedTool::Client(name.clone()),
            }),
        }
    }

    /// The choice of the first model request, against the tools the run offers. A client
    /// function the request does not declare is the client's error; a hosted tool the
    /// configuration left out is not forced (the request goes on with `auto`, as its tool went
    /// on without it).
    fn resolve(&self, plan: &Plan) -> Result<Option<ToolChoice>, ApiError> {
        let named = |name: &str| {
            if plan.offer.contains(name)
                || plan.client_names.contains(name)
                || plan.remote.iter().any(|t| t.spec().name == name)
            {
                Some(ToolChoice::Named(name.to_owned()))
            } else {
                tracing::warn!(
                    tool = name,
                    "tool_choice names a tool this run does not offer; not forced"
                );
                None
            }
        };
        Ok(match self {
            ForcedTool::Any => Some(ToolChoice::Required),
            ForcedTool::Client(name) => {
                if !plan.client_names.contains(name) {
                    return Err(ApiError::bad_param(
                        "tool_choice",
                        format!(
                            "tool_choice names `{name}`, which is not among the request's tools."
                        ),
                    ));
                }
                Some(ToolChoice::Named(name.clone()))
            }
            ForcedTool::Hosted(hosted) => tools::builtins_of(hosted).first().and_then(|n| named(n)),
            ForcedTool::Mcp { label, tool } => {
                let exposed = plan.kinds.iter().find_map(|(name, kind)| match kind {
                    CallKind::Mcp { label: l, tool: t } if l == label && t == tool => Some(name),
                    _ => None,
                });
                match exposed {
                    Some(name) => named(name),
                    None => named(&format!("{}{label}__{tool}", toolbridge_mcp::names::PREFIX)),
                }
            }
        })
    }
}

/// A prepared run: the request's agent with what it runs in.
pub(crate) struct AgentRun {
    pub agent: Agent,
    pub context: ToolContext,
    pub pause: PauseWhen,
    pub plan: Plan,
    /// The conversation's workspace and what its `outputs/` held before the run (a gateway
    /// without a runtime, or without a workspace root, has none).
    pub workspace: Option<(Workspace, OutputsSnapshot)>,
    /// The call ids the client approved (from the spec).
    pub approved: HashSet<String>,
    /// The user's run counted against `max_concurrent_per_user` until the run ends.
    admitted: Option<Admitted>,
    /// The forced tool choice of the first model request this run makes.
    tool_choice: Option<ToolChoice>,
    /// The request's access-log record, taken in the handler's scope: the run may outlive it
    /// (a streamed or background response), and every front door's line gets the arm, its
    /// mode and the run's usage from here.
    access: Option<crate::access::Record>,
}

/// The approver of a server-side run: the calls the client approved (`mcp_approval_response`)
/// run; any other call the policy asks about is denied (no one else can be asked).
struct ApprovedCalls(HashSet<String>);

impl Approver for ApprovedCalls {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> futures::future::BoxFuture<'a, bool> {
        let yes = self.0.contains(&call.id);
        Box::pin(async move { yes })
    }
}

/// How a run ended.
pub(crate) struct Ended {
    pub state: RunState,
    /// The machine of a run paused for the client's calls.
    pub paused: Option<RunMachine>,
}

/// A front door's reading of a run: each event in, its own output out (streaming events, or
/// bytes), taken after each event and sent to a streaming client.
pub(crate) trait Front {
    type Out: Send + 'static;

    /// One event; `workspace` is the conversation's (for what a tool wrote there).
    fn push(&mut self, event: &RunEvent, workspace: Option<&Workspace>);

    /// Moves what the events so far produced into `out`.
    fn drain_into(&mut self, out: &mut Vec<Self::Out>);
}

/// The configured tools' names (the server's shared toolbox), or none without a runtime.
pub(crate) fn configured_tools(state: &AppState) -> Result<Vec<String>, ApiError> {
    match &state.runtime {
        Some(runtime) => Ok(runtime
            .shared_toolbox()
            .map_err(|e| {
                tracing::error!(error = %e, "the configured tools could not be built");
                ApiError::internal()
            })?
            .resolve()
            .names()
            .iter()
            .map(|n| (*n).to_owned())
            .collect()),
        None => Ok(Vec::new()),
    }
}

/// The model, the tools planned against the configured ones, the user's run admitted, the
/// agent and its context, the workspace opened. Errors are the client's (400/404/429).
pub(crate) async fn prepare(
    state: &Arc<AppState>,
    owner: &str,
    spec: RunSpec,
) -> Result<AgentRun, ApiError> {
    let Some(model) = state.model(&spec.model).cloned() else {
        return Err(crate::routes::unknown_model_error(state, &spec.model));
    };
    let configured = configured_tools(state)?;
    // Admitted before anything is connected: a user over the limit starts nothing.
    let admitted = state.responses.admit(owner).await?;
    let remote = if spec.tools_off {
        remote_mcp::Connected::default()
    } else {
        remote_mcp::connect_all(state.remote_mcp.as_ref(), &spec.hosted, |label| {
            let prefix = format!("{}{label}__", toolbridge_mcp::names::PREFIX);
            configured.iter().any(|c| c.starts_with(&prefix))
        })
        .await
    };
    let mut plan = tools::plan(&spec, &configured, &remote)?;
    if let Some(runtime) = &state.runtime {
        // The operator's policy: an MCP tool it says to ask about is asked of the client.
        let approvals = &runtime.config().agent.approvals;
        if let Ok(shared) = runtime.shared_toolbox() {
            let shared = shared.resolve();
            for (name, kind) in &plan.kinds {
                if let (CallKind::Mcp { .. }, Some(tool)) = (kind, shared.get(name)) {
                    if approvals.policy(name, tool.requires_approval()) == ApprovalPolicy::Ask {
                        plan.needs_approval.insert(name.clone());
                    }
                }
            }
        }
        for tool in &plan.remote {
            let name = &tool.spec().name;
            if approvals.policy(name, tool.requires_approval()) == ApprovalPolicy::Ask {
                plan.needs_approval.insert(name.clone());
            }
        }
    }
    let tool_choice = match &spec.forced {
        Some(forced) => forced.resolve(&plan)?,
        None => None,
    };
    let approver: Arc<dyn Approver> = Arc::new(ApprovedCalls(spec.approved.clone()));
    let (agent, context) = build_agent(state, model, &plan, &spec, approver).await?;
    // A workspace only where something uses one (a request without code or files, such as
    // Codex's `store: false` turns, leaves no folder behind).
    let uses_workspace = spec.has_files
        || plan
            .kinds
            .values()
            .any(|k| matches!(k, CallKind::Python | CallKind::Image));
    let workspace = match &state.runtime {
        Some(runtime) if uses_workspace => {
            match toolbridge_tools::open_workspace(runtime.tools(), &spec.workspace_key) {
                Ok(ws) => {
                    let before = ws.outputs();
                    Some((ws, before))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no workspace for this conversation");
                    None
                }
            }
        }
        _ => None,
    };
    // The run stops for the client's own calls and for MCP calls it has to approve first.
    let client_names = plan.client_names.clone();
    let asks = plan.needs_approval.clone();
    let approved = spec.approved.clone();
    let pause: PauseWhen = Arc::new(move |call| {
        client_names.contains(&call.name)
            || (asks.contains(&call.name) && !approved.contains(&call.id))
    });
    Ok(AgentRun {
        agent,
        context,
        pause,
        plan,
        workspace,
        approved: spec.approved,
        admitted: Some(admitted),
        tool_choice,
        access: crate::access::current(),
    })
}

impl AgentRun {
    /// The run is over: its user may start another now — before the front door stores the
    /// final record, so a client that reads the response as ended is never refused for it.
    pub(crate) fn end_admission(&mut self) {
        self.admitted = None;
    }

    /// A new run over `conversation` (after the agent's system messages).
    pub(crate) async fn start(
        &self,
        conversation: Vec<Message>,
        options: RequestOptions,
    ) -> RunMachine {
        let mut messages = self.agent.system_messages().await;
        messages.extend(conversation);
        let mut machine = self.agent.start(messages).await;
        machine.set_options(options);
        machine
    }

    /// What each tool's calls are shown as.
    pub(crate) fn kinds(&self) -> &HashMap<String, CallKind> {
        &self.plan.kinds
    }

    /// Cancels the run (its upstream request and running tools).
    pub(crate) fn cancel_token(&self) -> tokio_util::sync::CancellationToken {
        self.context.cancel.clone()
    }

    pub(crate) fn workspace(&self) -> Option<&Workspace> {
        self.workspace.as_ref().map(|(ws, _)| ws)
    }

    /// Drives `machine` to its end or pause; every event goes to `front`, and what it makes of
    /// it to `sink` (when streaming).
    pub(crate) async fn drive<F: Front>(
        &self,
        machine: RunMachine,
        front: &mut F,
        sink: Option<&mpsc::Sender<F::Out>>,
    ) -> Ended {
        // A resumed machine still counts the rounds of the response that paused it: the line
        // of this request reports only the model requests made for it.
        let usage_before = machine.usage();
        let mut machine = machine;
        machine.set_next_tool_choice(self.tool_choice.clone());
        let mut run =
            self.agent
                .resume(machine, self.context.clone(), Some(Arc::clone(&self.pause)));
        let mut out = Vec::new();
        while let Some(event) = run.next().await {
            front.push(&event, self.workspace());
            front.drain_into(&mut out);
            for item in out.drain(..) {
                if let Some(sink) = sink {
                    // A client that went away: the run goes on (a background response), or is
                    // cancelled by the stream's drop guard.
                    let _ = sink.send(item).await;
                }
            }
        }
        let state = run.state();
        if let Some(access) = &self.access {
            if let Some(arm) = run.arm() {
                access.arm(&arm);
            }
            access.usage(state.usage.saturating_sub(usage_before));
        }
        Ended {
            state,
            paused: run.paused(),
        }
    }
}

/// The agent of the request: the configured tools it offers plus the client's stand-ins (with
/// a runtime), or the client's tools alone (a gateway made of models only).
async fn build_agent(
    state: &Arc<AppState>,
    model: toolbridge_providers::Model,
    plan: &Plan,
    spec: &RunSpec,
    approver: Arc<dyn Approver>,
) -> Result<(Agent, ToolContext), ApiError> {
    match &state.runtime {
        Some(runtime) => {
            let offer = plan.offer.clone();
            let session = runtime
                .request_session(RequestAgent {
                    model,
                    user: spec.user.clone(),
                    conversation: spec.workspace_key.clone(),
                    offer: Box::new(move |name| offer.contains(name)),
                    extra: plan.client.iter().chain(&plan.remote).cloned().collect(),
                    system_prompt: spec.instructions.clone(),
                    max_tool_calls: spec.max_tool_calls,
                    approver: Some(approver),
                })
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "the agent of a request could not be built");
                    ApiError::bad_request(
                        "The tools of this request could not be set up (see the server log).",
                    )
                })?;
            let context = session.context();
            Ok((session.agent, context))
        }
        None => {
            let mut toolbox = Toolbox::new(ToolboxConfig::default());
            for tool in plan.client.iter().chain(&plan.remote) {
                toolbox
                    .add(Arc::clone(tool))
                    .map_err(|e| ApiError::bad_param("tools", format!("Invalid tool: {e}.")))?;
            }
            let defaults = AgentConfig::default();
            let config = AgentConfig {
                system_prompt: spec.instructions.clone(),
                max_tool_calls: spec
                    .max_tool_calls
                    .map_or(defaults.max_tool_calls, |n| n.min(defaults.max_tool_calls)),
                ..defaults
            };
            let agent = Agent::new(model, toolbox, SkillSet::default(), config)
                .map_err(|e| ApiError::bad_param("tools", format!("Invalid tools: {e}.")))?
                .with_approver(approver);
            let context = ToolContext {
                user: spec.user.clone(),
                conversation: spec.workspace_key.clone(),
                ..ToolContext::default()
            };
            Ok((agent, context))
        }
    }
}
