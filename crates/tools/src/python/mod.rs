//! `python_execute` (seed 000): a persistent Python interpreter per conversation, in the sandbox.
//!
//! - One interpreter per (user, conversation), started on the first call in the conversation's
//!   workspace (`/workspace` inside); variables, imports and the working directory survive
//!   between calls. Calls to one interpreter run one at a time.
//! - Each call returns stdout, then stderr, then the value of a last expression (like a notebook
//!   cell), then the files the call wrote under `outputs/`. A Python exception is a tool error
//!   with the traceback. Captured output is capped per stream (head and tail kept).
//! - A call that runs past `cell_timeout_secs`, or is cancelled, gets a KeyboardInterrupt and the
//!   state is kept; an interpreter that does not answer within `interrupt_grace_ms` is killed and
//!   a fresh one started, and the model is told its state is gone. So is an interpreter that died
//!   (a limit, a crash).
//! - Each call gets the sandbox's `cpu_secs` of CPU time (the driver moves the soft RLIMIT_CPU
//!   before each call); `session_cpu_secs` is the hard limit of the whole interpreter.
//! - Interpreters idle for `idle_secs` are closed; the next call says so. Dropping the tool
//!   kills them all.
//! - At most `max_interpreters` interpreters live at once, and `max_interpreters_per_user` for
//!   one user: a conversation that needs a new one closes the least recently used idle one first
//!   (that conversation's next call says so), and is refused with a transient error when every
//!   one is running a call (see [`pool`]).

pub mod history;
pub mod outputs;
pub mod paths;
pub mod pool;
pub mod render;
pub mod session;

use std::path::Path;
use std::sync::{Arc, Once, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbridge_agent::{Tool, ToolContext, ToolError, ToolFuture};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;
use toolbridge_sandbox::{Limits, Sandbox};

use crate::common::seed_spec;
use outputs::{Snapshot, OUTPUTS};
use pool::{Caps, Pool, PoolError, Slot};
use session::{DriverSettings, Outcome, Session, Stop};

/// `[tools.python]` in `toolbridge.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PythonConfig {
    /// Wall-clock budget of one call; past it the cell is interrupted (state kept).
    pub cell_timeout_secs: u64,
    /// How long an interrupted cell has to stop before the interpreter is killed.
    pub interrupt_grace_ms: u64,
    /// An interpreter unused this long is closed.
    pub idle_secs: u64,
    /// Captured stdout (and stderr, and the value) per call, bytes; beyond it the middle is cut.
    pub max_output_bytes: usize,
    /// CPU seconds one interpreter may use over its whole life (hard RLIMIT_CPU); each call gets
    /// `[tools.sandbox.limits] cpu_secs` of it.
    pub session_cpu_secs: u64,
    /// Interpreters alive at once on the whole server (at least 1).
    pub max_interpreters: usize,
    /// Interpreters alive at once for one user (at least 1); the gateway's `<key user>/<named
    /// user>` count as the key's user.
    pub max_interpreters_per_user: usize,
}

impl Default for PythonConfig {
    fn default() -> Self {
        PythonConfig {
            cell_timeout_secs: 120,
            interrupt_grace_ms: 1000,
            idle_secs: 900,
            max_output_bytes: 100_000,
            session_cpu_secs: 3600,
            max_interpreters: 16,
            max_interpreters_per_user: 4,
        }
    }
}

/// The `python_execute` tool.
pub struct PythonExecute {
    spec: ToolSpec,
    inner: Arc<Inner>,
}

struct Inner {
    sandbox: Sandbox,
    config: PythonConfig,
    /// The limits of one call (the sandbox's), for messages.
    limits: Limits,
    /// The limits the interpreter process is started with.
    process_limits: Limits,
    settings: DriverSettings,
    pool: Pool<Session>,
    reaper: Once,
}

impl PythonExecute {
    pub fn new(sandbox: Sandbox, config: PythonConfig) -> Self {
        let limits = sandbox.config().limits.clone();
        let mut process_limits = limits.clone();
        process_limits.cpu_secs = config.session_cpu_secs.max(limits.cpu_secs);
        let settings = DriverSettings {
            max_output_bytes: config.max_output_bytes.max(1),
            cpu_secs: limits.cpu_secs,
            cpu_message: texts::python_cpu_limit(limits.cpu_secs),
            omitted_note: texts::PYTHON_OUTPUT_OMITTED.to_owned(),
        };
        let caps = Caps {
            global: config.max_interpreters,
            per_user: config.max_interpreters_per_user,
        };
        PythonExecute {
            spec: seed_spec(
                "python_execute",
                texts::PYTHON_EXECUTE_DESCRIPTION,
                texts::PYTHON_EXECUTE_SCHEMA,
            ),
            inner: Arc::new(Inner {
                sandbox,
                config,
                limits,
                process_limits,
                settings,
                pool: Pool::new(caps),
                reaper: Once::new(),
            }),
        }
    }

    /// How many interpreters are running (for tests and status).
    pub fn live_sessions(&self) -> usize {
        self.inner.pool.live()
    }

    /// Why this tool's sandboxes get no cgroup of their own (`None`: each one does).
    pub fn budgets_unavailable(&self) -> Option<&str> {
        self.inner.sandbox.budgets_unavailable()
    }

    /// How many conversations have a call in progress (for tests and status).
    pub fn busy_sessions(&self) -> usize {
        self.inner.pool.busy()
    }
}

impl Tool for PythonExecute {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn invoke(&self, args: Value, ctx: ToolContext) -> ToolFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let code = args
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(workspace) = ctx.workspace.clone() else {
                return Err(ToolError::new(texts::NO_WORKSPACE));
            };
            start_reaper(&inner);
            // A task of its own: the toolbox drops this future on timeout or cancellation, and
            // the cell must still be interrupted and the session left in order.
            let key = (ctx.user.clone(), ctx.conversation.clone());
            let cancel = ctx.cancel.clone();
            let deadline = ctx.deadline;
            tokio::spawn(async move { inner.call(key, &workspace, &code, &cancel, deadline).await })
                .await
                .map_err(|e| ToolError::internal(format!("python_execute task: {e}")))?
        })
    }

    fn timeout(&self) -> Option<Duration> {
        // Longer than the cell budget plus the grace, so this tool's own timeout (which keeps
        // the state) fires before the toolbox gives up on the call.
        let config = &self.inner.config;
        Some(
            Duration::from_secs(config.cell_timeout_secs)
                + Duration::from_millis(config.interrupt_grace_ms)
                + Duration::from_secs(30),
        )
    }
}

fn start_reaper(inner: &Arc<Inner>) {
    inner.reaper.call_once(|| {
        let weak = Arc::downgrade(inner);
        let idle = Duration::from_secs(inner.config.idle_secs);
        let period = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        tokio::spawn(reap_idle(weak, idle, period));
    });
}

/// Closes idle interpreters until the tool is dropped.
async fn reap_idle(inner: Weak<Inner>, idle: Duration, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.pool.reap(idle);
    }
}

impl Inner {
    async fn call(
        &self,
        key: pool::Key,
        workspace: &Path,
        code: &str,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<String, ToolError> {
        self.pool.reap(Duration::from_secs(self.config.idle_secs));
        let slot = self.pool.slot(key.clone());
        let mut slot = tokio::select! {
            slot = slot.lock() => slot,
            () = cancel.cancelled() => return Err(ToolError::internal("cancelled while waiting for the Python session")),
        };
        let result = self
            .call_in_slot(&key, &mut slot, workspace, code, cancel, deadline)
            .await;
        // Whatever happened, the pool's count follows what the slot now holds.
        self.pool.settle(&key, slot.session.is_some());
        result
    }

    /// [`Inner::call`] with the conversation's slot locked.
    async fn call_in_slot(
        &self,
        key: &pool::Key,
        slot: &mut Slot<Session>,
        workspace: &Path,
        code: &str,
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<String, ToolError> {
        let mut notes = Vec::new();
        if slot.expired {
            notes.push(texts::python_session_expired(
                self.config.idle_secs.div_ceil(60),
            ));
        }
        if slot.evicted {
            notes.push(texts::PYTHON_SESSION_EVICTED.to_owned());
        }
        self.ready_session(key, slot, workspace, &mut notes).await?;
        // Told once the call runs: a call refused for want of room keeps them for the next.
        slot.expired = false;
        slot.evicted = false;
        let session = slot
            .session
            .as_mut()
            .ok_or_else(|| ToolError::internal("no Python session"))?;
        let inside = self.sandbox.workspace_inside(workspace);
        let inside = inside.to_string_lossy().into_owned();
        let code = paths::to_inside(code, &inside);
        let outputs_dir = workspace.join(OUTPUTS);
        // The walk touches the filesystem: not on the async threads.
        let walk_dir = outputs_dir.clone();
        let before = tokio::task::spawn_blocking(move || Snapshot::take(&walk_dir))
            .await
            .unwrap_or_default();
        let grace = Duration::from_millis(self.config.interrupt_grace_ms);
        // The toolbox's limit for the call may be shorter than the cell budget: interrupt the
        // cell before it, with room for the grace, so the state is kept and our text wins.
        let mut budget = Duration::from_secs(self.config.cell_timeout_secs);
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            let reserve = (grace + Duration::from_millis(250)).min(left / 2);
            budget = budget.min(left.saturating_sub(reserve));
        }
        let outcome = session.run(&code, cancel, budget, grace).await;
        slot.last_used = Instant::now();
        // A cell that timed out or lost its interpreter may succeed when tried again: a repeat
        // of the call runs instead of being skipped as a duplicate. An exception is final.
        let transient = match &outcome {
            Outcome::Replied { reply, stop } => *stop == Some(Stop::TimedOut) && reply.interrupted,
            Outcome::Hung { .. } | Outcome::Died { .. } | Outcome::Protocol => true,
        };
        let result = match outcome {
            Outcome::Replied { reply, stop } => {
                let mut text = render::reply_text(&reply, &self.limits);
                // The budget may run out while a finished cell's reply is on its way: only a
                // cell the interrupt actually stopped timed out.
                if stop == Some(Stop::TimedOut) && reply.interrupted {
                    let timed_out =
                        texts::python_cell_timeout((budget.as_secs_f64().ceil() as u64).max(1));
                    let body = text.unwrap_or_else(|e| e);
                    text = Err(render::join(&[body, timed_out]));
                }
                text
            }
            Outcome::Hung { .. } => {
                self.restart(slot, workspace).await;
                Err(texts::PYTHON_STATE_LOST.to_owned())
            }
            Outcome::Died { limit } => {
                self.restart(slot, workspace).await;
                Err(render::crashed(limit, &self.limits))
            }
            Outcome::Protocol => {
                self.restart(slot, workspace).await;
                Err(texts::PYTHON_PROTOCOL_ERROR.to_owned())
            }
        };
        let files = tokio::task::spawn_blocking(move || before.changed(&outputs_dir))
            .await
            .unwrap_or_default();
        let finish = |body: String| {
            let mut blocks = notes.clone();
            blocks.push(body);
            if !files.is_empty() {
                blocks.push(texts::python_files_written(&files));
            }
            let text = render::join(&blocks);
            paths::to_model(&text, &inside)
        };
        match result {
            Ok(body) => {
                let text = finish(body);
                Ok(if text.is_empty() {
                    texts::PYTHON_NO_OUTPUT.to_owned()
                } else {
                    text
                })
            }
            Err(body) if transient => Err(ToolError::transient(finish(body))),
            Err(body) => Err(ToolError::new(finish(body))),
        }
    }

    /// The slot's interpreter, started (or restarted, with a note) if it has none that works.
    async fn ready_session(
        &self,
        key: &pool::Key,
        slot: &mut Slot<Session>,
        workspace: &Path,
        notes: &mut Vec<String>,
    ) -> Result<(), ToolError> {
        if let Some(session) = slot.session.as_mut() {
            if session.workspace() != workspace {
                slot.session = None;
            } else if !session.is_alive() {
                // It died between calls (a background thread over a limit, killed from outside).
                let limit = session.exit_cause().await;
                notes.push(render::crashed(limit, &self.limits));
                slot.session = None;
            }
        }
        if slot.session.is_none() {
            // The first interpreter of this process in a workspace that had one before (an
            // earlier `run --conversation`, a restarted server): its state is gone, say so,
            // unless a note above already does.
            let earlier = !slot.started && history::had_session(workspace);
            self.make_room(key).await?;
            slot.session = Some(self.start(workspace).await?);
            slot.started = true;
            history::mark(workspace);
            if earlier && notes.is_empty() {
                notes.push(texts::PYTHON_SESSION_NEW_PROCESS.to_owned());
            }
        }
        Ok(())
    }

    /// Admits `key` to start an interpreter, first closing (and waiting for) the idle ones the
    /// pool evicts to stay within its caps; a transient error when every one is busy.
    async fn make_room(&self, key: &pool::Key) -> Result<(), ToolError> {
        match self.pool.admit(key) {
            Ok(evicted) => {
                for session in evicted {
                    session.close().await;
                }
                Ok(())
            }
            Err(PoolError::Busy { scope, cap }) => {
                tracing::warn!(user = %key.0, conversation = %key.1, %scope, cap, "python_execute refused: every interpreter is busy");
                Err(ToolError::overloaded(texts::PYTHON_BUSY))
            }
        }
    }

    async fn start(&self, workspace: &Path) -> Result<Session, ToolError> {
        Session::start(
            &self.sandbox,
            workspace,
            &self.process_limits,
            &self.settings,
        )
        .await
        .map_err(|e| {
            // The model only gets the sanitized failure: the operator must see why.
            tracing::error!(workspace = %workspace.display(), error = %e, "python_execute could not start its interpreter");
            ToolError::internal(format!("python_execute: {e}"))
        })
    }

    /// Replaces a dead or killed interpreter with a fresh one (left empty if that fails: the
    /// next call tries again).
    async fn restart(&self, slot: &mut Slot<Session>, workspace: &Path) {
        slot.session = None;
        match self.start(workspace).await {
            Ok(session) => slot.session = Some(session),
            Err(e) => tracing::warn!(error = %e, "restarting the python_execute interpreter"),
        }
    }
}
