//! The agent: a model, tools, skills and limits, and how a run of its bounded tool loop starts
//! (seeds 000, 002, 004; docs/src/agent.md, "The loop"). The loop itself is [`crate::run`].
//!
//! Each round sends the conversation and the tools to the model, runs the calls it makes and feeds
//! the results back, until the model answers. Budgets bound the rounds, the calls and the wall time;
//! a call identical to an earlier one is not run again; malformed calls get the seed's retry message
//! at most twice; when the budget runs out, or a round brings only repeats, one tool-free
//! finalization round asks for the best answer from what is known. Every call gets exactly one
//! result, in order, whatever happens.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use toolbridge_protocol::model::ChatModel;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::{Message, ToolSpec};

use crate::approval::{Approvals, Approver, DenyAll};
use crate::events::RunEvent;
use crate::run::driver::{self, Outlet};
use crate::run::{Limits, PauseWhen, RunMachine, RunState};
use crate::skills::{LoadedSkills, SkillSet, SkillTool, DEFAULT_SKILL_TOOL};
use crate::tool::ToolContext;
use crate::toolbox::Toolbox;

/// The loop's limits and options.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    /// Model requests with tools (seed 002: 12).
    pub max_rounds: usize,
    /// Tool calls run in one run.
    pub max_tool_calls: usize,
    /// Wall time of the whole run.
    pub max_duration: Duration,
    /// Native-mode calls of one round run concurrently up to this many.
    pub parallel_calls: usize,
    /// Retries after malformed calls, per turn (seed 000: twice).
    pub max_malformed_retries: usize,
    /// The system prompt (default: `texts::DEFAULT_SYSTEM_PROMPT`).
    pub system_prompt: Option<String>,
    /// The skill tool's name; `None` gives the model the skill bodies inline instead.
    pub skill_tool: Option<String>,
    pub approvals: Approvals,
    /// What the run's user asked to be remembered (ACTIVE memories, one per entry): given to the
    /// model as a system message of its own after the system prompt and the skill listing
    /// (`texts::memory_block`). Empty: no message.
    pub memories: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_rounds: 12,
            max_tool_calls: 50,
            max_duration: Duration::from_secs(15 * 60),
            parallel_calls: 4,
            max_malformed_retries: 2,
            system_prompt: None,
            skill_tool: Some(DEFAULT_SKILL_TOOL.to_owned()),
            approvals: Approvals::default(),
            memories: Vec::new(),
        }
    }
}

/// Problems found when an agent is put together (before any request is sent).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Skills(#[from] crate::skills::SkillError),
    #[error(transparent)]
    Toolbox(#[from] crate::toolbox::ToolboxError),
}

/// An agent: a model, tools, skills and limits.
pub struct Agent {
    model: Arc<dyn ChatModel>,
    toolbox: Arc<Toolbox>,
    skills: Arc<SkillSet>,
    config: AgentConfig,
    approver: Arc<dyn Approver>,
}

impl Agent {
    /// Checks the skills against the tools: duplicate or empty skill names, or a tool already
    /// carrying the skill tool's name, are refused here.
    pub fn new(
        model: impl ChatModel + 'static,
        toolbox: Toolbox,
        skills: SkillSet,
        config: AgentConfig,
    ) -> Result<Self, AgentError> {
        // Dynamic tools present now are checked too; later ones cannot take the skill tool's
        // name from it (the skill tool is looked up first).
        let current = toolbox.resolve();
        if let Some(tool) = &config.skill_tool {
            skills.validate(&current.names(), tool)?;
        } else {
            skills.validate(&current.names(), "")?;
        }
        if let Some(tool) = offered_skill_tool(&config, &skills) {
            skills.warn_about_listing(tool);
        }
        Ok(Agent {
            model: Arc::new(model),
            toolbox: Arc::new(toolbox),
            skills: Arc::new(skills),
            config,
            approver: Arc::new(DenyAll),
        })
    }

    /// Who answers approval questions (default: nobody — calls that need approval are denied).
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn model(&self) -> &dyn ChatModel {
        &*self.model
    }

    /// The toolbox's timeout and output cap.
    pub fn toolbox_config(&self) -> crate::toolbox::ToolboxConfig {
        self.toolbox.config()
    }

    /// Answers later runs with another model (`chat`'s `/model NAME`); the tools, skills and
    /// limits stay.
    pub fn set_model(&mut self, model: impl ChatModel + 'static) {
        self.model = Arc::new(model);
    }

    pub fn skills(&self) -> &SkillSet {
        &self.skills
    }

    /// The tools a run offers, in the order the model sees them (the skill tool last; tools the
    /// approval policy denies outright are not offered).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let resolved = self.toolbox.resolve();
        let mut specs = resolved
            .without_denied(&self.config.approvals)
            .unwrap_or(resolved)
            .specs();
        if let Some(name) = offered_skill_tool(&self.config, &self.skills) {
            specs.push(
                crate::tool::Tool::spec(&SkillTool::new(name, Arc::clone(&self.skills))).clone(),
            );
        }
        specs
    }

    /// Starts a run over a conversation (the user's latest message last).
    pub fn run(&self, conversation: Vec<Message>, context: ToolContext) -> Run {
        let outlet = Outlet::default();
        let snapshot = self.snapshot();
        let shared = outlet.clone();
        let inner = async_stream::stream! {
            let machine = start_machine(&snapshot, conversation).await;
            let mut driven = Box::pin(driver::drive(snapshot, machine, context, None, shared));
            while let Some(event) = driven.next().await {
                yield event;
            }
        };
        Run {
            inner: Box::pin(inner),
            outlet,
        }
    }

    /// The state machine of a new run over a conversation, not yet driven: for a caller that
    /// drives it itself, or stores it (it serializes) and resumes it with [`Agent::resume`].
    pub async fn start(&self, conversation: Vec<Message>) -> RunMachine {
        start_machine(&self.snapshot(), conversation).await
    }

    /// Drives a run machine (new, or deserialized from a stored run) until it ends — or, with
    /// `pause`, until a round has a call `pause` picks: the run then stops before running that
    /// round and [`Run::paused`] hands its machine back (give it the results with
    /// [`RunMachine::handle_tool_results`] and resume it again).
    pub fn resume(
        &self,
        machine: RunMachine,
        context: ToolContext,
        pause: Option<PauseWhen>,
    ) -> Run {
        let outlet = Outlet::default();
        if let Ok(mut s) = outlet.state.lock() {
            *s = machine.state();
        }
        let inner = driver::drive(self.snapshot(), machine, context, pause, outlet.clone());
        Run {
            inner: Box::pin(inner),
            outlet,
        }
    }

    /// The system messages a new run starts with: the system prompt, the skill listing, the
    /// user's memories. A front door that composes the conversation itself (its own
    /// `instructions` in between, say) puts these first; [`Agent::start`] then adds none.
    pub async fn system_messages(&self) -> Vec<Message> {
        system_messages(&self.snapshot()).await
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            model: Arc::clone(&self.model),
            toolbox: Arc::clone(&self.toolbox),
            skills: Arc::clone(&self.skills),
            config: self.config.clone(),
            approver: Arc::clone(&self.approver),
        }
    }
}

/// What a run needs, owned (the stream outlives the borrow of the agent).
pub(crate) struct Snapshot {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) toolbox: Arc<Toolbox>,
    pub(crate) skills: Arc<SkillSet>,
    pub(crate) config: AgentConfig,
    pub(crate) approver: Arc<dyn Approver>,
}

impl Snapshot {
    /// The tools as they are now, with the dynamic sources' version read before their lists (a
    /// change in between only causes one more rebuild, never a missed one). Tools the approval
    /// policy denies outright are left out; the skill tool records loads in `loaded`.
    pub(crate) fn current_tools(&self, loaded: &LoadedSkills) -> (u64, Arc<RunTools>) {
        let version = self.toolbox.dynamic_version();
        let main = if self.toolbox.has_dynamic() {
            Arc::new(self.toolbox.resolve())
        } else {
            Arc::clone(&self.toolbox)
        };
        let main = match main.without_denied(&self.config.approvals) {
            Some(offered) => Arc::new(offered),
            None => main,
        };
        (version, Arc::new(RunTools::new(self, main, loaded)))
    }
}

/// The skill tool's name when a run offers it: there are skills, the tool is configured and the
/// approval policy does not deny it outright.
fn offered_skill_tool<'a>(config: &'a AgentConfig, skills: &SkillSet) -> Option<&'a str> {
    let name = config.skill_tool.as_deref()?;
    (!skills.is_empty() && !config.approvals.denies_outright(name, false)).then_some(name)
}

/// A run in progress: a stream of [`RunEvent`]s ending with [`RunEvent::Outcome`].
pub struct Run {
    inner: Pin<Box<dyn Stream<Item = RunEvent> + Send>>,
    outlet: Outlet,
}

impl Stream for Run {
    type Item = RunEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Run {
    /// Drives the run to its end and returns what it left.
    pub async fn finish(mut self) -> RunState {
        while self.inner.next().await.is_some() {}
        self.state()
    }

    /// Drives the run until it ends or pauses: the state so far, and the machine of a paused
    /// run.
    pub async fn finish_or_pause(mut self) -> (RunState, Option<RunMachine>) {
        while self.inner.next().await.is_some() {}
        (self.state(), self.paused())
    }

    /// The state so far (complete once the stream has ended).
    pub fn state(&self) -> RunState {
        self.outlet
            .state
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// The machine of a run that paused (see [`Agent::resume`]), once its stream has ended.
    pub fn paused(&self) -> Option<RunMachine> {
        self.outlet.paused.lock().ok().and_then(|mut p| p.take())
    }

    /// The arm that answered the run's last model request (its name and tool mode), once one
    /// has answered.
    pub fn arm(&self) -> Option<toolbridge_protocol::response::ArmInfo> {
        self.outlet.arm.lock().ok().and_then(|a| a.clone())
    }
}

/// The tools of one run: the agent's toolbox plus this run's skill tool.
pub(crate) struct RunTools {
    main: Arc<Toolbox>,
    skill: Option<(String, Toolbox)>,
    pub(crate) specs: Vec<ToolSpec>,
}

impl RunTools {
    fn new(snapshot: &Snapshot, main: Arc<Toolbox>, loaded: &LoadedSkills) -> Self {
        let mut specs = main.specs();
        let skill = match offered_skill_tool(&snapshot.config, &snapshot.skills) {
            Some(name) => {
                let mut tb = Toolbox::new(snapshot.toolbox.config());
                let tool = SkillTool::sharing(name, Arc::clone(&snapshot.skills), loaded.clone());
                specs.push(crate::tool::Tool::spec(&tool).clone());
                // The schema is the seed's and compiles; a failure would only drop the skill tool.
                match tb.add(Arc::new(tool)) {
                    Ok(()) => Some((name.to_owned(), tb)),
                    Err(e) => {
                        tracing::error!(error = %e, "skill tool not available");
                        specs.pop();
                        None
                    }
                }
            }
            None => None,
        };
        RunTools { main, skill, specs }
    }

    pub(crate) fn toolbox_for(&self, name: &str) -> &Toolbox {
        match &self.skill {
            Some((skill_name, tb)) if skill_name == name => tb,
            _ => &self.main,
        }
    }
}

/// The system messages of a run: the system prompt, then the skill listing (or the bodies inline
/// for a model without the skill tool), then the user's memories. The listing is a message of its own after the prompt, so
/// in prompt mode the tools (appended to the first system message) come before it.
async fn system_messages(snapshot: &Snapshot) -> Vec<Message> {
    let prompt = snapshot
        .config
        .system_prompt
        .as_deref()
        .unwrap_or(texts::DEFAULT_SYSTEM_PROMPT);
    let mut out = vec![Message::system(prompt)];
    if !snapshot.skills.is_empty() {
        match offered_skill_tool(&snapshot.config, &snapshot.skills) {
            Some(tool) => out.push(Message::system(snapshot.skills.listing(tool))),
            // A skill tool denied outright: no listing of skills the model cannot load.
            None if snapshot.config.skill_tool.is_some() => {}
            None => out.push(Message::system(snapshot.skills.inline_bodies().await)),
        }
    }
    if let Some(block) = texts::memory_block(&snapshot.config.memories) {
        out.push(Message::system(block));
    }
    out
}

/// A new run's machine: the system messages (unless the conversation brings its own), then the
/// conversation.
async fn start_machine(snapshot: &Snapshot, conversation: Vec<Message>) -> RunMachine {
    let mut messages = Vec::new();
    if !matches!(conversation.first(), Some(Message::System { .. })) {
        messages.extend(system_messages(snapshot).await);
    }
    messages.extend(conversation);
    let config = &snapshot.config;
    let limits = Limits {
        max_rounds: config.max_rounds,
        max_tool_calls: config.max_tool_calls,
        max_duration: config.max_duration,
        parallel_calls: config.parallel_calls,
        max_malformed_retries: config.max_malformed_retries,
    };
    RunMachine::new(
        limits,
        snapshot.model.name().to_owned(),
        messages,
        Instant::now(),
    )
}
