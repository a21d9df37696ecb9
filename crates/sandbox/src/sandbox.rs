//! [`Sandbox`]: picks a backend once, then turns [`RunSpec`]s into ready-to-spawn commands.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bwrap::Bwrap;
use crate::cgroup::{Budget, Cgroups};
use crate::config::{BackendChoice, Limits, SandboxConfig};
use crate::error::SandboxError;
use crate::landlock::Landlock;
use crate::{python, workspace};

/// The uid/gid sandboxed code runs as when toolbridge runs as root (`nobody`/`nogroup`): the
/// kernel never enforces RLIMIT_NPROC for uid 0 (nor for a user namespace mapping it), and an
/// unprivileged uid holds no capability after the switch.
pub const SANDBOX_UID: u32 = 65534;
pub const SANDBOX_GID: u32 = 65534;

/// What isolation a [`Sandbox`] gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Isolation {
    Bubblewrap { version: String },
    Landlock { abi: u32 },
    Unsandboxed,
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bubblewrap { version } => write!(f, "bubblewrap {version}"),
            Self::Landlock { abi } => write!(f, "landlock (ABI {abi}) + seccomp"),
            Self::Unsandboxed => f.write_str("unsandboxed (no isolation)"),
        }
    }
}

/// One command to run in the sandbox.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec<'a> {
    /// Host path of the conversation workspace: read-write inside, and the working directory.
    pub workspace: &'a Path,
    /// The program, as seen inside (e.g. [`Sandbox::python`] or `/bin/bash`).
    pub program: &'a Path,
    pub args: &'a [String],
    /// Added to the cleared environment (after the sandbox's own variables, so it may override
    /// them).
    pub env: &'a [(String, String)],
    /// `None`: the configuration's limits.
    pub limits: Option<&'a Limits>,
}

/// How one command is confined, whichever backend runs it: the workspace (read-write, the working
/// directory), the other paths it may read, its whole environment, its limits and the uid/gid it
/// runs as.
#[derive(Clone, Copy, Debug)]
pub struct Confinement<'a> {
    pub workspace: &'a Path,
    pub extra_ro: &'a [PathBuf],
    pub env: &'a [(String, String)],
    pub limits: &'a Limits,
    pub run_as: Option<(u32, u32)>,
    /// The command runs in a cgroup leaf whose `pids.max` bounds its tasks: RLIMIT_NPROC, which
    /// counts every task of the uid on the host, is then left unlimited (see [`crate::cgroup`]).
    pub pids_budget: bool,
}

/// A command ready to spawn, and the cgroup leaf it will run in (when this machine gives
/// per-sandbox budgets). Keep the budget until the child is gone: dropping it kills whatever
/// still runs in the leaf and removes it.
#[derive(Debug)]
pub struct Prepared {
    pub command: tokio::process::Command,
    pub budget: Option<Budget>,
}

/// A configured sandbox; cheap to clone.
#[derive(Clone, Debug)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: SandboxConfig,
    isolation: Isolation,
    backend: Backend,
    python: PathBuf,
    /// `Some` when we are root: sandboxed code runs as this unprivileged uid/gid.
    run_as: Option<(u32, u32)>,
    /// Per-sandbox memory and pids budgets, or why there are none.
    cgroups: Result<Cgroups, String>,
}

#[derive(Debug)]
enum Backend {
    Bubblewrap(Bwrap),
    Landlock(Landlock),
    Unsandboxed,
}

impl Sandbox {
    /// Probes the configured backend once (a real test run for bubblewrap).
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        let run_as = if rustix::process::geteuid().is_root() {
            Some((SANDBOX_UID, SANDBOX_GID))
        } else {
            None
        };
        let backend = match pick_backend(&config, run_as) {
            Ok(backend) => backend,
            Err(err) if config.allow_unsandboxed => {
                tracing::warn!(
                    reason = %err,
                    "no sandbox available; running model-written code UNSANDBOXED because \
                     [tools.sandbox] allow_unsandboxed = true: it can read and change anything \
                     this user can, and reach the network"
                );
                Backend::Unsandboxed
            }
            Err(err) => return Err(err),
        };
        let isolation = match &backend {
            Backend::Bubblewrap(b) => Isolation::Bubblewrap {
                version: b.version.clone(),
            },
            Backend::Landlock(l) => Isolation::Landlock { abi: l.abi },
            Backend::Unsandboxed => Isolation::Unsandboxed,
        };
        // Unsandboxed code runs as we do; there is no other uid to hand the workspace to.
        let run_as = run_as.filter(|_| !matches!(backend, Backend::Unsandboxed));
        let python = python::resolve(
            &config,
            matches!(backend, Backend::Landlock(_)) && run_as.is_some(),
        );
        let cgroups = Cgroups::detect();
        match &cgroups {
            Ok(c) => {
                tracing::info!(memory = %c.memory.parent.display(), pids = %c.pids.parent.display(), "each sandbox gets a cgroup of its own (memory and process budgets)")
            }
            Err(reason) => tracing::warn!(
                %reason,
                "no per-sandbox cgroups: memory_mb limits each process (RLIMIT_AS), not the \
                 sandbox, and processes counts every task of the sandbox uid on the host"
            ),
        }
        Ok(Sandbox {
            inner: Arc::new(Inner {
                config,
                isolation,
                backend,
                python,
                run_as,
                cgroups,
            }),
        })
    }

    pub fn isolation(&self) -> &Isolation {
        &self.inner.isolation
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The interpreter for `python_execute`, usable inside the sandbox.
    pub fn python(&self) -> &Path {
        &self.inner.python
    }

    /// Why sandboxes get no cgroup of their own here (`None`: each one does).
    pub fn budgets_unavailable(&self) -> Option<&str> {
        self.inner.cgroups.as_ref().err().map(String::as_str)
    }

    /// The uid sandboxed code runs as, when it differs from ours (we are root).
    pub fn sandbox_uid(&self) -> Option<u32> {
        self.inner.run_as.map(|(uid, _)| uid)
    }

    /// Refuses, at start-up, a layout the sandboxed code cannot use: under Landlock (no mount
    /// namespace) and as root, sandboxed code runs as uid 65534 and sees host paths, so the
    /// workspaces' folder and the interpreter must sit below directories every user can search.
    /// (Bubblewrap mounts both into the sandbox; a non-root user's code runs as that user.)
    /// `workspaces` is the folder holding the workspaces; it may not exist yet (folders we create
    /// are searchable).
    pub fn check_layout(&self, workspaces: &Path) -> Result<(), SandboxError> {
        let (Backend::Landlock(_), Some((uid, _))) = (&self.inner.backend, self.inner.run_as)
        else {
            return Ok(());
        };
        if let Some(dir) = workspace::first_closed_ancestor(workspaces) {
            return Err(SandboxError::Workspace {
                path: workspaces.to_path_buf(),
                reason: format!(
                    "sandboxed code runs as uid {uid} under Landlock and cannot reach it: {} is                      not searchable by other users (mode {:o}); set [tools.workspaces] root (or                      XDG_DATA_HOME) to a folder every user can search, such as                      /var/lib/toolbridge/workspaces (the default as root), or install bubblewrap",
                    dir.display(),
                    workspace::mode_of(&dir) & 0o7777,
                ),
            });
        }
        let python = &self.inner.python;
        if let Some(dir) = workspace::first_closed_ancestor(python) {
            return Err(SandboxError::Setup(format!(
                "the interpreter {} is out of reach of the sandboxed code (uid {uid} under                  Landlock): {} is not searchable by other users (mode {:o}); make a venv where it                  is (`toolbridge sandbox setup --venv /var/lib/toolbridge/sandbox/venv`) and set                  [tools.sandbox] python, or install bubblewrap",
                python.display(),
                dir.display(),
                workspace::mode_of(&dir) & 0o7777,
            )));
        }
        Ok(())
    }

    /// Creates `host/{uploads,downloads,outputs}` and, when sandboxed code runs as another uid,
    /// hands the workspace to that uid.
    pub fn prepare_workspace(&self, host: &Path) -> Result<(), SandboxError> {
        let check_reachable = matches!(self.inner.backend, Backend::Landlock(_));
        workspace::prepare(host, self.inner.run_as, check_reachable)
    }

    /// Where the workspace appears to sandboxed code.
    pub fn workspace_inside(&self, host: &Path) -> PathBuf {
        match self.inner.backend {
            Backend::Bubblewrap(_) => PathBuf::from(crate::bwrap::WORKSPACE),
            Backend::Landlock(_) | Backend::Unsandboxed => host.to_path_buf(),
        }
    }

    /// A command running `spec` in the sandbox: its own process group (see [`kill_group`]),
    /// `kill_on_drop`, cleared environment, and its own cgroup leaf where the machine allows.
    /// Stdio is left to the caller.
    pub fn command(&self, spec: &RunSpec<'_>) -> Result<Prepared, SandboxError> {
        let inner = &self.inner;
        let workspace =
            std::fs::canonicalize(spec.workspace).map_err(|e| SandboxError::Workspace {
                path: spec.workspace.to_path_buf(),
                reason: format!("{e} (call prepare_workspace first)"),
            })?;
        if !workspace.is_dir() {
            return Err(SandboxError::Workspace {
                path: workspace,
                reason: "not a directory".into(),
            });
        }
        let limits = spec.limits.unwrap_or(&inner.config.limits);
        let budget = match &inner.cgroups {
            Ok(cgroups) => Some(cgroups.leaf(limits).map_err(SandboxError::Budget)?),
            Err(_) => None,
        };
        let join = match &budget {
            Some(b) => b.join_handles().map_err(SandboxError::Budget)?,
            None => Vec::new(),
        };
        let inside = self.workspace_inside(&workspace);
        let tmp = match inner.backend {
            Backend::Bubblewrap(_) => PathBuf::from("/tmp"),
            Backend::Landlock(_) | Backend::Unsandboxed => {
                workspace::private_tmp(&workspace, inner.run_as)?
            }
        };
        let env = environment(&inner.python, &inside, &tmp, spec.env);
        let extra_ro = python::visible_roots(&inner.python)
            .into_iter()
            .chain(
                python::OPTIONAL_SYSTEM_PATHS
                    .iter()
                    .map(PathBuf::from)
                    .filter(|p| p.exists()),
            )
            .chain(inner.config.read_only_paths.iter().cloned())
            .collect::<Vec<_>>();
        let confinement = Confinement {
            workspace: &workspace,
            extra_ro: &extra_ro,
            env: &env,
            limits,
            run_as: inner.run_as,
            pids_budget: budget.is_some(),
        };
        let mut cmd = match &inner.backend {
            Backend::Bubblewrap(b) => {
                let mut cmd = b.command(&confinement, spec);
                crate::sys::join_cgroups(cmd.as_std_mut(), join);
                cmd
            }
            Backend::Landlock(l) => l.command(&confinement, spec, join)?,
            Backend::Unsandboxed => {
                tracing::warn!(
                    program = %spec.program.display(),
                    "running model-written code UNSANDBOXED ([tools.sandbox] allow_unsandboxed = true)"
                );
                let mut cmd = tokio::process::Command::new(spec.program);
                cmd.args(spec.args)
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .current_dir(&workspace)
                    .process_group(0);
                crate::sys::join_cgroups(cmd.as_std_mut(), join);
                cmd
            }
        };
        cmd.kill_on_drop(true);
        Ok(Prepared {
            command: cmd,
            budget,
        })
    }
}

/// The sandboxed program's whole environment: nothing of ours is inherited (no keys, tokens or
/// proxies), only these and the caller's `extra`.
fn environment(
    python: &Path,
    home: &Path,
    tmp: &Path,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut path = String::new();
    // A venv's bin first, so `python`/`pip` in a terminal command mean the sandbox's Python.
    if let Some(bin) = python.parent().filter(|b| !python::is_system_dir(b)) {
        path.push_str(&bin.to_string_lossy());
        path.push(':');
    }
    path.push_str("/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin");
    let tmp = tmp.to_string_lossy().into_owned();
    let mut env = vec![
        ("PATH".to_owned(), path),
        ("HOME".to_owned(), home.to_string_lossy().into_owned()),
        // bubblewrap sets it with --chdir; set everywhere for one environment on every backend.
        ("PWD".to_owned(), home.to_string_lossy().into_owned()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ("TMPDIR".to_owned(), tmp.clone()),
        ("MPLCONFIGDIR".to_owned(), tmp),
    ];
    for (key, value) in extra {
        env.retain(|(k, _)| k != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

fn pick_backend(
    config: &SandboxConfig,
    run_as: Option<(u32, u32)>,
) -> Result<Backend, SandboxError> {
    match config.backend {
        BackendChoice::Bubblewrap => Bwrap::probe(config.bwrap.as_deref(), run_as)
            .map(Backend::Bubblewrap)
            .map_err(|reason| SandboxError::BubblewrapUnavailable { reason }),
        BackendChoice::Landlock => Landlock::probe()
            .map(Backend::Landlock)
            .map_err(|reason| SandboxError::LandlockUnavailable { reason }),
        BackendChoice::Auto => match Bwrap::probe(config.bwrap.as_deref(), run_as) {
            Ok(b) => Ok(Backend::Bubblewrap(b)),
            Err(bwrap_reason) => match Landlock::probe() {
                Ok(l) => {
                    tracing::info!(reason = %bwrap_reason, "bubblewrap unusable; sandboxing with Landlock + seccomp");
                    Ok(Backend::Landlock(l))
                }
                Err(landlock_reason) => Err(SandboxError::Unavailable {
                    reason: format!("bubblewrap: {bwrap_reason}; landlock: {landlock_reason}"),
                }),
            },
        },
    }
}

/// Kills (SIGKILL) the process group the sandboxed command leads, and with it everything it
/// started (bubblewrap's `--die-with-parent` and PID namespace take the inner processes down).
/// Once the child has been reaped its id is gone: keep a [`ProcessGroup`] from spawn time instead.
pub fn kill_group(child: &tokio::process::Child) {
    ProcessGroup::of(child).kill();
}

/// The process group a sandboxed command leads (`Sandbox::command` makes it a leader), recorded
/// right after spawn. Unlike `Child::id`, it survives the leader being reaped, when processes it
/// left in the background may still be in the group (under Landlock nothing else ends them).
#[derive(Clone, Copy, Debug)]
pub struct ProcessGroup(Option<rustix::process::Pid>);

impl ProcessGroup {
    pub fn of(child: &tokio::process::Child) -> ProcessGroup {
        ProcessGroup(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(rustix::process::Pid::from_raw),
        )
    }

    /// SIGKILL to every process of the group.
    pub fn kill(&self) {
        if let Some(pid) = self.0 {
            // ESRCH (already gone) is the expected race; nothing to report.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
