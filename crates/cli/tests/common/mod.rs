//! Running the `toolbridge` binary as a user would, isolated from this machine's configuration
//! and data: HOME and XDG_DATA_HOME point into the test's own folder.
#![allow(dead_code, clippy::unwrap_used)]

pub mod pty;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `toolbridge ARGS` in `dir`; exit code, stdout, stderr.
pub fn toolbridge(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    exit_and_text(out)
}

/// A finished process's exit code (-1 when a signal ended it), stdout and stderr.
pub fn exit_and_text(out: Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs `cmd` with `input` on its stdin (closed after it) and its stdout and stderr captured.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The repository's root folder.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes a scripted model's replies to `<dir>/script.json`; the `--model` value that plays them.
pub fn script(dir: &Path, replies: serde_json::Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, serde_json::json!({"replies": replies}).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

/// `toolbridge run --model MODEL --skills examples/demo/skills EXTRA… go` in `dir`.
pub fn run_with_demo_skills(model: &str, extra: &[&str], dir: &Path) -> (i32, String, String) {
    let skills = repo().join("examples/demo/skills");
    let mut args = vec![
        "run",
        "--model",
        model,
        "--skills",
        skills.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("go");
    toolbridge(&args, dir)
}

/// The Python that runs the MCP test server (set by scripts/test.sh).
pub fn python() -> String {
    std::env::var("TOOLBRIDGE_MCP_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_MCP_PYTHON is not set: run the tests through scripts/test.sh")
    })
}

/// The Python SDK test server of crates/mcp.
pub fn py_server() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/py_server.py")
}

/// A fresh, empty folder `<base>/tb-<tag>-<name>-<pid>`.
pub fn fresh_dir(base: &Path, tag: &str, name: &str) -> PathBuf {
    let d = base.join(format!("tb-{tag}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A fresh, empty folder under the system's temporary folder.
pub fn temp_dir(tag: &str, name: &str) -> PathBuf {
    fresh_dir(&std::env::temp_dir(), tag, name)
}
