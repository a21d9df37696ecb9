//! `-v/--verbose` and `RUST_LOG` on `run`: the detail of a sanitized tool failure reaches stderr
//! (never stdout) when asked for, and only then (issue 13, item 23).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{py_server, python, temp_dir};

/// A folder whose configuration starts the Python MCP test server and whose scripted model
/// calls its `crash` tool (the server exits mid-call: an internal failure the model only sees
/// sanitized), then answers.
fn crash_setup(tag: &str) -> PathBuf {
    let d = temp_dir("logging", tag);
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            "[[mcp_servers]]\nname = \"py\"\ncommand = {:?}\nargs = [{:?}]\nstart_timeout_secs = 60\n# The crash tool is not annotated read-only: without this it would need approval.\napproval = \"never\"\n",
            python(),
            py_server().display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("script.json"),
        r#"{"replies": [{"tool_calls": [{"name": "mcp__py__crash", "arguments": {}}]}, "Done."]}"#,
    )
    .unwrap();
    d
}

fn run(dir: &Path, extra: &[&str], rust_log: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolbridge"));
    cmd.args(["run", "crash it", "--model", "scripted:script.json"])
        .args(extra)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG");
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const DETAIL: &str = "failed during tools/call crash";

#[test]
fn verbose_shows_the_detail_of_an_internal_tool_failure_on_stderr() {
    let d = crash_setup("verbose");
    let (code, out, err) = run(&d, &[], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Done.");
    assert!(!err.contains(DETAIL), "no log without -v: {err}");

    let (code, out, err) = run(&d, &["-v"], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Done.", "logs never go to stdout");
    assert!(
        err.contains("tool failed internally") && err.contains(DETAIL),
        "-v shows the detail: {err}"
    );
    // Info level: the MCP server's start is logged, its stderr (debug) is not.
    assert!(err.contains("MCP server started"), "{err}");

    let (_, out, err) = run(&d, &["--verbose", "--verbose"], None);
    assert_eq!(out.trim(), "Done.");
    assert!(err.contains(DETAIL) && err.contains("DEBUG"), "{err}");
}

#[test]
fn rust_log_is_honoured_without_verbose() {
    let d = crash_setup("rust-log");
    let (code, out, err) = run(&d, &[], Some("toolbridge_agent=error"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Done.");
    assert!(err.contains(DETAIL), "{err}");
    assert!(
        !err.contains("MCP server started"),
        "the filter is RUST_LOG's: {err}"
    );
}
