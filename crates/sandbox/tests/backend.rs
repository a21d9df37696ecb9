//! Backend selection, the refusal to run unsandboxed, configuration, and `kill_group`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use toolbridge_sandbox::{BackendChoice, Isolation, Limits, Sandbox, SandboxConfig, SandboxError};

fn missing_bwrap(allow_unsandboxed: bool) -> SandboxConfig {
    SandboxConfig {
        backend: BackendChoice::Bubblewrap,
        bwrap: Some(PathBuf::from("/nonexistent/bwrap")),
        allow_unsandboxed,
        ..SandboxConfig::default()
    }
}

#[test]
fn unsandboxed_is_refused_by_default() {
    let err = Sandbox::new(missing_bwrap(false)).unwrap_err();
    assert!(
        matches!(err, SandboxError::BubblewrapUnavailable { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("apt-get install bubblewrap"), "{msg}");
    assert!(msg.contains("allow_unsandboxed = true"), "{msg}");
}

#[tokio::test]
async fn unsandboxed_runs_when_allowed_with_a_cleared_environment() {
    std::env::set_var("OPENAI_API_KEY", "sk-secret-test-value");
    let sb = Sandbox::new(missing_bwrap(true)).unwrap();
    assert_eq!(sb.isolation(), &Isolation::Unsandboxed);
    let ws = tempfile::tempdir().unwrap();
    sb.prepare_workspace(ws.path()).unwrap();
    assert_eq!(sb.workspace_inside(ws.path()), ws.path());
    let out = run(&sb, ws.path(), &PathBuf::from("/usr/bin/env"), &[], &[]).await;
    out.assert_ok();
    assert!(!out.stdout.contains("OPENAI_API_KEY"), "{}", out.stdout);
}

#[test]
fn config_defaults_and_unknown_keys() {
    let config: SandboxConfig = toml::from_str("").unwrap();
    assert_eq!(config, SandboxConfig::default());
    assert_eq!(config.backend, BackendChoice::Auto);
    assert!(!config.allow_unsandboxed);
    assert_eq!(
        config.limits,
        Limits {
            memory_mb: 1024,
            cpu_secs: 60,
            file_size_mb: 256,
            processes: 64,
            open_files: 256
        }
    );
    let config: SandboxConfig =
        toml::from_str("backend = \"landlock\"\n[limits]\nmemory_mb = 512\n").unwrap();
    assert_eq!(config.backend, BackendChoice::Landlock);
    assert_eq!(config.limits.memory_mb, 512);
    assert_eq!(config.limits.cpu_secs, 60);
    assert!(toml::from_str::<SandboxConfig>("backnd = \"auto\"").is_err());
    assert!(toml::from_str::<SandboxConfig>("[limits]\nmemory = 1").is_err());
}

#[test]
fn auto_picks_a_working_backend_here() {
    match Sandbox::new(SandboxConfig::default()) {
        Ok(sb) => assert_ne!(sb.isolation(), &Isolation::Unsandboxed),
        Err(err) => eprintln!("skipped: no isolation on this machine: {err}"),
    }
}

/// Running `sleep <marker>` processes.
fn processes_with(marker: &str) -> usize {
    let wanted = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c == wanted.as_bytes())
        .count()
}

#[tokio::test]
async fn kill_group_kills_everything_the_command_started() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let marker = format!("{}.{}", 300 + std::process::id() % 100, std::process::id());
        let script = format!("sleep {marker} & sleep {marker} & (sleep {marker} &) ; wait");
        let args = vec!["-c".to_owned(), script];
        let spec = toolbridge_sandbox::RunSpec {
            workspace: ws.path(),
            program: &sh(),
            args: &args,
            env: &[],
            limits: None,
        };
        let mut prepared = sb.command(&spec).unwrap();
        let mut child = prepared.command.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        while processes_with(&marker) < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(processes_with(&marker), 3, "the sleeps did not start");
        toolbridge_sandbox::kill_group(&child);
        tokio::time::timeout(Duration::from_secs(3), child.wait())
            .await
            .unwrap()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        while processes_with(&marker) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(processes_with(&marker), 0, "processes survived kill_group");
    })
    .await;
}
