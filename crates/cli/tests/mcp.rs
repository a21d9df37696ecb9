//! MCP servers on the command line: `[[mcp_servers]]` and `--mcp`, `toolbridge tools` with the
//! server column, and a `run` that calls an MCP tool (the Python SDK test server of crates/mcp).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{exit_and_text, py_server, python};

fn flag() -> String {
    format!("py={} {}", python(), py_server().display())
}

fn toolbridge(args: &[&str], dir: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    exit_and_text(out)
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tb-cli-mcp-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn tools_lists_mcp_tools_with_their_server_and_warns_about_failures() {
    let dir = scratch("tools");
    let (code, out, err) = toolbridge(
        &[
            "tools",
            "--mcp",
            &flag(),
            "--mcp",
            "broken=/nonexistent/mcp-server",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    let add = out
        .lines()
        .find(|l| l.starts_with("mcp__py__add "))
        .unwrap();
    let columns: Vec<&str> = add.split_whitespace().collect();
    assert_eq!(&columns[..2], ["mcp__py__add", "py"]);
    assert!(
        err.contains("warning: MCP server `broken` did not start"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_run_calls_an_mcp_tool_from_the_config_file() {
    let dir = scratch("run");
    std::fs::write(
        dir.join("toolbridge.toml"),
        format!(
            "[[mcp_servers]]\nname = \"py\"\ncommand = {:?}\nargs = [{:?}]\ncall_timeout_secs = 20\n",
            python(),
            py_server().display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("script.json"),
        r#"{"replies": [{"tool_calls": [{"name": "mcp__py__add", "arguments": {"a": 40, "b": 2}}]}, "It is 42."]}"#,
    )
    .unwrap();
    let (code, out, err) = toolbridge(
        &[
            "run",
            "add them",
            "--model",
            "scripted:script.json",
            "--transcript",
            "t.json",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("It is 42."), "{out}");
    let transcript = std::fs::read_to_string(dir.join("t.json")).unwrap();
    assert!(transcript.contains("\"42\""), "{transcript}");
    // A typo under [[mcp_servers]] is an error, like everywhere in the file.
    std::fs::write(
        dir.join("toolbridge.toml"),
        "[[mcp_servers]]\nname = \"py\"\ncomand = \"x\"\n",
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["tools"], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("unknown field `comand`"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
