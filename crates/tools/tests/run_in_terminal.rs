//! `run_in_terminal` for real, in each sandbox backend this machine has (a missing one is skipped
//! with the reason): the workspace, output truncation with the seed's note, the seed's timeout
//! text with the process group gone, no network, no writes outside the workspace, exit codes, and
//! the risk table through the real toolbox with the default approvals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::json;
use toolbridge_agent::approval::{AllowAll, ApprovalRequest, Approvals, Approver, CallRisk};
use toolbridge_agent::toolbox::CallResult;
use toolbridge_agent::{CallStatus, ToolContext, Toolbox, ToolboxConfig};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolCall;
use toolbridge_sandbox::{BackendChoice, Isolation, Sandbox, SandboxConfig};
use toolbridge_tools::terminal::{RunInTerminal, TerminalConfig};

/// The sandboxes this machine gives, one per backend.
fn sandboxes() -> Vec<Sandbox> {
    let mut out = Vec::new();
    for backend in [BackendChoice::Bubblewrap, BackendChoice::Landlock] {
        match Sandbox::new(SandboxConfig {
            backend,
            ..SandboxConfig::default()
        }) {
            Ok(s) => out.push(s),
            Err(e) => eprintln!("skipped: {backend:?} is not available on this machine: {e}"),
        }
    }
    out
}

struct Setup {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    toolbox: Toolbox,
    isolation: Isolation,
}

/// A toolbox with `run_in_terminal` on `sandbox`, and a fresh workspace (under `/var/tmp`, so its
/// host path differs from the sandbox's private `/tmp`).
fn setup(sandbox: &Sandbox, config: TerminalConfig) -> Setup {
    let dir = tempfile::Builder::new()
        .prefix("tb-terminal-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let toolbox = Toolbox::new(ToolboxConfig::default())
        .with(RunInTerminal::new(sandbox.clone(), config))
        .unwrap();
    Setup {
        _dir: dir,
        workspace,
        toolbox,
        isolation: sandbox.isolation().clone(),
    }
}

impl Setup {
    async fn run_with(
        &self,
        command: &str,
        risk: &str,
        approvals: &Approvals,
        approver: &dyn Approver,
    ) -> CallResult {
        let call = ToolCall {
            id: "call_1".into(),
            name: "run_in_terminal".into(),
            arguments: json!({"command": command, "risk": risk, "explanation": "test"}).to_string(),
        };
        let ctx = ToolContext {
            workspace: Some(self.workspace.clone()),
            ..ToolContext::default()
        };
        self.toolbox
            .execute(&call, &ctx, approvals, approver, Duration::from_secs(120))
            .await
    }

    /// Runs with every risk allowed (the sandbox is what is tested).
    async fn run(&self, command: &str) -> CallResult {
        self.run_with(command, "high", &Approvals::default(), &AllowAll)
            .await
    }
}

#[tokio::test]
async fn ls_runs_in_the_workspace_and_sees_its_folders() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        std::fs::write(s.workspace.join("uploads-note.txt"), "x").unwrap();
        let r = s.run("pwd && ls -la /workspace").await;
        assert_eq!(r.status, CallStatus::Ok, "{}: {}", s.isolation, r.for_model);
        let mut lines = r.full.lines();
        assert_eq!(
            lines.next(),
            Some("/workspace"),
            "{}: {}",
            s.isolation,
            r.full
        );
        for folder in ["uploads", "downloads", "outputs", "uploads-note.txt"] {
            assert!(
                r.full.contains(folder),
                "{}: {folder} missing in {}",
                s.isolation,
                r.full
            );
        }
        let r = s
            .run("echo made > /workspace/outputs/made.txt && cat outputs/made.txt")
            .await;
        assert_eq!(r.full, "made\n", "{}", s.isolation);
        assert_eq!(
            std::fs::read_to_string(s.workspace.join("outputs/made.txt")).unwrap(),
            "made\n"
        );
    }
}

#[tokio::test]
async fn output_is_cut_at_2000_characters_with_the_seed_note() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        let r = s.run("head -c 5000 /dev/zero | tr '\\0' a").await;
        assert_eq!(r.status, CallStatus::Ok, "{}: {}", s.isolation, r.for_model);
        assert_eq!(r.full.len(), 5000);
        assert_eq!(
            r.for_model,
            format!("{}{}", "a".repeat(2000), texts::truncation_note(5000))
        );
        assert!(r
            .for_model
            .ends_with("\n\n... (output truncated, total 5000 chars)"));
    }
}

/// Processes whose command line holds `marker`, host-wide.
/// No process with `marker` on its command line is left (waiting up to 3 s: a killed process's
/// exit is reaped a moment after the signal).
async fn assert_no_process_left(marker: &str, isolation: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_with(marker).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(processes_with(marker), Vec::<String>::new(), "{isolation}");
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!(
                    "{}: {cmdline}",
                    entry.file_name().to_string_lossy()
                ));
            }
        }
    }
    found
}

#[tokio::test]
async fn a_long_command_gets_the_timeout_text_with_the_real_seconds_and_its_process_group_is_killed(
) {
    for sandbox in sandboxes() {
        let s = setup(
            &sandbox,
            TerminalConfig {
                timeout_secs: 2,
                ..TerminalConfig::default()
            },
        );
        // A marker only these sleeps carry, one in the foreground and one left in the background.
        let marker = format!("3{}.25", std::process::id() % 1000);
        let started = Instant::now();
        let r = s.run(&format!("sleep {marker} & sleep {marker}")).await;
        let took = started.elapsed();
        assert_eq!(
            (r.status, r.for_model.as_str()),
            (CallStatus::ToolError, "Command timeout after 2s"),
            "{}",
            s.isolation
        );
        // A repeat of a timed-out command runs again (it is not skipped as a duplicate).
        assert!(r.transient, "{}", s.isolation);
        // The default (120 s) is the seed's text byte for byte.
        assert_eq!(texts::terminal_timeout(120), texts::TERMINAL_TIMEOUT);
        assert_eq!(texts::TERMINAL_TIMEOUT, "Command timeout after 120s");
        assert!(
            took < Duration::from_secs(10),
            "{}: took {took:?}",
            s.isolation
        );
        // SIGKILL is delivered at once, the exit is reaped a moment later.
        assert_no_process_left(&marker, &s.isolation.to_string()).await;
    }
}

#[tokio::test]
async fn background_processes_do_not_hold_the_call_open() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        let marker = format!("4{}.75", std::process::id() % 1000);
        let started = Instant::now();
        let r = s.run(&format!("sleep {marker} & echo started")).await;
        assert_eq!(r.full, "started\n", "{}", s.isolation);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            s.isolation
        );
        assert_no_process_left(&marker, &s.isolation.to_string()).await;
    }
}

#[tokio::test]
async fn there_is_no_network() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let r = s
            .run(&format!(
                "curl -sS --max-time 3 http://127.0.0.1:{port}/; echo \"curl=$?\"; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; echo \"tcp=$?\""
            ))
            .await;
        assert_eq!(r.status, CallStatus::Ok, "{}: {}", s.isolation, r.full);
        assert!(!r.full.contains("curl=0"), "{}: {}", s.isolation, r.full);
        assert!(!r.full.contains("tcp=0"), "{}: {}", s.isolation, r.full);
        assert!(
            r.full.contains("curl=") && r.full.contains("tcp="),
            "{}: {}",
            s.isolation,
            r.full
        );
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!(
                "{}: the loopback listener was reached: {other:?}",
                s.isolation
            ),
        }
    }
}

#[tokio::test]
async fn writes_outside_the_workspace_fail() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        let outside = s.workspace.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let target = outside.join("f.txt");
        let r = s
            .run(&format!(
                "echo x > {} ; echo x > /etc/tb-terminal-test ; echo done",
                target.display()
            ))
            .await;
        assert!(r.full.ends_with("done\n"), "{}: {}", s.isolation, r.full);
        assert!(
            !target.exists(),
            "{}: wrote {}",
            s.isolation,
            target.display()
        );
        assert!(
            !Path::new("/etc/tb-terminal-test").exists(),
            "{}",
            s.isolation
        );
    }
}

#[tokio::test]
async fn a_non_zero_exit_code_is_reported() {
    for sandbox in sandboxes() {
        let s = setup(&sandbox, TerminalConfig::default());
        let r = s.run("echo oops >&2; exit 3").await;
        assert_eq!(
            (r.status, r.full.as_str()),
            (CallStatus::Ok, "oops\n[exit code 3]"),
            "{}",
            s.isolation
        );
        let r = s.run("true").await;
        assert_eq!(r.full, texts::TERMINAL_NO_OUTPUT, "{}", s.isolation);
    }
}

/// Answers with a fixed yes or no and records the effective risk it was asked about.
struct Recording {
    answer: bool,
    asked: Mutex<Vec<Option<CallRisk>>>,
}

impl Approver for Recording {
    fn approve<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, bool> {
        Box::pin(async { panic!("the toolbox asks approve_request") })
    }

    fn approve_request<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, bool> {
        self.asked
            .lock()
            .unwrap()
            .push(request.risk.map(|r| r.effective));
        let answer = self.answer;
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn the_risk_table_through_the_toolbox_with_the_default_approvals() {
    let Some(sandbox) = sandboxes().into_iter().next() else {
        eprintln!("skipped: no sandbox backend on this machine");
        return;
    };
    let s = setup(&sandbox, TerminalConfig::default());
    std::fs::create_dir_all(s.workspace.join("build")).unwrap();
    std::fs::write(s.workspace.join("f"), "content\n").unwrap();
    let approvals = Approvals::default();
    let denying = Recording {
        answer: false,
        asked: Mutex::new(Vec::new()),
    };

    // Low: runs without asking.
    for command in ["ls -la", "cat f"] {
        let r = s.run_with(command, "low", &approvals, &denying).await;
        assert_eq!(r.status, CallStatus::Ok, "{command}: {}", r.for_model);
    }
    assert!(denying.asked.lock().unwrap().is_empty());

    // High, declared high or (falsely) low: asked, denied, not run.
    for (command, declared) in [
        ("rm -rf build", "high"),
        ("rm -rf build", "low"),
        ("curl http://127.0.0.1:9/x | sh", "low"),
        ("sudo rm f", "medium"),
        ("echo $(rm -rf build)", "low"),
        ("git push --force", "low"),
    ] {
        let r = s.run_with(command, declared, &approvals, &denying).await;
        assert_eq!(
            (r.status, r.for_model.as_str()),
            (CallStatus::Denied, texts::APPROVAL_DENIED),
            "{command}"
        );
    }
    // Unknown: asked too.
    let r = s
        .run_with("frobnicate --all", "low", &approvals, &denying)
        .await;
    assert_eq!(r.status, CallStatus::Denied);
    assert_eq!(
        denying.asked.lock().unwrap().clone(),
        vec![Some(CallRisk::High); 6]
            .into_iter()
            .chain([Some(CallRisk::Unknown)])
            .collect::<Vec<_>>()
    );
    assert!(s.workspace.join("build").is_dir(), "no denied command ran");

    // Approved: it runs.
    let approving = Recording {
        answer: true,
        asked: Mutex::new(Vec::new()),
    };
    let r = s
        .run_with("rm -rf build", "low", &approvals, &approving)
        .await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    assert!(!s.workspace.join("build").exists());
    assert_eq!(
        approving.asked.lock().unwrap().clone(),
        vec![Some(CallRisk::High)]
    );
}
