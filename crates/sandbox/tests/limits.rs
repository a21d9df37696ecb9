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
