//! `[tools.sandbox]` in `toolbridge.toml`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which isolation to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendChoice {
    /// Bubblewrap when it works on this machine, else Landlock + seccomp.
    #[default]
    Auto,
    Bubblewrap,
    Landlock,
}

/// `[tools.sandbox]`: every key has a default, unknown keys are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    pub backend: BackendChoice,
    /// With no isolation available, run the code unsandboxed instead of refusing. Off by default:
    /// there is never a silent downgrade.
    pub allow_unsandboxed: bool,
    /// The bubblewrap binary (default: `bwrap` on `PATH`).
    pub bwrap: Option<PathBuf>,
    /// The interpreter for `python_execute` (default: the venv made by `toolbridge sandbox
    /// setup` when present, else `/usr/bin/python3`, else `python3` on `PATH`).
    pub python: Option<PathBuf>,
    pub limits: Limits,
    /// Extra host paths made visible read-only inside the sandbox.
    pub read_only_paths: Vec<PathBuf>,
}

/// Resource limits of one sandboxed process tree (see [`crate::cgroup`] for which are counted
/// per sandbox).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Memory of the whole sandbox, swap included (its cgroup), and each process's address
    /// space (RLIMIT_AS), MiB.
    pub memory_mb: u64,
    /// CPU time (RLIMIT_CPU), seconds.
    pub cpu_secs: u64,
    /// Largest file the process may write (RLIMIT_FSIZE), MiB.
    pub file_size_mb: u64,
    /// Processes and threads of the whole sandbox (its cgroup's `pids.max`, plus its two helper
    /// processes); without cgroups, RLIMIT_NPROC, which counts every task of the sandbox uid.
    pub processes: u64,
    /// Open file descriptors (RLIMIT_NOFILE).
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mb: 1024,
            cpu_secs: 60,
            file_size_mb: 256,
            processes: 64,
            open_files: 256,
        }
    }
}
