//! `python_execute` against the real sandbox (bubblewrap, or Landlock where it is missing):
//! persistent state, captured output, errors, interrupts, hangs, crashes, limits, output cap,
//! isolation between conversations, the outputs listing and idle reaping.
//!
//! Every test skips with a printed reason when this machine gives no isolation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbridge_agent::{Tool, ToolContext, ToolError};
use toolbridge_protocol::texts;
use toolbridge_sandbox::{BackendChoice, Limits, Sandbox, SandboxConfig};
use toolbridge_tools::python::{render, PythonConfig, PythonExecute};

/// Limits for tests: the defaults, but RLIMIT_NPROC counts every task of the sandbox uid on the
/// machine, and other test binaries run sandboxed code at the same time.
fn test_limits() -> Limits {
    Limits {
        processes: 4096,
        ..Limits::default()
    }
}

fn tool_with(limits: Limits, config: PythonConfig) -> Option<PythonExecute> {
    // TOOLBRIDGE_TEST_SANDBOX=landlock runs the suite on the fallback backend.
    let backend = match std::env::var("TOOLBRIDGE_TEST_SANDBOX").as_deref() {
        Ok("landlock") => BackendChoice::Landlock,
        Ok("bubblewrap") => BackendChoice::Bubblewrap,
        _ => BackendChoice::Auto,
    };
    let sandbox_config = SandboxConfig {
        backend,
        limits,
        ..SandboxConfig::default()
    };
    match Sandbox::new(sandbox_config) {
        Ok(sandbox) => Some(PythonExecute::new(sandbox, config)),
        Err(e) => {
            eprintln!("skipped: no sandbox isolation on this machine: {e}");
            None
        }
    }
}

fn tool() -> Option<PythonExecute> {
    tool_with(test_limits(), PythonConfig::default())
}

fn context(workspace: &Path, conversation: &str) -> ToolContext {
    ToolContext {
        workspace: Some(workspace.to_path_buf()),
        user: "tester".into(),
        conversation: conversation.into(),
        ..ToolContext::default()
    }
}

async fn run(tool: &PythonExecute, ctx: &ToolContext, code: &str) -> Result<String, ToolError> {
    tool.invoke(json!({ "code": code }), ctx.clone()).await
}

async fn ok(tool: &PythonExecute, ctx: &ToolContext, code: &str) -> String {
    match run(tool, ctx, code).await {
        Ok(text) => text,
        Err(e) => panic!("{code:?} failed: {e:?}"),
    }
}

async fn tool_error(tool: &PythonExecute, ctx: &ToolContext, code: &str) -> String {
    match run(tool, ctx, code).await {
        Err(ToolError::Tool(text)) => text,
        other => panic!("{code:?}: expected a tool error, got {other:?}"),
    }
}

#[test]
fn spec_is_the_seeds() {
    let config = SandboxConfig {
        allow_unsandboxed: true,
        ..SandboxConfig::default()
    };
    let tool = PythonExecute::new(Sandbox::new(config).unwrap(), PythonConfig::default());
    let spec = tool.spec();
    assert_eq!(spec.name, "python_execute");
    assert_eq!(spec.description, texts::PYTHON_EXECUTE_DESCRIPTION);
    assert_eq!(
        serde_json::to_string(spec.parameters.as_ref().unwrap()).unwrap(),
        texts::PYTHON_EXECUTE_SCHEMA
    );
    // The tool's own limit leaves room for the cell budget and the interrupt grace.
    assert!(tool.timeout().unwrap() > Duration::from_secs(121));
}

#[tokio::test]
async fn without_a_workspace_it_refuses() {
    let config = SandboxConfig {
        allow_unsandboxed: true,
        ..SandboxConfig::default()
    };
    let tool = PythonExecute::new(Sandbox::new(config).unwrap(), PythonConfig::default());
    let got = tool
        .invoke(json!({"code": "1"}), ToolContext::default())
        .await;
    assert_eq!(got, Err(ToolError::new(texts::NO_WORKSPACE)));
}

#[tokio::test(flavor = "multi_thread")]
async fn state_persists_and_the_last_expression_is_the_value() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    assert_eq!(ok(&tool, &ctx, "x = 41").await, texts::PYTHON_NO_OUTPUT);
    assert_eq!(ok(&tool, &ctx, "x + 1").await, "42");
    assert_eq!(
        ok(
            &tool,
            &ctx,
            "import math\ndef area(r):\n    return math.pi * r * r"
        )
        .await,
        texts::PYTHON_NO_OUTPUT
    );
    assert_eq!(ok(&tool, &ctx, "round(area(2), 3)").await, "12.566");
    // A final expression of None shows nothing, like a notebook; `_` holds the last value.
    assert_eq!(ok(&tool, &ctx, "print('hi')").await, "hi");
    assert_eq!(ok(&tool, &ctx, "_").await, "12.566");
    // The working directory is the workspace.
    assert_eq!(
        ok(&tool, &ctx, "import os; os.getcwd()").await,
        "'/workspace'"
    );
    assert_eq!(tool.live_sessions(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_stderr_and_subprocess_output_are_captured() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let code = "import os, subprocess, sys\n\
                print('from print')\n\
                print('to stderr', file=sys.stderr)\n\
                os.system('echo from-shell')\n\
                subprocess.run(['sh', '-c', 'echo sub-err >&2'])\n\
                os.write(1, b'raw fd write\\n')\n\
                'value'";
    let out = ok(&tool, &ctx, code).await;
    let pos = |needle: &str| {
        out.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from {out:?}"))
    };
    // stdout (in order), then stderr, then the value.
    assert!(pos("from print") < pos("from-shell"));
    assert!(pos("from-shell") < pos("raw fd write"));
    assert!(pos("raw fd write") < pos("to stderr"));
    assert!(pos("to stderr") < pos("sub-err"));
    assert!(out.ends_with("'value'"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exception_is_a_tool_error_with_the_traceback_and_state_is_kept() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "x = 5").await;
    let err = tool_error(
        &tool,
        &ctx,
        "print('before')\ndef f():\n    return 1 / 0\nf()",
    )
    .await;
    assert!(err.starts_with("before\nTraceback"), "{err}");
    assert!(err.contains("line 3, in f"), "{err}");
    assert!(err.contains("return 1 / 0"), "{err}");
    assert!(err.contains("ZeroDivisionError: division by zero"), "{err}");
    assert!(!err.contains("<string>"), "driver frames leak: {err}");
    let syntax = tool_error(&tool, &ctx, "if x\n    pass").await;
    assert!(syntax.contains("SyntaxError"), "{syntax}");
    assert_eq!(ok(&tool, &ctx, "x").await, "5");
}

/// Cancels `code` after `after`; returns the result and how long it took to come back after the
/// cancellation.
async fn cancelled(
    tool: &PythonExecute,
    ctx: &ToolContext,
    code: &str,
    after: Duration,
) -> (Result<String, ToolError>, Duration) {
    let cancel = CancellationToken::new();
    let call_ctx = ToolContext {
        cancel: cancel.clone(),
        ..ctx.clone()
    };
    let call = tool.invoke(json!({ "code": code }), call_ctx);
    let handle = tokio::spawn(call);
    tokio::time::sleep(after).await;
    let at = Instant::now();
    cancel.cancel();
    let result = handle.await.unwrap();
    (result, at.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_stops_a_busy_cell_quickly_and_keeps_state() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "kept = 'yes'").await;
    for code in ["import time\ntime.sleep(60)", "while True:\n    pass"] {
        let (result, latency) = cancelled(&tool, &ctx, code, Duration::from_millis(700)).await;
        eprintln!("interrupt latency for {code:?}: {latency:?}");
        assert!(latency < Duration::from_secs(3), "{latency:?}");
        match result {
            Err(ToolError::Tool(text)) => assert!(text.contains("KeyboardInterrupt"), "{text}"),
            other => panic!("expected an interrupted cell, got {other:?}"),
        }
        assert_eq!(ok(&tool, &ctx, "kept").await, "'yes'");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cell_over_its_time_budget_is_interrupted_and_state_is_kept() {
    let config = PythonConfig {
        cell_timeout_secs: 1,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "n = 0").await;
    let started = Instant::now();
    let err = tool_error(
        &tool,
        &ctx,
        "import time\nwhile True:\n    n += 1\n    time.sleep(0.01)",
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(err.contains("KeyboardInterrupt"), "{err}");
    assert!(err.ends_with(&texts::python_cell_timeout(1)), "{err}");
    let n: u64 = ok(&tool, &ctx, "n").await.parse().unwrap();
    assert!(n > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_interpreter_is_killed_and_restarted_with_the_state_lost_notice() {
    let config = PythonConfig {
        cell_timeout_secs: 1,
        interrupt_grace_ms: 500,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "x = 1").await;
    let started = Instant::now();
    let err = tool_error(
        &tool,
        &ctx,
        "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\ntime.sleep(60)",
    )
    .await;
    eprintln!("hang detected and restarted in {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(6));
    assert_eq!(err, texts::PYTHON_STATE_LOST);
    // A fresh interpreter: earlier variables are gone, new code runs.
    assert_eq!(ok(&tool, &ctx, "'x' in globals()").await, "False");
    assert_eq!(ok(&tool, &ctx, "1 + 1").await, "2");
    // Interrupts work again in the fresh one.
    let (result, latency) =
        cancelled(&tool, &ctx, "while True: pass", Duration::from_millis(300)).await;
    assert!(latency < Duration::from_secs(3));
    assert!(matches!(result, Err(ToolError::Tool(t)) if t.contains("KeyboardInterrupt")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_restarts_the_interpreter_with_a_notice() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "x = 1").await;
    let err = tool_error(&tool, &ctx, "import ctypes\nctypes.string_at(0)").await;
    assert_eq!(err, render::crashed(None, &test_limits()));
    assert_eq!(ok(&tool, &ctx, "'x' in globals()").await, "False");
    let err = tool_error(&tool, &ctx, "import os\nos._exit(3)").await;
    assert!(err.starts_with("The Python session stopped"), "{err}");
    assert_eq!(ok(&tool, &ctx, "2 * 21").await, "42");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_limit_is_reported_and_state_kept() {
    let limits = Limits {
        memory_mb: 256,
        ..test_limits()
    };
    let Some(tool) = tool_with(limits, PythonConfig::default()) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "small = list(range(10))").await;
    let err = tool_error(&tool, &ctx, "big = bytearray(1024 * 1024 * 1024)").await;
    assert!(err.contains("MemoryError"), "{err}");
    assert!(err.ends_with(&texts::python_memory_limit(256)), "{err}");
    assert_eq!(ok(&tool, &ctx, "len(small)").await, "10");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_size_limit_is_reported() {
    let limits = Limits {
        file_size_mb: 1,
        ..test_limits()
    };
    let Some(tool) = tool_with(limits, PythonConfig::default()) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let err = tool_error(
        &tool,
        &ctx,
        "with open('/workspace/outputs/big.bin', 'wb') as f:\n    f.write(b'x' * (3 * 1024 * 1024))",
    )
    .await;
    assert!(err.contains("File too large"), "{err}");
    assert!(err.contains(&texts::python_file_size_limit(1)), "{err}");
    assert_eq!(ok(&tool, &ctx, "1").await, "1");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_cell_gets_its_own_cpu_budget() {
    let limits = Limits {
        cpu_secs: 1,
        ..test_limits()
    };
    let Some(tool) = tool_with(limits, PythonConfig::default()) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "x = 3").await;
    // Twice: with a cumulative limit the second loop would kill the interpreter at once.
    for _ in 0..2 {
        let started = Instant::now();
        let err = tool_error(&tool, &ctx, "while True:\n    pass").await;
        eprintln!("CPU limit hit after {:?}", started.elapsed());
        assert!(err.contains("CPUTimeLimitExceeded"), "{err}");
        assert!(err.contains(&texts::python_cpu_limit(1)), "{err}");
        assert_eq!(ok(&tool, &ctx, "x").await, "3");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_capped_keeping_head_and_tail() {
    let config = PythonConfig {
        max_output_bytes: 1000,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let out = ok(&tool, &ctx, "print('START' + 'a' * 100000)\nprint('END')").await;
    let omitted = 100_000 + 5 + 1 + 4 - 1000;
    let note = texts::PYTHON_OUTPUT_OMITTED.replace("<BYTES>", &omitted.to_string());
    assert!(out.starts_with("STARTaaa"), "{out}");
    assert!(out.ends_with("aaaa\nEND"), "{out}");
    assert!(out.contains(note.trim()), "{out}");
    assert!(out.len() < 1200, "{}", out.len());
    // The value is capped too.
    let value = ok(&tool, &ctx, "'b' * 50000").await;
    assert!(value.len() < 1200, "{}", value.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn two_conversations_are_isolated() {
    let Some(tool) = tool() else { return };
    let ws_a = tempfile::tempdir().unwrap();
    let ws_b = tempfile::tempdir().unwrap();
    let a = context(ws_a.path(), "conversation-a");
    let b = context(ws_b.path(), "conversation-b");
    ok(
        &tool,
        &a,
        "secret = 'A'\nopen('/workspace/outputs/a.txt', 'w').write('A')",
    )
    .await;
    assert_eq!(ok(&tool, &b, "'secret' in globals()").await, "False");
    assert_eq!(
        ok(
            &tool,
            &b,
            "import os\nos.path.exists('/workspace/outputs/a.txt')"
        )
        .await,
        "False"
    );
    assert_eq!(ok(&tool, &a, "secret").await, "'A'");
    assert!(ws_a.path().join("outputs/a.txt").exists());
    assert!(!ws_b.path().join("outputs/a.txt").exists());
    assert_eq!(tool.live_sessions(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn files_written_to_outputs_are_listed() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let out = ok(
        &tool,
        &ctx,
        "open('/workspace/outputs/report.txt', 'w').write('x' * 12345)",
    )
    .await;
    assert_eq!(
        out,
        format!(
            "12345\n{}",
            texts::python_files_written(&[("outputs/report.txt".into(), 12345)])
        )
    );
    assert_eq!(
        std::fs::metadata(ws.path().join("outputs/report.txt"))
            .unwrap()
            .len(),
        12345
    );
    // Unchanged files are not listed again; files outside outputs/ are not listed.
    assert_eq!(
        ok(
            &tool,
            &ctx,
            "open('/workspace/scratch.txt', 'w').write('s')"
        )
        .await,
        "1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_interpreters_are_reaped_and_the_next_call_says_so() {
    let config = PythonConfig {
        idle_secs: 1,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "x = 1").await;
    assert_eq!(tool.live_sessions(), 1);
    // The background reaper closes it without any further call.
    let deadline = Instant::now() + Duration::from_secs(5);
    while tool.live_sessions() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(tool.live_sessions(), 0);
    let err = tool_error(&tool, &ctx, "x").await;
    assert!(err.starts_with(&texts::python_session_expired(1)), "{err}");
    assert!(err.contains("NameError: name 'x' is not defined"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_tool_kills_its_interpreters() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "1").await;
    let workspace = std::fs::canonicalize(ws.path()).unwrap();
    assert!(
        processes_in(&workspace) > 0,
        "the interpreter should be found by its workspace"
    );
    drop(tool);
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_in(&workspace) > 0 {
        assert!(
            Instant::now() < deadline,
            "the interpreter outlived the tool"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Processes whose command line names `workspace` (bubblewrap binds it) or that run in it.
fn processes_in(workspace: &Path) -> usize {
    let needle = workspace.to_string_lossy().into_owned();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| p.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|p| {
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cwd = std::fs::read_link(p.path().join("cwd")).ok();
            String::from_utf8_lossy(&cmdline).contains(&needle)
                || cwd.is_some_and(|c| c == workspace)
        })
        .count()
}

/// Under the Landlock fallback the workspace keeps its host path: `/workspace` in the code is
/// rewritten to it and the host path in the output back.
#[tokio::test(flavor = "multi_thread")]
async fn landlock_fallback_maps_workspace_paths() {
    let config = SandboxConfig {
        backend: BackendChoice::Landlock,
        limits: test_limits(),
        ..SandboxConfig::default()
    };
    let sandbox = match Sandbox::new(config) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            eprintln!("skipped: Landlock is not available here: {e}");
            return;
        }
    };
    let tool = PythonExecute::new(sandbox, PythonConfig::default());
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let out = ok(
        &tool,
        &ctx,
        "import os\nopen('/workspace/outputs/x.txt', 'w').write('hi')\nos.path.realpath('/workspace/outputs/x.txt')",
    )
    .await;
    assert_eq!(
        out,
        format!(
            "'/workspace/outputs/x.txt'\n{}",
            texts::python_files_written(&[("outputs/x.txt".into(), 2)])
        )
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("outputs/x.txt")).unwrap(),
        "hi"
    );
    assert_eq!(ok(&tool, &ctx, "os.getcwd()").await, "'/workspace'");
}

/// Through the toolbox: its timeout aborts the call, yet the cell is still interrupted (the tool
/// works in a task of its own) and the next call finds the state.
#[tokio::test(flavor = "multi_thread")]
async fn a_toolbox_timeout_interrupts_the_cell_and_keeps_state() {
    use toolbridge_agent::approval::{Approvals, DenyAll};
    use toolbridge_agent::{CallStatus, Toolbox, ToolboxConfig};
    use toolbridge_protocol::types::ToolCall;

    let Some(tool) = tool() else { return };
    let toolbox = Toolbox::new(ToolboxConfig::default()).with(tool).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let approvals = Approvals::default();
    let call = |id: &str, code: &str| ToolCall {
        id: id.into(),
        name: "python_execute".into(),
        arguments: json!({ "code": code }).to_string(),
    };
    let long = Duration::from_secs(30);
    let r = toolbox
        .execute(&call("1", "y = 9"), &ctx, &approvals, &DenyAll, long)
        .await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    let started = Instant::now();
    let r = toolbox
        .execute(
            &call("2", "import time\ntime.sleep(60)"),
            &ctx,
            &approvals,
            &DenyAll,
            Duration::from_secs(1),
        )
        .await;
    // The tool interrupts the cell before the toolbox's limit, so its own text (state kept) wins
    // over the toolbox's generic timeout.
    assert_eq!(r.status, CallStatus::ToolError, "{}", r.for_model);
    assert!(
        r.for_model.contains(&texts::python_cell_timeout(1)),
        "{}",
        r.for_model
    );
    let r = toolbox
        .execute(&call("3", "y"), &ctx, &approvals, &DenyAll, long)
        .await;
    assert_eq!((r.status, r.for_model.as_str()), (CallStatus::Ok, "9"));
    assert!(started.elapsed() < Duration::from_secs(4));
}
