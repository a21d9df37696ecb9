//! Each limit is hit, and `explain` names it. The host stays healthy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use toolbridge_sandbox::{explain, LimitHit, Limits};

fn limits(f: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    f(&mut l);
    l
}

#[tokio::test]
async fn memory_limit() {
    let lim = limits(|l| l.memory_mb = 256);
    each_backend(lim.clone(), |sb| async move {
        let ws = workspace(&sb);
        let out = python(
            &sb,
            ws.path(),
            "b = bytearray(2 * 1024**3)\nprint('ALLOCATED')",
        )
        .await;
        assert!(!out.stdout.contains("ALLOCATED"));
        assert_eq!(
            explain(&out.status, &out.stderr),
            Some(LimitHit::Memory),
            "{}",
            out.stderr
        );
    })
    .await;
}

#[tokio::test]
async fn cpu_limit() {
    let lim = limits(|l| l.cpu_secs = 1);
    each_backend(lim.clone(), |sb| async move {
        let ws = workspace(&sb);
        let start = std::time::Instant::now();
        let out = python(&sb, ws.path(), "while True:\n    pass\n").await;
        assert_eq!(
            explain(&out.status, &out.stderr),
            Some(LimitHit::Cpu),
            "{} {}",
            out.status,
            out.stderr
        );
        assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    })
    .await;
}

#[tokio::test]
async fn file_size_limit() {
    let lim = limits(|l| l.file_size_mb = 1);
    each_backend(lim.clone(), |sb| async move {
        let ws = workspace(&sb);
        let out = python(
            &sb,
            ws.path(),
            "open('outputs/big.bin', 'wb').write(b'x' * 10 * 1024**2)\nprint('WROTE')",
        )
        .await;
        assert!(!out.stdout.contains("WROTE"));
        assert_eq!(
            explain(&out.status, &out.stderr),
            Some(LimitHit::FileSize),
            "{} {}",
            out.status,
            out.stderr
        );
        let size = std::fs::metadata(ws.path().join("outputs/big.bin"))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(size <= 1024 * 1024, "{size} bytes written");
    })
    .await;
}

#[tokio::test]
async fn process_limit() {
    let lim = limits(|l| l.processes = 16);
    each_backend(lim.clone(), |sb| async move {
        let ws = workspace(&sb);
        // Children wait for the parent to kill them, so the fork loop really accumulates.
        let code = "import os, signal\npids = []\ntry:\n    while len(pids) < 500:\n        pid = os.fork()\n        if pid == 0:\n            signal.pause()\n            os._exit(0)\n        pids.append(pid)\nfinally:\n    print('FORKED', len(pids), flush=True)\n    for p in pids:\n        os.kill(p, signal.SIGKILL)\n        os.waitpid(p, 0)\n";
        let out = python(&sb, ws.path(), code).await;
        assert_eq!(explain(&out.status, &out.stderr), Some(LimitHit::Processes), "{} {}\n{}", out.status, out.stdout, out.stderr);
        let forked: usize = out.stdout.trim().trim_start_matches("FORKED ").parse().unwrap();
        assert!(forked < 500, "forked {forked}");
        eprintln!("forked {forked} before the limit");
        // The host can still start processes.
        assert!(std::process::Command::new("/bin/true").status().unwrap().success());
    })
    .await;
}

#[tokio::test]
async fn open_files_limit() {
    let lim = limits(|l| l.open_files = 64);
    each_backend(lim.clone(), |sb| async move {
        let ws = workspace(&sb);
        let code = "fs = [open(f'outputs/f{i}', 'w') for i in range(1000)]\nprint('OPENED')";
        let out = python(&sb, ws.path(), code).await;
        assert!(!out.stdout.contains("OPENED"));
        assert_eq!(
            explain(&out.status, &out.stderr),
            Some(LimitHit::OpenFiles),
            "{}",
            out.stderr
        );
    })
    .await;
}

#[tokio::test]
async fn per_run_limits_override_the_config() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let lim = limits(|l| l.open_files = 64);
        let out = python_limited(
            &sb,
            ws.path(),
            "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))",
            &lim,
        )
        .await;
        out.assert_ok();
        assert_eq!(out.stdout.trim(), "(64, 64)");
    })
    .await;
}

/// Whether `sb` gives each sandbox a cgroup of its own; without one the test is skipped with the
/// reason, except on CI (`CI=true`), where a missing prerequisite is a failure.
fn has_budgets(sb: &toolbridge_sandbox::Sandbox) -> bool {
    match sb.budgets_unavailable() {
        None => true,
        Some(reason) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but sandboxes get no cgroup of their own here: {reason}")
        }
        Some(reason) => {
            eprintln!("skipped: no per-sandbox cgroups on this machine: {reason}");
            false
        }
    }
}

/// Four children of one sandboxed process each touch 400 MB under `memory_mb = 512`: each fits
/// the per-process RLIMIT_AS, but the sandbox as a whole does not, so not all of them may hold
/// their memory at once, and the sandbox's cgroup never goes over the budget.
#[tokio::test]
async fn memory_budget_covers_every_process_of_the_sandbox() {
    let lim = limits(|l| l.memory_mb = 512);
    each_backend(lim.clone(), |sb| async move {
        if !has_budgets(&sb) {
            return;
        }
        let ws = workspace(&sb);
        let out = python(&sb, ws.path(), FORK_AND_TOUCH).await;
        eprintln!("{}: {} {}", sb.isolation(), out.stdout.trim(), out.status);
        let killed = out
            .stdout
            .split_whitespace()
            .skip_while(|w| *w != "KILLED")
            .nth(1)
            .and_then(|n| n.parse::<u32>().ok());
        // The parent itself may be the one the kernel picks; then there is no result line.
        assert!(
            killed.is_none_or(|k| k > 0),
            "all four children held 400 MB at once: {}",
            out.stdout
        );
        let peak = out
            .memory_peak
            .expect("a sandbox with a cgroup reports its peak");
        eprintln!("memory peak of the sandbox: {} MiB", peak >> 20);
        assert!(
            peak <= 512 << 20,
            "peak {peak} bytes over the 512 MiB budget"
        );
    })
    .await;
}

/// Forks four children that each fill 400 MB and wait to be released; reports how many got
/// there and how many were killed (SIGKILL) or refused (MemoryError) on the way.
const FORK_AND_TOUCH: &str = r#"
import os, select
ready_r, ready_w = os.pipe()
release_r, release_w = os.pipe()
pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r); os.close(release_w)
        try:
            block = b'x' * (400 * 1024 * 1024)
        except MemoryError:
            os._exit(3)
        os.write(ready_w, bytes([i]))
        os.read(release_r, 1)
        os._exit(0)
    pids.append(pid)
os.close(ready_w); os.close(release_r)
ready, ended = set(), {}
while len(ready | set(ended)) < 4:
    if select.select([ready_r], [], [], 0.05)[0]:
        ready.update(os.read(ready_r, 16))
    for i, pid in enumerate(pids):
        if i not in ended:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                ended[i] = status
os.close(release_w)
for i, pid in enumerate(pids):
    if i not in ended:
        ended[i] = os.waitpid(pid, 0)[1]
killed = sum(1 for s in ended.values() if os.WIFSIGNALED(s) or os.WEXITSTATUS(s) == 3)
print('READY', len(ready), 'KILLED', killed, flush=True)
"#;

/// A sandbox that forks up to its process limit leaves another sandbox (of the same sandbox
/// uid) its own: the other one's next forks succeed. RLIMIT_NPROC alone counts every task of the
/// uid on the host, so there the second sandbox's forks failed.
#[tokio::test]
async fn a_fork_bomb_in_one_sandbox_leaves_another_its_processes() {
    let lim = limits(|l| l.processes = 16);
    each_backend(lim.clone(), |sb| async move {
        if !has_budgets(&sb) {
            return;
        }
        let (ws_a, ws_b) = (workspace(&sb), workspace(&sb));
        // B starts first, then waits for a line before forking.
        let mut b = Interactive::start(&sb, ws_b.path(), FORK_EIGHT_ON_CUE).await;
        let mut a = Interactive::start(&sb, ws_a.path(), FORK_UNTIL_REFUSED).await;
        let full = a.line().await;
        assert!(full.starts_with("FULL"), "{full}");
        b.say().await;
        let b_said = b.line().await;
        assert_eq!(b_said, "FORKED 8", "{}: {b_said}", sb.isolation());
        a.say().await;
        assert!(a.line().await.starts_with("RELEASED"));
    })
    .await;
}

const FORK_EIGHT_ON_CUE: &str = r#"
import os, sys
sys.stdin.readline()
pids = []
try:
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
finally:
    for p in pids:
        os.waitpid(p, 0)
    print('FORKED', len(pids), flush=True)
"#;

const FORK_UNTIL_REFUSED: &str = r#"
import os, signal, sys
pids = []
try:
    while len(pids) < 500:
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        pids.append(pid)
except OSError:
    pass
print('FULL', len(pids), flush=True)
sys.stdin.readline()
for p in pids:
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print('RELEASED', flush=True)
"#;

/// A sandboxed Python reading cues on stdin and answering in lines.
struct Interactive {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    _budget: Option<toolbridge_sandbox::Budget>,
}

impl Interactive {
    async fn start(sb: &toolbridge_sandbox::Sandbox, ws: &std::path::Path, code: &str) -> Self {
        use tokio::io::AsyncBufReadExt;
        let args = vec!["-c".to_owned(), code.to_owned()];
        let spec = toolbridge_sandbox::RunSpec {
            workspace: ws,
            program: sb.python(),
            args: &args,
            env: &[],
            limits: None,
        };
        let mut prepared = sb.command(&spec).unwrap();
        prepared
            .command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit());
        let mut child = prepared.command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Interactive {
            child,
            stdin,
            stdout,
            _budget: prepared.budget,
        }
    }

    async fn line(&mut self) -> String {
        let line =
            tokio::time::timeout(std::time::Duration::from_secs(30), self.stdout.next_line())
                .await
                .expect("no line within 30 s")
                .unwrap();
        line.unwrap_or_else(|| format!("(ended: {:?})", self.child.try_wait()))
    }

    async fn say(&mut self) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(b"go\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }
}
