//! One interpreter: the driver (`driver.py`) running in the sandbox, and the JSON-lines protocol
//! spoken with it over its stdin and stdout.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolbridge_sandbox::{explain, Budget, LimitHit, Limits, Prepared, RunSpec, Sandbox};
use toolbridge_sandbox::{ProcessGroup, SandboxError};

/// The driver's source, passed with `python -c` so nothing has to be written into the
/// workspace (where sandboxed code could change it for the next start).
pub const DRIVER: &str = include_str!("driver.py");

/// How much of the interpreter's own stderr is kept, to explain a crash.
const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// An interpreter that has not said "ready" by then is not going to.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a dying interpreter gets to be reaped before it is killed outright.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// Room in a reply line beyond its four capped fields (stdout, stderr, value, error).
const REPLY_SLACK_BYTES: usize = 64 * 1024;
/// How much JSON escaping can grow a capped byte (`\u0001` for a control byte, `\ufffd` for the
/// three bytes of U+FFFD, twelve bytes for a four-byte character).
const JSON_GROWTH: usize = 6;

/// Why an interpreter could not be started (operator-facing).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("preparing the sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("starting the interpreter: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the interpreter did not start: {0}")]
    NotReady(String),
}

/// The driver's answer to one cell.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Reply {
    pub id: u64,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// `repr` of the last expression, when it was one and not `None`.
    pub value: Option<String>,
    /// The traceback, when the cell raised.
    pub error: Option<String>,
    /// The exception's class name.
    pub error_type: Option<String>,
    #[serde(default)]
    pub interrupted: bool,
    #[serde(default)]
    pub cpu_limit: bool,
    #[serde(default)]
    pub truncated: bool,
}

/// Why the host stopped waiting for a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Cancelled,
    TimedOut,
}

/// How a cell ended.
#[derive(Debug)]
pub enum Outcome {
    /// The driver answered (`stop` says whether it was interrupted by us first).
    Replied { reply: Reply, stop: Option<Stop> },
    /// It did not answer an interrupt within the grace period; the interpreter was killed.
    Hung { stop: Stop },
    /// The interpreter died; `limit` says which limit, when one explains it.
    Died { limit: Option<LimitHit> },
    /// The driver sent a line that is not a reply (unreadable, or over the size bound): the
    /// protocol can no longer be trusted, so the interpreter was killed.
    Protocol,
}

/// What the driver is told at start (see the header of `driver.py`).
#[derive(Clone, Debug)]
pub struct DriverSettings {
    pub max_output_bytes: usize,
    /// CPU seconds per cell (0: none).
    pub cpu_secs: u64,
    pub cpu_message: String,
    pub omitted_note: String,
}

impl DriverSettings {
    fn to_json(&self) -> String {
        json!({
            "max_output_bytes": self.max_output_bytes,
            "cpu_secs": self.cpu_secs,
            "cpu_message": self.cpu_message,
            "omitted_note": self.omitted_note,
        })
        .to_string()
    }
}

/// A running interpreter. Dropping it kills its process group.
pub struct Session {
    child: Child,
    /// The process group, recorded at spawn: once the child is reaped `child.id()` is gone, but
    /// processes it started in the background may still be in the group.
    pgid: ProcessGroup,
    stdin: ChildStdin,
    stdout: LineReader,
    stderr_tail: Arc<Mutex<String>>,
    stderr_task: Option<JoinHandle<()>>,
    next_id: u64,
    workspace: PathBuf,
    /// The sandbox's cgroup leaf, when the machine gives one: dropped with the session, after
    /// the process group is killed, it ends what is left and removes the leaf.
    budget: Option<Budget>,
}

impl Session {
    /// Starts the driver in the sandbox for `workspace` (prepared first) and waits until it is
    /// ready.
    pub async fn start(
        sandbox: &Sandbox,
        workspace: &Path,
        limits: &Limits,
        settings: &DriverSettings,
    ) -> Result<Session, SessionError> {
        // Preparing may walk (and chown) the whole workspace: not on the async threads.
        let prepare_sandbox = sandbox.clone();
        let prepare_at = workspace.to_path_buf();
        tokio::task::spawn_blocking(move || prepare_sandbox.prepare_workspace(&prepare_at))
            .await
            .map_err(|e| SessionError::NotReady(format!("preparing the workspace: {e}")))??;
        let args = vec!["-c".to_owned(), DRIVER.to_owned(), settings.to_json()];
        let env = vec![
            // No display in the sandbox: plots render to files.
            ("MPLBACKEND".to_owned(), "Agg".to_owned()),
            // Modules imported from /workspace should not leave __pycache__ folders there.
            ("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned()),
        ];
        let Prepared {
            mut command,
            budget,
        } = sandbox.command(&RunSpec {
            workspace,
            program: sandbox.python(),
            args: &args,
            env: &env,
            limits: Some(limits),
        })?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(SessionError::Spawn)?;
        // `sandbox.command` makes the child the leader of its own process group.
        let pgid = ProcessGroup::of(&child);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            pgid.kill();
            return Err(SessionError::NotReady("no pipes to the interpreter".into()));
        };
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let stderr_task = tokio::spawn(keep_tail(stderr, Arc::clone(&stderr_tail)));
        let max_line = settings
            .max_output_bytes
            .saturating_mul(4 * JSON_GROWTH)
            .saturating_add(REPLY_SLACK_BYTES);
        let mut session = Session {
            child,
            pgid,
            stdin,
            stdout: LineReader::new(stdout, max_line),
            stderr_tail,
            stderr_task: Some(stderr_task),
            next_id: 1,
            workspace: workspace.to_path_buf(),
            budget,
        };
        match tokio::time::timeout(START_TIMEOUT, session.stdout.next_line()).await {
            Ok(Ok(Some(line))) if is_ready(&line) => Ok(session),
            Ok(Ok(Some(line))) => Err(session.not_ready(format!("unexpected first line {line:?}"))),
            Ok(Ok(None)) => Err(session.not_ready("it exited".into())),
            Ok(Err(e)) => Err(session.not_ready(e.to_string())),
            Err(_) => Err(session.not_ready(format!("no answer within {START_TIMEOUT:?}"))),
        }
    }

    /// The host workspace this interpreter was started for.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether the process is still running (when it is not, whatever it left running in its
    /// process group is killed).
    pub fn is_alive(&mut self) -> bool {
        let alive = matches!(self.child.try_wait(), Ok(None));
        if !alive {
            self.kill_group();
        }
        alive
    }

    /// Ends the interpreter and everything it started, and waits until the interpreter is gone:
    /// a closed session's memory is free before another starts in its place.
    pub async fn close(mut self) {
        self.kill_group();
        let _ = self.reap().await;
    }

    /// Why a dead interpreter died (reaps it, and kills what it left in its process group).
    pub async fn exit_cause(&mut self) -> Option<LimitHit> {
        let status = self.reap().await;
        self.kill_group();
        let tail = self.stderr_tail().await;
        tracing::warn!(?status, stderr = %tail, "python_execute interpreter exited");
        // A SIGKILL from the kernel's OOM killer says nothing by itself; the sandbox's cgroup
        // counts those kills.
        let oom_killed = self.budget.as_ref().is_some_and(|b| b.oom_kills() > 0);
        status
            .and_then(|s| explain(&s, &tail))
            .or(oom_killed.then_some(LimitHit::Memory))
    }

    /// Runs one cell. On `cancel` or after `budget` the cell is interrupted; if the driver does
    /// not answer within `grace`, the interpreter is killed.
    pub async fn run(
        &mut self,
        code: &str,
        cancel: &CancellationToken,
        budget: Duration,
        grace: Duration,
    ) -> Outcome {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"id": id, "code": code}).to_string();
        if self.send(&request).await.is_err() {
            return self.died().await;
        }
        let first = tokio::select! {
            got = next_reply(&mut self.stdout, id) => Ok(got),
            () = cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep(budget) => Err(Stop::TimedOut),
        };
        let stop = match first {
            Ok(Ok(Some(reply))) => return Outcome::Replied { reply, stop: None },
            Ok(Ok(None)) => return self.died().await,
            Ok(Err(e)) => return self.protocol_error(id, &e).await,
            Err(stop) => stop,
        };
        tracing::info!(?stop, id, "interrupting a python_execute cell");
        if self
            .send(&json!({ "interrupt": id }).to_string())
            .await
            .is_err()
        {
            return self.died().await;
        }
        match tokio::time::timeout(grace, next_reply(&mut self.stdout, id)).await {
            Ok(Ok(Some(reply))) => Outcome::Replied {
                reply,
                stop: Some(stop),
            },
            Ok(Ok(None)) => self.died().await,
            Ok(Err(e)) => self.protocol_error(id, &e).await,
            Err(_) => {
                tracing::warn!(
                    id,
                    ?grace,
                    "python_execute cell ignored the interrupt; killing the interpreter"
                );
                self.kill_group();
                let _ = self.reap().await;
                Outcome::Hung { stop }
            }
        }
    }

    async fn protocol_error(&mut self, id: u64, error: &ProtocolError) -> Outcome {
        tracing::warn!(id, %error, "python_execute driver broke the protocol; killing the interpreter");
        self.kill_group();
        let _ = self.reap().await;
        Outcome::Protocol
    }

    /// Kills the interpreter's process group: the interpreter (if still running) and everything
    /// it started in the background.
    fn kill_group(&self) {
        self.pgid.kill();
    }

    async fn send(&mut self, line: &str) -> std::io::Result<()> {
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await
    }

    async fn died(&mut self) -> Outcome {
        // The interpreter is gone; processes it left in its group go too.
        self.kill_group();
        Outcome::Died {
            limit: self.exit_cause().await,
        }
    }

    /// Waits for the process to end (killing its group if it takes too long).
    async fn reap(&mut self) -> Option<ExitStatus> {
        match tokio::time::timeout(EXIT_WAIT, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            Ok(Err(_)) => None,
            Err(_) => {
                self.kill_group();
                tokio::time::timeout(EXIT_WAIT, self.child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
        }
    }

    /// The stderr tail, once the stream has ended (or a moment has passed).
    async fn stderr_tail(&mut self) -> String {
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        lock(&self.stderr_tail).clone()
    }

    fn not_ready(mut self, why: String) -> SessionError {
        self.kill_group();
        let tail = lock(&self.stderr_tail).clone();
        // Dropping `self` reaps nothing; the kill above ends it, tokio reaps the orphan.
        self.stderr_task.take();
        if tail.trim().is_empty() {
            SessionError::NotReady(why)
        } else {
            SessionError::NotReady(format!("{why}; stderr: {}", tail.trim()))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Why the driver's output can no longer be read as replies.
#[derive(Debug, thiserror::Error)]
enum ProtocolError {
    #[error("a line longer than {0} bytes")]
    TooLong(usize),
    #[error("an unreadable line: {0}")]
    Unreadable(String),
    #[error("reading: {0}")]
    Io(#[from] std::io::Error),
}

/// Lines of the driver's stdout, each at most `limit` bytes (code in the sandbox can reach the
/// reply pipe; it must not make the host buffer without bound). Cancel-safe: a partial line is
/// kept in the reader.
struct LineReader {
    inner: BufReader<ChildStdout>,
    partial: Vec<u8>,
    limit: usize,
}

impl LineReader {
    fn new(stdout: ChildStdout, limit: usize) -> LineReader {
        LineReader {
            inner: BufReader::new(stdout),
            partial: Vec::new(),
            limit,
        }
    }

    /// The next line without its newline; `None` at the end of the stream.
    async fn next_line(&mut self) -> Result<Option<String>, ProtocolError> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let (take, done) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at, true),
                None => (available.len(), false),
            };
            let room = self.limit.saturating_sub(self.partial.len());
            if take > room {
                self.partial = Vec::new();
                return Err(ProtocolError::TooLong(self.limit));
            }
            self.partial.extend_from_slice(&available[..take]);
            self.inner.consume(if done { take + 1 } else { take });
            if done {
                let line = std::mem::take(&mut self.partial);
                return match String::from_utf8(line) {
                    Ok(line) => Ok(Some(line)),
                    Err(e) => Err(ProtocolError::Unreadable(e.to_string())),
                };
            }
        }
    }
}

fn is_ready(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("ready").and_then(serde_json::Value::as_bool))
        .unwrap_or(false)
}

/// The reply to cell `id`; `Ok(None)` when the stream ended. Replies to other ids (a cell
/// abandoned earlier) are skipped; a line that is not a reply is a protocol error. Cancel-safe.
async fn next_reply(lines: &mut LineReader, id: u64) -> Result<Option<Reply>, ProtocolError> {
    loop {
        let Some(line) = lines.next_line().await? else {
            return Ok(None);
        };
        match serde_json::from_str::<Reply>(&line) {
            Ok(reply) if reply.id == id => return Ok(Some(reply)),
            Ok(reply) => tracing::debug!(got = reply.id, want = id, "stale python_execute reply"),
            Err(e) => return Err(ProtocolError::Unreadable(e.to_string())),
        }
    }
}

/// Drains the interpreter's stderr, keeping its last bytes.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut buf = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let chunk = String::from_utf8_lossy(&buf[..n]);
                tracing::debug!(stderr = %chunk, "python_execute interpreter");
                let mut kept = lock(&tail);
                kept.push_str(&chunk);
                if kept.len() > STDERR_TAIL_BYTES {
                    let mut cut = kept.len() - STDERR_TAIL_BYTES;
                    while !kept.is_char_boundary(cut) {
                        cut += 1;
                    }
                    kept.drain(..cut);
                }
            }
        }
    }
}

fn lock(m: &Mutex<String>) -> MutexGuard<'_, String> {
    // A panic while holding this lock cannot leave the string half-written in a harmful way.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
