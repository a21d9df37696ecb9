//! The `toolbridge` binary, driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::{exit_and_text, output_with_stdin};

fn toolbridge(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolbridge"));
    cmd.args(args);
    exit_and_text(output_with_stdin(&mut cmd, stdin.as_bytes()))
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
fn parse_dialect_flag_and_per_line_dialect() {
    let mistral = r#"{"text": "Sure.[TOOL_CALLS]add{\"a\": 1}"}"#;
    let (code, out, _) = toolbridge(&["parse", "--dialect", "mistral"], mistral);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["calls"][0]["name"], "add");
    assert_eq!(v["calls"][0]["arguments"], serde_json::json!({"a": 1}));
    assert_eq!(v["visible"], "Sure.");
    // The line's own dialect wins over the flag; hermes reads the same text as plain text.
    let line = r#"{"text": "[get_weather(city='Paris')]", "dialect": "pythonic"}"#;
    let (_, out, _) = toolbridge(&["parse", "--dialect", "mistral"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        v["calls"][0]["arguments"],
        serde_json::json!({"city": "Paris"})
    );
    let (_, out, _) = toolbridge(&["parse"], mistral);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["calls"].as_array().unwrap().len(), 0);
    assert_eq!(v["visible"], "Sure.[TOOL_CALLS]add{\"a\": 1}");
}

#[test]
fn parse_rejects_an_unknown_dialect() {
    let (code, _, err) = toolbridge(&["parse", "--dialect", "llama"], "");
    assert_ne!(code, 0);
    assert!(err.contains("unknown dialect \"llama\""), "{err}");
    let line = r#"{"text": "x", "dialect": "nope"}"#;
    let (code, out, _) = toolbridge(&["parse"], line);
    assert_eq!(code, 1);
    assert!(out.contains("not a valid input line"), "{out}");
}

#[test]
fn parse_typed_values_and_reasoning_open() {
    let line = r#"{"text": "<tool_call>\n<function=f>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>", "dialect": "qwen3-coder", "schemas": {"f": {"properties": {"n": {"type": "integer"}}}}}"#;
    let (_, out, _) = toolbridge(&["parse"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["calls"][0]["arguments"], serde_json::json!({"n": 5}));
    let line = r#"{"text": "hmm</think>Answer."}"#;
    let (_, out, _) = toolbridge(&["parse", "--reasoning-open"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["reasoning"], "hmm");
    assert_eq!(v["visible"], "Answer.");
    let line = r#"{"text": "hmm</think>Answer.", "reasoning_open": false}"#;
    let (_, out, _) = toolbridge(&["parse", "--reasoning-open"], line);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["visible"], "hmm</think>Answer.");
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

#[test]
fn prompt_teaches_a_dialect_and_writes_the_history_in_it() {
    let tools = examples().join("tools.json");
    let tools = tools.to_str().unwrap();
    let (code, out, err) = toolbridge(&["prompt", "--tools", tools, "--dialect", "mistral"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("## Available tools\nYou can call any of the tools below"));
    assert!(out.contains(
        "\n\n[TOOL_CALLS][{\"name\": \"<tool>\", \"arguments\": <args>}]\n\nImportant rules:\n- After the closing `]` STOP."
    ));
    assert!(!out.contains("<tool_call>"), "{out}");
    assert!(out.contains("### get_weather\nGet the current weather for a city.\n"));

    let (code, out, _) = toolbridge(
        &[
            "prompt",
            "--tools",
            tools,
            "--mode",
            "verbatim",
            "--dialect",
            "kimi-k2",
        ],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("then stop and wait for its result:\n<|tool_calls_section_begin|>"));

    let req = r#"{"model":"m","tools":[{"type":"function","function":{"name":"f","description":"F.","parameters":{"type":"object"}}}],
        "messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
        {"role":"tool","tool_call_id":"c1","content":"done"}]}"#;
    let (code, out, _) = toolbridge(&["prompt", "--request", "-", "--dialect", "glm45"], req);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["stop"], serde_json::json!(["</tool_call>"]));
    assert_eq!(
        v["messages"][2]["content"],
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
    );
    assert_eq!(
        v["messages"][3]["content"],
        "<tool_response>\ndone\n</tool_response>"
    );

    let (code, _, err) = toolbridge(&["prompt", "--tools", tools, "--dialect", "llama"], "");
    assert_eq!(code, 2, "a usage error");
    assert!(
        err.contains("unknown dialect \"llama\"; known dialects: hermes, llama3-json"),
        "{err}"
    );
    let (code, _, err) = toolbridge(
        &[
            "prompt",
            "--tools",
            tools,
            "--dialect",
            "granite",
            "--tag",
            "tool_use",
        ],
        "",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("--tag applies to the hermes dialect only"),
        "{err}"
    );
}
