//! `run_in_terminal` and the approval policy from the command line: `[tools] enabled`,
//! `[tools.terminal]`, `[agent.approvals.risk]` and `--approve-risk`, on a scripted model, without a
//! terminal to ask (so anything that asks is denied).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::toolbridge;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn temp_dir(name: &str) -> PathBuf {
    common::fresh_dir(Path::new("/var/tmp"), "terminal-cli", name)
}

/// Runs a scripted conversation that calls `run_in_terminal` with each command in turn; the
/// statuses of the calls, or `None` (after saying why) when this machine has no sandbox.
fn statuses(
    name: &str,
    commands: &[(&str, &str)],
    extra: &[&str],
    config: &str,
) -> Option<Vec<String>> {
    let d = temp_dir(name);
    let mut replies: Vec<Value> = commands
        .iter()
        .map(|(command, risk)| json!({"tool_calls": [{"name": "run_in_terminal", "arguments": {"command": command, "risk": risk}}]}))
        .collect();
    replies.push(json!("Done."));
    let script = d.join("script.json");
    std::fs::write(&script, json!({"replies": replies}).to_string()).unwrap();
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            "[agent]\nmodel = \"scripted:{}\"\n{config}\n[tools]\nenabled = [\"run_in_terminal\"]\nworkspace = \"{}\"\n[tools.terminal]\ntimeout_secs = 30\nmax_output_chars = 2000\n",
            script.display(),
            d.join("ws").display()
        ),
    )
    .unwrap();
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(extra);
    args.push("go");
    let (code, out, err) = toolbridge(&args, &d);
    if code != 0 && err.contains("sandbox") {
        eprintln!("skipped: no sandbox on this machine: {err}");
        return None;
    }
    assert_eq!(code, 0, "{err}");
    Some(
        out.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["type"] == "call_finished")
            .map(|e| e["status"].as_str().unwrap().to_owned())
            .collect(),
    )
}

#[test]
fn low_runs_high_is_denied_without_a_terminal() {
    let Some(got) = statuses("default", &[("ls -la /workspace", "low")], &[], "") else {
        return;
    };
    assert_eq!(got, vec!["ok"]);
    let Some(got) = statuses("high", &[("rm -rf /workspace/outputs", "low")], &[], "") else {
        return;
    };
    assert_eq!(got, vec!["denied"]);
}

#[test]
fn the_flag_tightens_and_cannot_loosen() {
    let Some(got) = statuses(
        "tight",
        &[("ls -la", "low")],
        &["--approve-risk", "low=deny"],
        "",
    ) else {
        return;
    };
    assert_eq!(got, vec!["denied"]);
    let Some(got) = statuses(
        "loose",
        &[("rm -rf outputs", "high")],
        &["--approve-risk", "high=allow"],
        "",
    ) else {
        return;
    };
    assert_eq!(
        got,
        vec!["denied"],
        "high=allow on the command line changes nothing"
    );
    // The operator's configuration may loosen.
    let Some(got) = statuses(
        "config",
        &[("mkdir -p outputs/x", "medium")],
        &[],
        "[agent.approvals.risk]\nmedium = \"allow\"\n",
    ) else {
        return;
    };
    assert_eq!(got, vec!["ok"]);
}

#[test]
fn a_bad_flag_is_refused() {
    let d = temp_dir("bad");
    let (code, _, err) = toolbridge(&["run", "--approve-risk", "extreme=deny", "go"], &d);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown risk level"), "{err}");
}
