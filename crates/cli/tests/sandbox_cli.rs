//! `toolbridge sandbox check`, driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::toolbridge;
use std::path::PathBuf;

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("sandbox-cli", name)
}

#[test]
fn check_fails_when_the_configured_backend_does_not_work() {
    let dir = temp_dir("bad");
    let config = dir.join("toolbridge.toml");
    std::fs::write(
        &config,
        "[tools.sandbox]\nbackend = \"bubblewrap\"\nbwrap = \"/nonexistent/bwrap\"\n",
    )
    .unwrap();
    let (code, out, _) = toolbridge(
        &["sandbox", "check", "--config", config.to_str().unwrap()],
        &dir,
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("-- bubblewrap"), "{out}");
    assert!(out.contains("apt-get install bubblewrap"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_reports_the_machine() {
    let dir = temp_dir("machine");
    let (code, out, _) = toolbridge(&["sandbox", "check"], &dir);
    for label in [
        "bubblewrap",
        "landlock",
        "seccomp",
        "backend \"auto\"",
        "configured",
        "python",
    ] {
        assert!(out.contains(label), "no {label} line:\n{out}");
    }
    if out.contains("ok configured") {
        assert_eq!(code, 0, "{out}");
    } else {
        eprintln!("skipped: no isolation on this machine:\n{out}");
        assert_eq!(code, 1, "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
