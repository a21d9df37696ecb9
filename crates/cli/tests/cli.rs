//! The `toolbridge` binary, driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};

fn toolbridge(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn examples() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn parse_reads_json_lines_and_writes_one_line_each() {
    let input = std::fs::read_to_string(examples().join("model-outputs.jsonl")).unwrap();
    let (code, out, _) = toolbridge(&["parse"], &input);
    assert_eq!(code, 0);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), input.lines().count());
    assert_eq!(lines[0]["calls"][0]["name"], "get_weather");
    assert_eq!(lines[0]["calls"][0]["arguments"]["city"], "Paris");
    assert_eq!(lines[0]["visible"], "Let me look that up.\n");
    assert_eq!(lines[1]["reasoning"], "The user wants news; search.");
    assert_eq!(lines[3]["errors"][0]["kind"], "malformed");
    assert_eq!(lines[5]["errors"][0]["kind"], "truncated");
}

#[test]
fn parse_tools_flag_and_per_line_override() {
    let line = r#"{"text": "<tool_call>{\"name\": \"a\"}</tool_call>"}"#;
    let (_, out, _) = toolbridge(&["parse", "--tools", "b,c"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["calls"].as_array().unwrap().len(), 0);
    assert!(v["errors"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("available tools: b, c"));
    let line = r#"{"text": "<tool_call>{\"name\": \"a\"}</tool_call>", "tools": ["a"]}"#;
    let (_, out, _) = toolbridge(&["parse", "--tools", "b,c"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["calls"][0]["arguments"], serde_json::json!({}));
}

#[test]
fn parse_events_show_deltas_in_order() {
    let line = r#"{"text": "Hi <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>", "chunks": ["Hi <tool", "_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>"]}"#;
    let (code, out, _) = toolbridge(&["parse", "--events"], line);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let types: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "call_start", "call_args", "call_end"]);
    assert_eq!(v["events"][0]["text"], "Hi ");
    assert_eq!(v["events"][1]["id"], "call_0");
    assert_eq!(v["events"][2]["fragment"], "{\"x\": 1}");
}

#[test]
fn bad_lines_get_an_error_line_and_the_rest_still_parse() {
    let input = "not json\n{\"text\": \"a\", \"chunks\": [\"b\"]}\n{\"text\": \"ok\"}\n";
    let (code, out, _) = toolbridge(&["parse"], input);
    assert_eq!(code, 1);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("line 1: not a valid input line"));
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .contains("do not concatenate"));
    assert_eq!(lines[2]["visible"], "ok");
}

#[test]
fn prompt_prints_the_preamble_exactly() {
    let tools = examples().join("tools.json");
    let (code, out, _) = toolbridge(&["prompt", "--tools", tools.to_str().unwrap()], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("## Available tools\nYou can call any of the tools below"));
    assert!(
        out.ends_with("\"maxItems\":5}}}"),
        "no trailing newline when piped"
    );
    assert!(out.contains(
        "### get_weather\nGet the current weather for a city.\nInput schema: {\"type\":\"object\""
    ));

    let (_, out, _) = toolbridge(
        &["prompt", "--tools", "-", "--tag", "tool_use"],
        &std::fs::read_to_string(&tools).unwrap(),
    );
    assert!(out.contains("<tool_use>{\"name\": \"<tool>\", \"arguments\": <args>}</tool_use>"));

    let (_, out, _) = toolbridge(
        &[
            "prompt",
            "--tools",
            tools.to_str().unwrap(),
            "--mode",
            "verbatim",
        ],
        "",
    );
    assert!(out.starts_with("## Tool definitions\n"));
    assert!(out.contains("```json\n[\n  {\n    \"type\": \"function\""));
}

#[test]
fn prompt_errors_are_clear() {
    let (code, _, err) = toolbridge(&["prompt", "--tools", "/nonexistent/tools.json"], "");
    assert_eq!(code, 1);
    assert!(err.contains("reading /nonexistent/tools.json"), "{err}");
    let (code, _, err) = toolbridge(&["prompt", "--tools", "-"], "[{\"type\": \"retrieval\"}]");
    assert_eq!(code, 1);
    assert!(err.contains("is not a valid OpenAI tools array"), "{err}");
    let (code, _, err) = toolbridge(&["prompt", "--tools", "-", "--tool-choice", "zzz"], "[]");
    assert_eq!(code, 1);
    assert!(err.contains("`zzz`"), "{err}");
}

#[test]
fn prompt_encodes_a_whole_request() {
    let req = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","description":"F.","parameters":{"type":"object"}}}]}"#;
    let (code, out, _) = toolbridge(&["prompt", "--request", "-"], req);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["messages"][0]["role"], "system");
    assert_eq!(v["stop"][0], "</tool_call>");
    assert!(v.get("tools").is_none());
}
