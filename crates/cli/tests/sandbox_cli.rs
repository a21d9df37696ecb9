//! `toolbridge sandbox check`, driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tb-sandbox-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn toolbridge(args: &[&str], dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
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
    let (code, out) = toolbridge(
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
    let (code, out) = toolbridge(&["sandbox", "check"], &dir);
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
