//! Issue 39, item 1: a command whose standard output's reader has gone (`toolbridge workspaces
//! list | head -5`) ends quietly with exit status 0 — no panic, no error line — as `ls | head`
//! does (and ripgrep and fd: a reader that stopped reading has what it wanted).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{repo, script, temp_dir};

/// Runs `toolbridge ARGS` in `dir` with standard output a pipe whose read end is closed before
/// the program starts, so its first write meets EPIPE whatever the timing; exit code and stderr.
fn into_closed_pipe(args: &[&str], dir: &Path) -> (i32, String) {
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("TOOLBRIDGE_NO_PULL", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_printing_command_exits_quietly_into_a_closed_pipe() {
    let dir = temp_dir("pipe", "commands");
    let skills = repo().join("examples/demo/skills");
    let skills = skills.to_str().unwrap();
    let model = script(&dir, serde_json::json!(["An answer."]));
    std::fs::write(dir.join("calls.jsonl"), "{\"text\": \"hi\"}\n").unwrap();
    std::fs::write(dir.join("tools.json"), "[]").unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["workspaces", "list"],
        vec!["models"],
        vec!["models", "--json"],
        vec!["skills", "--skills", skills],
        vec!["tools", "--skills", skills],
        vec!["model", "list"],
        vec!["config", "check"],
        vec!["sandbox", "check"],
        vec!["memory", "list"],
        vec!["net", "check", "http://127.0.0.1/"],
        vec!["prompt", "--tools", "tools.json"],
        vec!["completions", "bash"],
        vec!["run", "--model", &model, "go"],
        vec!["run", "--json", "--model", &model, "go"],
    ];
    for args in commands {
        let (code, err) = into_closed_pipe(&args, &dir);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(code, 0, "{args:?} exits quietly: {err}");
    }
}

#[test]
fn parse_stops_quietly_when_its_reader_goes() {
    let dir = temp_dir("pipe", "parse");
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .arg("parse")
        .current_dir(&dir)
        .env("HOME", &dir)
        .stdin(std::fs::File::open(repo().join("Cargo.toml")).map_or(Stdio::null(), Stdio::from))
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}
