//! # toolbridge-sandbox
//!
//! Runs model-written code (`python_execute`, `run_in_terminal`) in isolation
//! (docs/src/security.md, "Model-written code", and docs/src/sandbox.md): a read-only system, the
//! conversation workspace read-write at `/workspace`, no network, a cleared environment, no
//! capabilities and rlimits on memory, CPU, file size, processes and open files. Two backends:
//!
//! - **bubblewrap** ([`bwrap`]): a fresh mount namespace showing only the system directories,
//!   the interpreter and the workspace; its own network, PID, IPC and UTS namespaces.
//! - **Landlock + seccomp** ([`landlock`]): for machines without a working bubblewrap. Same file
//!   and network denial, but no mount namespace: the workspace keeps its host path (the tools
//!   rewrite `/workspace`), and `/proc` shows the host's processes.
//!
//! With neither available [`Sandbox::new`] fails unless the operator set
//! `allow_unsandboxed = true`; there is never a silent downgrade.

pub mod beneath;
pub mod bwrap;
pub mod cgroup;
pub mod check;
pub mod config;
pub mod error;
pub mod landlock;
pub mod limits;
pub mod paths;
pub mod private;
pub mod python;
mod sandbox;
pub mod setup;
mod sys;
mod workspace;

pub use cgroup::Budget;
pub use check::{check, CheckReport};
pub use config::{BackendChoice, Limits, SandboxConfig};
pub use error::SandboxError;
pub use limits::{explain, explain_stderr, LimitHit};
pub use paths::data_dir;
pub use sandbox::{kill_group, Isolation, Prepared, ProcessGroup, RunSpec, Sandbox};
pub use setup::{default_venv_dir, setup_venv};
