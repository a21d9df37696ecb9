//! Nothing a sandboxed command starts outlives it, however it detaches: `setsid … &` in a shell,
//! Python's `Popen(start_new_session=True)`, `os.fork()` + `os.setsid()`. Both when the command
//! ends by itself and when its process group is killed (a timeout), on every backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::*;
use toolbridge_sandbox::{Limits, ProcessGroup, RunSpec, Sandbox};

/// Shell that starts a detached writer appending to `outputs/after.log` forever.
const SETSID_SHELL: &str =
    "setsid bash -c 'while true; do date >> outputs/after.log; sleep 0.2; done' \
     >/dev/null 2>&1 </dev/null &";

const POPEN: &str = "import subprocess\n\
subprocess.Popen(['/bin/sh', '-c', 'while true; do date >> outputs/after.log; sleep 0.2; done'],\n\
    start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,\n\
    stderr=subprocess.DEVNULL)\n";

const FORK_SETSID: &str = r#"import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open('/dev/null', os.O_RDWR)
        for i in range(3):
            os.dup2(fd, i)
        while True:
            with open('outputs/after.log', 'a') as f:
                f.write('x\n')
            time.sleep(0.2)
    os._exit(0)
"#;

/// Waits (inside the sandbox) until the detached writer has written, so the test knows it ran.
const WAIT_FOR_LOG: &str =
    "i=0; while [ ! -s outputs/after.log ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done";

/// The three ways, each as (program, args) for the sandbox; `tail` is appended to the shell.
fn variants(sb: &Sandbox, tail: &str) -> Vec<(&'static str, std::path::PathBuf, Vec<String>)> {
    let py = sb.python().to_path_buf();
    let bash = std::path::PathBuf::from("/bin/bash");
    let py_wrap = |code: &str| {
        format!(
            "{} -c {} && {WAIT_FOR_LOG}{tail}",
            py.display(),
            shell_quote(code)
        )
    };
    vec![
        (
            "setsid in a shell",
            bash.clone(),
            vec!["-c".into(), format!("{SETSID_SHELL}\n{WAIT_FOR_LOG}{tail}")],
        ),
        (
            "Popen(start_new_session=True)",
            bash.clone(),
            vec!["-c".into(), py_wrap(POPEN)],
        ),
        (
            "os.fork() + os.setsid()",
            bash,
            vec!["-c".into(), py_wrap(FORK_SETSID)],
        ),
    ]
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn log_len(ws: &Path) -> u64 {
    std::fs::metadata(ws.join("outputs/after.log")).map_or(0, |m| m.len())
}

/// Asserts the writer had started and no longer writes.
async fn assert_writer_gone(ws: &Path, what: &str) {
    let before = log_len(ws);
    assert!(before > 0, "{what}: the detached writer never ran");
    // The writer appends every 0.2 s: alive, it would have written several lines by now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        log_len(ws),
        before,
        "{what}: a detached process kept writing after the command ended"
    );
}

/// The child, and its cgroup leaf (held to the end: dropping it would kill what the test wants
/// to see end by itself).
fn spawn(
    sb: &Sandbox,
    ws: &Path,
    program: &Path,
    args: &[String],
) -> (tokio::process::Child, Option<toolbridge_sandbox::Budget>) {
    let spec = RunSpec {
        workspace: ws,
        program,
        args,
        env: &[],
        limits: None,
    };
    let mut prepared = sb.command(&spec).unwrap();
    prepared
        .command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    (prepared.command.spawn().unwrap(), prepared.budget)
}

#[tokio::test]
async fn detached_processes_end_with_the_command() {
    each_backend(Limits::default(), |sb| async move {
        for (what, program, args) in variants(&sb, "") {
            let ws = workspace(&sb);
            let (child, _budget) = spawn(&sb, ws.path(), &program, &args);
            let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
                .await
                .expect("the command did not end")
                .unwrap();
            assert!(
                out.status.success(),
                "{what}: {} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert_writer_gone(ws.path(), &format!("{} / {what}", sb.isolation())).await;
        }
    })
    .await;
}

#[tokio::test]
async fn detached_processes_end_when_the_command_is_killed() {
    each_backend(Limits::default(), |sb| async move {
        // The command itself waits forever after detaching: it ends only by the kill.
        for (what, program, args) in variants(&sb, "\necho started >&2; sleep 1000") {
            let ws = workspace(&sb);
            let (mut child, _budget) = spawn(&sb, ws.path(), &program, &args);
            let group = ProcessGroup::of(&child);
            let mut stderr = child.stderr.take().unwrap();
            let mut seen = Vec::new();
            let started = tokio::time::timeout(Duration::from_secs(30), async {
                use tokio::io::AsyncReadExt;
                let mut buf = [0u8; 256];
                while !String::from_utf8_lossy(&seen).contains("started") {
                    let n = stderr.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    seen.extend_from_slice(&buf[..n]);
                }
            })
            .await;
            assert!(
                started.is_ok() && String::from_utf8_lossy(&seen).contains("started"),
                "{what}: {}",
                String::from_utf8_lossy(&seen)
            );
            group.kill();
            tokio::time::timeout(Duration::from_secs(30), child.wait())
                .await
                .expect("the killed command did not end")
                .unwrap();
            assert_writer_gone(ws.path(), &format!("{} / {what} (killed)", sb.isolation())).await;
        }
    })
    .await;
}
