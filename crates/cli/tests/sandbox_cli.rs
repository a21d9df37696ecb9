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

/// As root under Landlock, workspaces in a folder uid 65534 cannot reach (like `/root`, mode
/// 700) make every python_execute call fail: `check` runs a real cell where the workspaces go,
/// so it says so and exits 1 instead of "ok".
#[test]
fn check_runs_a_real_cell_where_the_workspaces_go() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix_is_root() {
        eprintln!("skipped: needs root (sandboxed code then runs as uid 65534)");
        return;
    }
    let dir = temp_dir("root-home");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let config = dir.join("toolbridge.toml");
    std::fs::write(
        &config,
        format!(
            "[tools]\nenabled = [\"python_execute\"]\n[tools.workspaces]\nroot = \"{}\"\n[tools.sandbox]\nbackend = \"landlock\"\n",
            home.join("workspaces").display()
        ),
    )
    .unwrap();
    let (code, out, _) = toolbridge(
        &["sandbox", "check", "--config", config.to_str().unwrap()],
        &dir,
    );
    if !out.contains("ok configured") {
        eprintln!("skipped: no Landlock here:\n{out}");
        return;
    }
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("-- python_execute"), "{out}");
    assert!(out.contains("cannot reach this folder"), "{out}");
    // A reachable folder passes.
    let open = dir.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        &config,
        format!(
            "[tools.workspaces]\nroot = \"{}\"\n[tools.sandbox]\nbackend = \"landlock\"\n",
            open.join("workspaces").display()
        ),
    )
    .unwrap();
    let (code, out, _) = toolbridge(
        &["sandbox", "check", "--config", config.to_str().unwrap()],
        &dir,
    );
    assert!(out.contains("ok python_execute"), "{out}");
    assert_eq!(code, 0, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// As root under Landlock, a layout the sandboxed code cannot reach is refused when the tools
/// are set up, with a message saying what to change — not one "Tool execution failed" per call.
/// Here the data folder (and so the default workspaces) is below a mode-700 folder, as `/root`
/// is.
#[test]
fn tools_refuse_at_start_up_a_workspace_folder_the_sandbox_uid_cannot_reach() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix_is_root() {
        eprintln!("skipped: needs root (sandboxed code then runs as uid 65534)");
        return;
    }
    let dir = temp_dir("closed-data");
    let config = dir.join("toolbridge.toml");
    std::fs::write(
        &config,
        "[tools]\nenabled = [\"python_execute\"]\n[tools.sandbox]\nbackend = \"landlock\"\n",
    )
    .unwrap();
    let (_, check, _) = toolbridge(
        &["sandbox", "check", "--config", config.to_str().unwrap()],
        &dir,
    );
    if !check.contains("ok configured") {
        eprintln!("skipped: no Landlock here:\n{check}");
        return;
    }
    // `toolbridge` (tests/common) sets HOME=dir and XDG_DATA_HOME=dir/data: close dir.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, out, err) = toolbridge(&["tools", "--config", config.to_str().unwrap()], &dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("cannot reach it"), "{err}");
    assert!(
        err.contains("not searchable by other users (mode 700)"),
        "{err}"
    );
    assert!(err.contains("[tools.workspaces] root"), "{err}");
    // With the workspaces in a folder everyone can search, the same tools start.
    let open = dir.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        &config,
        format!(
            "[tools]\nenabled = [\"python_execute\"]\n[tools.workspaces]\nroot = \"{}\"\n[tools.sandbox]\nbackend = \"landlock\"\n",
            open.join("workspaces").display()
        ),
    )
    .unwrap();
    let (code, out, err) = toolbridge(&["tools", "--config", config.to_str().unwrap()], &dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("python_execute"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn rustix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}
