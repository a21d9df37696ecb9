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
    error_of(tool, ctx, code).await.0
}

/// A tool error's text and whether it is transient (a repeat of the call runs again).
async fn error_of(tool: &PythonExecute, ctx: &ToolContext, code: &str) -> (String, bool) {
    match run(tool, ctx, code).await {
        Err(ToolError::Tool(text)) => (text, false),
        Err(ToolError::Transient(text)) => (text, true),
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
    let (err, transient) = error_of(
        &tool,
        &ctx,
        "import time\nwhile True:\n    n += 1\n    time.sleep(0.01)",
    )
    .await;
    // A timed-out cell may finish when tried again: a repeat runs instead of being skipped.
    assert!(transient, "{err}");
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

/// Lone surrogates in output, values and tracebacks reach the model escaped, instead of making
/// the reply unreadable (which used to stall until the budget and lose the state).
#[tokio::test(flavor = "multi_thread")]
async fn lone_surrogates_do_not_break_the_reply() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(
        &tool,
        &ctx,
        "kept = 1\nbad = b'\\xff'.decode('utf-8', 'surrogateescape')",
    )
    .await;
    let started = Instant::now();
    let (err, transient) = error_of(&tool, &ctx, "raise ValueError('bad ' + bad)").await;
    // An exception is final: the same cell fails the same way again.
    assert!(!transient, "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(err.contains("ValueError: bad \\udcff"), "{err}");
    assert_eq!(ok(&tool, &ctx, "bad").await, "'\\udcff'");
    let out = ok(&tool, &ctx, "print('p' + bad)\n'v' + bad").await;
    assert!(out.contains('p') && out.ends_with("'v\\udcff'"), "{out}");
    assert_eq!(ok(&tool, &ctx, "kept").await, "1");
}

/// Finds the driver's reply pipe (`reply_fd`) from its frames.
const REPLY_FD: &str = "import os, sys\nf = sys._getframe()\nwhile '_proto_out' not in f.f_globals:\n    f = f.f_back\nreply_fd = f.f_globals['_proto_out'].fileno()\ndel f\nassert reply_fd >= 10, reply_fd";

/// Garbage on the reply pipe (a huge line, or a stray `{`) restarts the interpreter at once with
/// a notice, and the host does not buffer without bound.
#[tokio::test(flavor = "multi_thread")]
async fn writing_to_the_reply_channel_restarts_with_a_notice() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, REPLY_FD).await;
    let started = Instant::now();
    let err = tool_error(
        &tool,
        &ctx,
        "for _ in range(400):\n    os.write(reply_fd, b'x' * (1 << 20))",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err, texts::PYTHON_PROTOCOL_ERROR);
    assert_eq!(ok(&tool, &ctx, "1 + 1").await, "2");
    ok(&tool, &ctx, REPLY_FD).await;
    let started = Instant::now();
    let err = tool_error(&tool, &ctx, "os.write(reply_fd, b'{')").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(err, texts::PYTHON_PROTOCOL_ERROR);
    assert_eq!(ok(&tool, &ctx, "'reply_fd' in globals()").await, "False");
}

/// Writes to small fds (where the reply pipe used to be) do not reach the protocol.
#[tokio::test(flavor = "multi_thread")]
async fn stray_writes_to_small_fds_do_not_desynchronise_replies() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let code = "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'{')\n    except OSError:\n        pass\n'done'";
    assert!(ok(&tool, &ctx, code).await.ends_with("'done'"));
    assert_eq!(ok(&tool, &ctx, "6 * 7").await, "42");
    assert_eq!(ok(&tool, &ctx, "fd").await, "63");
}

#[tokio::test(flavor = "multi_thread")]
async fn tracebacks_are_capped_keeping_the_tail() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let err = tool_error(&tool, &ctx, "raise ValueError('x' * 3_000_000 + ' END')").await;
    assert!(err.len() < 110_000, "{}", err.len());
    assert!(err.ends_with("xxx END"), "{}", &err[err.len() - 100..]);
    let note = texts::PYTHON_OUTPUT_OMITTED
        .split("<BYTES>")
        .nth(1)
        .unwrap();
    assert!(err.contains(note.trim()), "{}", &err[..200]);
}

/// A slow `repr` of the value runs as part of the cell: the interrupt stops it, state kept.
#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_repr_can_be_interrupted() {
    let config = PythonConfig {
        cell_timeout_secs: 1,
        interrupt_grace_ms: 1000,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "kept = 'yes'").await;
    let err = tool_error(
        &tool,
        &ctx,
        "class A:\n    def __repr__(self):\n        while True:\n            pass\nA()",
    )
    .await;
    assert!(err.contains("KeyboardInterrupt"), "{err}");
    assert!(err.ends_with(&texts::python_cell_timeout(1)), "{err}");
    // The same for an exception whose message never comes.
    let err = tool_error(
        &tool,
        &ctx,
        "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise E()",
    )
    .await;
    assert!(err.ends_with(&texts::python_cell_timeout(1)), "{err}");
    assert_eq!(ok(&tool, &ctx, "kept").await, "'yes'");
}

/// A forked child of a cell does not answer for the cell: the parent's output and value come back.
#[tokio::test(flavor = "multi_thread")]
async fn a_forked_child_does_not_answer_for_the_cell() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(&tool, &ctx, "kept = 'yes'").await;
    let out = ok(
        &tool,
        &ctx,
        "import os\npid = os.fork()\nif pid == 0:\n    print('in child')\nelse:\n    os.waitpid(pid, 0)\n    print('in parent')\n'parent' if pid else 'child'",
    )
    .await;
    assert!(out.contains("in child"), "{out}");
    assert!(out.contains("in parent"), "{out}");
    assert!(out.ends_with("'parent'"), "{out}");
    assert_eq!(ok(&tool, &ctx, "kept").await, "'yes'");
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_sys_stdout_or_stderr_does_not_break_later_cells() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    ok(
        &tool,
        &ctx,
        "import sys\nsys.stdout.close()\nsys.stderr.close()",
    )
    .await;
    assert_eq!(ok(&tool, &ctx, "print('hello')").await, "hello");
    assert_eq!(
        ok(&tool, &ctx, "print('warn', file=sys.stderr)").await,
        "warn"
    );
}

/// A cell that finishes (here: it swallows the interrupt) is a result, not a timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_cell_that_finishes_after_the_budget_is_not_a_timeout() {
    let config = PythonConfig {
        cell_timeout_secs: 1,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let out = ok(
        &tool,
        &ctx,
        "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    pass\n'finished'",
    )
    .await;
    assert_eq!(out, "'finished'");
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| p.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|p| {
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .count()
}

/// Under Landlock (no PID namespace) a background process of a dead interpreter is killed with
/// its process group.
#[tokio::test(flavor = "multi_thread")]
async fn background_processes_die_with_a_dead_interpreter() {
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
    let marker = format!("{}.{}", 7000 + std::process::id() % 1000, 31337);
    ok(
        &tool,
        &ctx,
        &format!("import subprocess\np = subprocess.Popen(['sleep', '{marker}'])"),
    )
    .await;
    assert_eq!(processes_with(&marker), 1);
    let err = tool_error(&tool, &ctx, "import os\nos._exit(3)").await;
    assert!(err.starts_with("The Python session stopped"), "{err}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&marker) > 0 {
        assert!(
            Instant::now() < deadline,
            "the background process outlived the interpreter"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reaper leaves alone a slot a call has taken but not locked yet.
#[tokio::test]
async fn the_reaper_keeps_a_slot_held_by_a_call() {
    use toolbridge_tools::python::pool::{Caps, Pool};
    let pool: Pool<()> = Pool::new(Caps {
        global: 2,
        per_user: 1,
    });
    let key = ("tester".to_owned(), "c1".to_owned());
    let held = pool.slot(key.clone());
    {
        let mut slot = held.lock().await;
        let Some(long_ago) = Instant::now().checked_sub(Duration::from_secs(48 * 3600)) else {
            eprintln!("skipped: the clock is too young");
            return;
        };
        slot.last_used = long_ago;
        slot.expired = true;
    }
    pool.reap(Duration::from_secs(1));
    assert!(std::sync::Arc::ptr_eq(&held, &pool.slot(key.clone())));
    // Once nobody holds it, it is forgotten.
    drop(held);
    let fresh = pool.slot(key.clone());
    drop(fresh);
    pool.reap(Duration::from_secs(1));
    assert!(!pool.slot(key).try_lock().unwrap().expired);
}

/// A second run (`run --conversation ID` again: another process, so a new tool) in a workspace
/// whose interpreter is gone says so once, on its first result.
#[tokio::test]
async fn a_new_session_in_a_workspace_that_had_one_says_the_state_is_gone() {
    let Some(first) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    assert_eq!(ok(&first, &ctx, "x = 41").await, texts::PYTHON_NO_OUTPUT);
    drop(first);
    let second = tool().unwrap();
    let err = tool_error(&second, &ctx, "x").await;
    assert!(err.starts_with(texts::PYTHON_SESSION_NEW_PROCESS), "{err}");
    assert!(err.contains("NameError"), "{err}");
    // Only the first result of the new session carries it.
    assert_eq!(ok(&second, &ctx, "x = 1; x").await, "1");
    // A workspace that never had a session gets no note.
    let fresh = tempfile::tempdir().unwrap();
    let fresh_ctx = context(fresh.path(), "c2");
    assert_eq!(ok(&second, &fresh_ctx, "print('hi')").await, "hi");
}

/// With room for two interpreters (one per user), a third conversation closes the least recently
/// used idle one, whose next call says its state is gone; the count never passes the cap; and
/// when every interpreter is running a call, a new conversation is refused with a transient
/// error instead of starting one more.
#[tokio::test(flavor = "multi_thread")]
async fn the_cap_on_live_interpreters_evicts_the_idle_one_and_refuses_when_all_are_busy() {
    let config = PythonConfig {
        max_interpreters: 2,
        max_interpreters_per_user: 1,
        ..PythonConfig::default()
    };
    let Some(tool) = tool_with(test_limits(), config) else {
        return;
    };
    let tool = std::sync::Arc::new(tool);
    let (ws_a, ws_b, ws_c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let user = |ws: &Path, user: &str| ToolContext {
        user: user.into(),
        ..context(ws, user)
    };
    let (a, b, c) = (
        user(ws_a.path(), "ann"),
        user(ws_b.path(), "bob"),
        user(ws_c.path(), "cid"),
    );
    ok(&tool, &a, "x = 1").await;
    ok(&tool, &b, "y = 2").await;
    assert_eq!(tool.live_sessions(), 2);
    // a is now the least recently used: c takes its place.
    ok(&tool, &c, "z = 3").await;
    assert_eq!(tool.live_sessions(), 2);
    assert_eq!(ok(&tool, &b, "y").await, "2", "b was used more recently");
    let err = tool_error(&tool, &a, "x").await;
    assert!(err.starts_with(texts::PYTHON_SESSION_EVICTED), "{err}");
    assert!(err.contains("NameError"), "{err}");
    assert_eq!(tool.live_sessions(), 2);

    // a and b now run cells that wait for a file; c has no interpreter and must be refused.
    let wait = "import os, time\nwhile not os.path.exists('release'):\n    time.sleep(0.02)\n";
    let busy = |ctx: ToolContext| {
        let tool = std::sync::Arc::clone(&tool);
        tokio::spawn(async move { run(&tool, &ctx, wait).await })
    };
    let (a_busy, b_busy) = (busy(a.clone()), busy(b.clone()));
    wait_until_running(&tool, 2).await;
    match run(&tool, &c, "1").await {
        Err(ToolError::Overloaded(text)) => assert_eq!(text, texts::PYTHON_BUSY),
        other => panic!("expected the busy error, got {other:?}"),
    }
    assert_eq!(tool.live_sessions(), 2);
    for ws in [ws_a.path(), ws_b.path()] {
        std::fs::write(ws.join("release"), "").unwrap();
    }
    a_busy.await.unwrap().unwrap();
    b_busy.await.unwrap().unwrap();
    // With both idle again, c gets a place.
    ok(&tool, &c, "1").await;
    assert_eq!(tool.live_sessions(), 2);
}

/// Waits until `n` interpreters are running a call.
async fn wait_until_running(tool: &PythonExecute, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tool.busy_sessions() < n {
        assert!(Instant::now() < deadline, "the cells did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A cell whose children exit without being waited for (one of them orphaning a grandchild, which
/// the sandbox's PID 1 reaps) leaves no zombies behind: the next cell finds none among the
/// interpreter's children. Before, they stayed zombies as long as the interpreter lived.
#[tokio::test(flavor = "multi_thread")]
async fn children_a_cell_never_waited_for_do_not_stay_zombies() {
    let Some(tool) = tool() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(ws.path(), "c1");
    let fork = "import os, subprocess\n\
        pids = []\n\
        for _ in range(5):\n\
        \x20   pid = os.fork()\n\
        \x20   if pid == 0:\n\
        \x20       os._exit(0)\n\
        \x20   pids.append(pid)\n\
        pid = os.fork()\n\
        if pid == 0:\n\
        \x20   subprocess.Popen(['/bin/sleep', '0.2'])\n\
        \x20   os._exit(0)\n\
        pids.append(pid)\n\
        for pid in pids:\n\
        \x20   os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)\n\
        print(len(pids))\n";
    // Every child has exited (and is a zombie until someone waits for it) when the cell ends.
    assert_eq!(ok(&tool, &ctx, fork).await, "6");
    let count = "import os\n\
        def children():\n\
        \x20   out = []\n\
        \x20   for tid in os.listdir('/proc/self/task'):\n\
        \x20       out += open(f'/proc/self/task/{tid}/children').read().split()\n\
        \x20   return out\n\
        def zombie(pid):\n\
        \x20   try:\n\
        \x20       data = open(f'/proc/{pid}/stat').read()\n\
        \x20   except OSError:\n\
        \x20       return False\n\
        \x20   return data[data.rindex(')') + 2] == 'Z'\n\
        len([p for p in children() if zombie(p)])\n";
    assert_eq!(ok(&tool, &ctx, count).await, "0");
}

/// One conversation's cell that forks to the process limit and leaves its children running does
/// not break another conversation's next call: each sandbox has its own process budget. Before,
/// RLIMIT_NPROC counted every task of the sandbox uid, and the other call failed.
#[tokio::test(flavor = "multi_thread")]
async fn a_fork_bomb_in_one_conversation_leaves_the_others_working() {
    let limits = Limits {
        processes: 16,
        ..Limits::default()
    };
    let Some(tool) = tool_with(limits, PythonConfig::default()) else {
        return;
    };
    if let Some(reason) = tool.budgets_unavailable() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but sandboxes get no cgroup of their own here: {reason}"
        );
        eprintln!("skipped: no per-sandbox cgroups on this machine: {reason}");
        return;
    }
    let (ws_a, ws_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (context(ws_a.path(), "a"), context(ws_b.path(), "b"));
    ok(&tool, &b, "import subprocess").await;
    let bomb = "import os, signal\npids = []\ntry:\n    while len(pids) < 500:\n        pid = os.fork()\n        if pid == 0:\n            signal.pause()\n            os._exit(0)\n        pids.append(pid)\nexcept OSError:\n    pass\nlen(pids) < 500";
    assert_eq!(ok(&tool, &a, bomb).await, "True");
    assert_eq!(
        ok(&tool, &b, "subprocess.run(['/bin/true']).returncode").await,
        "0"
    );
}
