//! Operator-facing errors: each says what to do about it.

use std::path::PathBuf;

/// Why a sandbox could not be made or a command not prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "no sandbox available ({reason}): install bubblewrap (apt-get install bubblewrap) or allow \
         unsandboxed execution with [tools.sandbox] allow_unsandboxed = true"
    )]
    Unavailable { reason: String },
    #[error(
        "[tools.sandbox] backend = \"bubblewrap\" but bubblewrap does not work here: {reason}; \
         install it (apt-get install bubblewrap), set [tools.sandbox] bwrap to its path, choose \
         backend = \"auto\", or allow unsandboxed execution with [tools.sandbox] \
         allow_unsandboxed = true"
    )]
    BubblewrapUnavailable { reason: String },
    #[error(
        "[tools.sandbox] backend = \"landlock\" but Landlock is not available here: {reason}; use a \
         kernel with Landlock enabled (5.13+, lsm=landlock) or choose backend = \"auto\""
    )]
    LandlockUnavailable { reason: String },
    #[error(
        "no Python interpreter for the sandbox: run `toolbridge sandbox setup`, install python3 \
         (apt-get install python3), or set [tools.sandbox] python"
    )]
    NoPython,
    #[error("workspace {path}: {reason}")]
    Workspace { path: PathBuf, reason: String },
    #[error("the sandbox's cgroup: {0}")]
    Budget(String),
    #[error("sandbox setup: {0}")]
    Setup(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
