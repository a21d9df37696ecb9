//! Shared helpers: a sandbox per backend this machine supports, and a runner.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use toolbridge_sandbox::{BackendChoice, Limits, RunSpec, Sandbox, SandboxConfig};

pub const BACKENDS: &[BackendChoice] = &[BackendChoice::Bubblewrap, BackendChoice::Landlock];

/// A sandbox with `backend` forced, or `None` (after printing why) when this machine lacks it.
pub fn sandbox(backend: BackendChoice, limits: Limits) -> Option<Sandbox> {
    let config = SandboxConfig {
        backend,
        limits,
        ..SandboxConfig::default()
    };
    match Sandbox::new(config) {
        Ok(sandbox) => Some(sandbox),
        Err(err) => {
            eprintln!("skipped: {backend:?} is not available on this machine: {err}");
            None
        }
    }
}

/// Runs `f` once per backend this machine supports.
pub async fn each_backend<F, Fut>(limits: Limits, f: F)
where
    F: Fn(Sandbox) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for backend in BACKENDS {
        if let Some(sandbox) = sandbox(*backend, limits.clone()) {
            eprintln!("backend: {}", sandbox.isolation());
            f(sandbox).await;
        }
    }
}

/// A fresh workspace directory, prepared for `sandbox`. Created under `/var/tmp` rather than
/// `/tmp` so its host path differs from the sandbox's private `/tmp`.
pub fn workspace(sandbox: &Sandbox) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("tb-sandbox-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    sandbox.prepare_workspace(dir.path()).unwrap();
    dir
}

pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// The sandbox's cgroup memory peak, bytes, when it had a cgroup.
    pub memory_peak: Option<u64>,
}

impl Outcome {
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.status.success(),
            "status {}\nstdout: {}\nstderr: {}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

pub async fn run(
    sandbox: &Sandbox,
    ws: &Path,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Outcome {
    run_with(sandbox, ws, program, args, env, None).await
}

pub async fn run_with(
    sandbox: &Sandbox,
    ws: &Path,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limits: Option<&Limits>,
) -> Outcome {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let spec = RunSpec {
        workspace: ws,
        program,
        args: &args,
        env: &env,
        limits,
    };
    let mut prepared = sandbox.command(&spec).unwrap();
    prepared
        .command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = prepared.command.spawn().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("sandboxed command did not finish within 20 s")
        .unwrap();
    Outcome {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        memory_peak: prepared.budget.as_ref().and_then(|b| b.memory_peak()),
    }
}

/// Runs a Python snippet with the sandbox's interpreter.
pub async fn python(sandbox: &Sandbox, ws: &Path, code: &str) -> Outcome {
    let py = sandbox.python().to_path_buf();
    run(sandbox, ws, &py, &["-c", code], &[]).await
}

pub async fn python_limited(sandbox: &Sandbox, ws: &Path, code: &str, limits: &Limits) -> Outcome {
    let py = sandbox.python().to_path_buf();
    run_with(sandbox, ws, &py, &["-c", code], &[], Some(limits)).await
}

pub fn sh() -> PathBuf {
    PathBuf::from("/bin/sh")
}
