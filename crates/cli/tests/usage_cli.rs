//! The command line as a careful user meets it: `parse` output framing, empty prompts, model
//! names without a configuration, error chains, `memory list`, `workspaces path`, the `chat`
//! header and MCP start-up failures (issue 13, items 17–19, 21, 22 and 24).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{exit_and_text, output_with_stdin, temp_dir, toolbridge};
use serde_json::Value;

/// Runs `toolbridge ARGS` in `dir` (isolated like `common::toolbridge`) with `stdin` as input.
fn with_stdin(args: &[&str], dir: &Path, stdin: &[u8]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolbridge"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG");
    exit_and_text(output_with_stdin(&mut cmd, stdin))
}

#[test]
fn parse_writes_pretty_printed_arguments_on_one_line() {
    let d = temp_dir("usage", "parse-pretty");
    let text = "<tool_call>{\"name\": \"a\", \"arguments\": {\n  \"x\": 1,\n  \"s\": \"two words\\nnext\"\n}}</tool_call>";
    let line = serde_json::json!({ "text": text }).to_string();
    let input = format!("{line}\n{line}\n");
    let (code, out, err) = with_stdin(&["parse"], &d, input.as_bytes());
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "one output line per input line: {out}");
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["calls"][0]["name"], "a");
        assert_eq!(v["calls"][0]["arguments"]["x"], 1);
        assert_eq!(v["calls"][0]["arguments"]["s"], "two words\nnext");
    }
}

#[test]
fn parse_reports_a_line_that_is_not_utf8_and_goes_on() {
    let d = temp_dir("usage", "parse-utf8");
    let good = br#"{"text": "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>"}"#;
    let mut input = Vec::new();
    input.extend_from_slice(good);
    input.extend_from_slice(b"\n{\"text\": \"caf\xe9 \xff\"}\n");
    input.extend_from_slice(good);
    input.push(b'\n');
    let (code, out, err) = with_stdin(&["parse"], &d, &input);
    assert_eq!(code, 1, "a bad line makes the exit code 1: {err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0]["calls"][0]["name"], "a");
    let error = lines[1]["error"].as_str().unwrap();
    assert!(
        error.starts_with("line 2: ") && error.contains("UTF-8"),
        "{error}"
    );
    assert_eq!(lines[2]["calls"][0]["name"], "a");
}

/// A scripted model that records every request it gets into `requests.jsonl`.
fn recording_model(dir: &Path, replies: Value) -> String {
    let path = dir.join("script.json");
    let record = dir.join("requests.jsonl");
    std::fs::write(
        &path,
        serde_json::json!({"replies": replies, "record": record}).to_string(),
    )
    .unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn an_empty_prompt_is_a_usage_error_and_no_model_runs() {
    let d = temp_dir("usage", "empty-prompt");
    let model = recording_model(&d, serde_json::json!(["an answer"]));
    for (args, stdin) in [
        (vec!["run", "", "--model", &model], ""),
        (vec!["run", "  \n\t", "--model", &model], ""),
        (vec!["run", "-", "--model", &model], ""),
        (vec!["run", "-", "--model", &model], " \n \n"),
    ] {
        let (code, out, err) = with_stdin(&args, &d, stdin.as_bytes());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("the prompt is empty"), "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(
            !d.join("requests.jsonl").exists(),
            "{args:?}: the model was called"
        );
    }
    // A real prompt still runs.
    let (code, out, err) = with_stdin(&["run", "-", "--model", &model], &d, b"Hi\n");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "an answer");
}

#[test]
fn a_bare_model_name_without_configuration_says_where_it_looked() {
    let d = temp_dir("usage", "bare-name");
    let (code, _, err) = toolbridge(&["run", "Hi", "--model", "local"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no configuration file"), "{err}");
    let here = d.join("toolbridge.toml");
    let user = d.join(".config/toolbridge/toolbridge.toml");
    assert!(
        err.contains(&here.display().to_string()) && err.contains(&user.display().to_string()),
        "the searched paths are named: {err}"
    );
    assert!(
        err.contains("[[models]]") && err.contains("provider:model"),
        "{err}"
    );
    assert!(!err.contains("must be written provider:model"), "{err}");

    // With a configuration that lacks the name, the message names the file and what it defines.
    std::fs::write(
        &here,
        "[[models]]\nname = \"other\"\nmodel = \"scripted:none.json\"\n",
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["run", "Hi", "--model", "local"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`local`") && err.contains(&here.display().to_string()),
        "{err}"
    );
    assert!(err.contains("other"), "the defined names are listed: {err}");
}

#[test]
fn an_error_cause_is_printed_once() {
    let d = temp_dir("usage", "bind");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(d.join("script.json"), r#"{"replies": ["x"]}"#).unwrap();
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[[models]]\nname = \"m\"\nmodel = \"scripted:script.json\"\n"
        ),
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["serve"], &d);
    assert_eq!(code, 1, "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("Address already in use"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        line.matches("Address already in use").count(),
        1,
        "the cause is printed once: {line}"
    );
    drop(taken);
}

#[test]
fn memory_list_shows_readable_times_and_json_is_an_array() {
    let d = temp_dir("usage", "memory");
    std::fs::write(
        d.join("toolbridge.toml"),
        "[tools]\nenabled = [\"save_memory\"]\n",
    )
    .unwrap();
    let (code, out, err) = toolbridge(&["memory", "list", "--json"], &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "[]", "an empty list is an empty JSON array");

    let model = recording_model(
        &d,
        serde_json::json!([
            {"tool_calls": [{"name": "save_memory", "arguments": {"memory_text": "Likes tea."}}]},
            "Noted."
        ]),
    );
    let (code, _, err) = toolbridge(&["run", "Remember: I like tea.", "--model", &model], &d);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = toolbridge(&["memory", "list", "--json"], &d);
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&out).unwrap();
    let entry = &list.as_array().unwrap()[0];
    assert_eq!(entry["memory_text"], "Likes tea.");
    let unix = entry["created_at"].as_i64().unwrap();
    let created = entry["created"].as_str().unwrap();
    assert!(is_rfc3339_utc(created), "{created}");

    let (_, out, _) = toolbridge(&["memory", "list"], &d);
    assert!(out.contains("Likes tea."), "{out}");
    assert!(out.contains(created), "the readable time is shown: {out}");
    assert!(!out.contains(&unix.to_string()), "no raw Unix time: {out}");
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
fn is_rfc3339_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn workspaces_path_of_an_unknown_conversation_is_an_error() {
    let d = temp_dir("usage", "ws-path");
    let (code, out, err) = toolbridge(&["workspaces", "path", "nope"], &d);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("no workspace") && err.contains("nope"),
        "{err}"
    );
}

#[test]
fn the_chat_header_names_the_default_model() {
    let model = std::env::var("TOOLBRIDGE_EMBEDDED_MODEL").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_EMBEDDED_MODEL is not set: run the tests through scripts/test.sh")
    });
    let d = temp_dir("usage", "chat-header");
    let models = d.join("cache/toolbridge/models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&model, models.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let out = output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .arg("chat")
            .current_dir(&d)
            .env("HOME", &d)
            .env("XDG_DATA_HOME", d.join("data"))
            .env("XDG_CACHE_HOME", d.join("cache"))
            .env("TOOLBRIDGE_NO_PULL", "1")
            .env_remove("XDG_CONFIG_HOME"),
        b"/quit\n",
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    let header = err
        .lines()
        .find(|l| l.starts_with("toolbridge chat"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(!header.contains("model ,"), "{header}");
    assert!(
        header.contains("model embedded (SmolLM2-135M-Instruct)"),
        "{header}"
    );
}

#[test]
fn a_failed_mcp_start_shows_the_servers_own_message() {
    let d = temp_dir("usage", "mcp-stderr");
    let (code, _, err) = toolbridge(
        &[
            "tools",
            "--mcp",
            "bad=sh -c 'echo starting >&2; echo \"fatal: BAD_TOKEN is not set\" >&2; exit 1'",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("MCP server `bad` did not start"), "{err}");
    assert!(err.contains("fatal: BAD_TOKEN is not set"), "{err}");
}
