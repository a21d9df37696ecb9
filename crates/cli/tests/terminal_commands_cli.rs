//! Issue 19 item 3, what works without a terminal too: `chat`'s commands (/help, /model, /save),
//! the note for an answer cut at the token limit, `--color always`, `toolbridge init`,
//! `toolbridge models`, and the completions and manual page generated from the clap definitions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{exit_and_text, output_with_stdin, temp_dir, toolbridge};

const CUT: &str = "the answer was cut at the token limit";

/// `toolbridge ARGS` in `dir` with `input` on stdin and the API key variables unset.
fn with_stdin(args: &[&str], dir: &Path, input: &[u8]) -> (i32, String, String) {
    exit_and_text(output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("NO_COLOR")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY"),
        input,
    ))
}

/// A script file of `replies` recording its requests; the `--model` value that plays it.
fn recorded_script(dir: &Path, name: &str, replies: serde_json::Value) -> String {
    let path = dir.join(format!("{name}.json"));
    let record = dir.join(format!("{name}.jsonl"));
    std::fs::write(
        &path,
        serde_json::json!({"replies": replies, "record": record}).to_string(),
    )
    .unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn chat_help_model_and_save() {
    let d = temp_dir("commands", "chat");
    let first = recorded_script(&d, "a", serde_json::json!(["Hello from A."]));
    let second = recorded_script(&d, "b", serde_json::json!(["Hello from B."]));
    let input = format!(
        "/help\nhi\n/model\n/model {second}\n/model nowhere-defined\nagain\n/save chat.md\n/save chat.json\n/save chat.txt\n/save\n/exit\nnot read\n"
    );
    let (code, out, err) = with_stdin(&["chat", "--model", &first], &d, input.as_bytes());
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("/model [NAME]") && err.contains("/save FILE"),
        "/help: {err}"
    );
    assert!(
        out.contains("Hello from A.") && out.contains("Hello from B."),
        "{out}"
    );
    assert!(
        err.contains(&format!("model {first}: scripted:")),
        "/model shows: {err}"
    );
    assert!(
        err.contains(&format!("(model {second} from the next message on)")),
        "{err}"
    );
    assert!(
        err.contains("/model nowhere-defined: no model named `nowhere-defined`"),
        "{err}"
    );
    // The new model gets the whole conversation.
    let sent = std::fs::read_to_string(d.join("b.jsonl")).unwrap();
    assert!(
        sent.contains("\"hi\"") && sent.contains("Hello from A.") && sent.contains("again"),
        "{sent}"
    );
    let md = std::fs::read_to_string(d.join("chat.md")).unwrap();
    assert!(
        md.contains("## You\n\nhi\n")
            && md.contains("## Assistant\n\nHello from A.\n")
            && md.ends_with("Hello from B.\n"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("chat.json")).unwrap()).unwrap();
    assert_eq!(json["model"], second.as_str());
    let roles: Vec<&str> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert!(
        err.contains("chat.txt: name a .md file (Markdown) or a .json file (JSON)"),
        "{err}"
    );
    assert!(err.contains("/save needs a file"), "{err}");
    assert!(!d.join("chat.txt").exists());
}

#[test]
fn an_answer_cut_at_the_token_limit_is_noted() {
    let d = temp_dir("commands", "cut");
    let cut = serde_json::json!([{"text": "The list: one, two", "finish_reason": "length"}]);
    let model = recorded_script(&d, "cut", cut.clone());
    let (code, out, err) = with_stdin(&["run", "--model", &model, "go"], &d, b"");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "The list: one, two\n");
    assert!(err.contains(CUT), "{err}");
    let model = recorded_script(&d, "cut", cut);
    let (code, _, err) = with_stdin(&["chat", "--model", &model], &d, b"go\n/exit\n");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(CUT), "{err}");
    // A whole answer has no such note.
    let model = recorded_script(&d, "whole", serde_json::json!(["All of it."]));
    let (code, _, err) = with_stdin(&["run", "--model", &model, "go"], &d, b"");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains(CUT), "{err}");
}

#[test]
fn color_always_renders_markdown_into_a_pipe_and_wins_over_no_color() {
    let d = temp_dir("commands", "always");
    let model = recorded_script(&d, "md", serde_json::json!(["Some **bold**.\n"]));
    let out = output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .args(["--color", "always", "chat", "--model", &model])
            .current_dir(&d)
            .env("HOME", &d)
            .env("NO_COLOR", "1"),
        b"hi\n/exit\n",
    );
    let (code, out, err) = exit_and_text(out);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Some \x1b[1mbold\x1b[22m."), "{out:?}");
    // Without the flag a pipe gets the text as written.
    let model = recorded_script(&d, "md", serde_json::json!(["Some **bold**.\n"]));
    let (code, out, err) = with_stdin(&["chat", "--model", &model], &d, b"hi\n/exit\n");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Some **bold**.") && !out.contains('\x1b'),
        "{out:?}"
    );
    let (code, _, err) = toolbridge(&["--color", "sometimes", "models"], &d);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn init_writes_a_working_file_and_keeps_an_existing_one() {
    let d = temp_dir("commands", "init");
    let (code, out, err) = toolbridge(&["init"], &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "wrote toolbridge.toml\n");
    let written = std::fs::read_to_string(d.join("toolbridge.toml")).unwrap();
    assert!(written.starts_with("# toolbridge.toml, written by `toolbridge init`."));
    let (code, out, err) = toolbridge(&["config", "check"], &d);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("ok: ") && out.contains("toolbridge.toml"),
        "{out}"
    );

    // An existing file stays as it is unless --force.
    std::fs::write(d.join("toolbridge.toml"), "# mine\n").unwrap();
    let (code, _, err) = toolbridge(&["init"], &d);
    assert_eq!(code, 1);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("toolbridge.toml")).unwrap(),
        "# mine\n"
    );
    let (code, _, err) = toolbridge(&["init", "--force"], &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("toolbridge.toml")).unwrap(),
        written
    );

    // A folder gets the file inside; another name is written as given.
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let (code, _, err) = toolbridge(&["init", "sub"], &d);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--config sub/toolbridge.toml"), "{err}");
    let (code, _, err) = toolbridge(&["config", "check", "--config", "sub/toolbridge.toml"], &d);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn every_example_of_the_init_file_works_uncommented() {
    let d = temp_dir("commands", "init-examples");
    let (code, _, err) = toolbridge(&["init", "written.toml"], &d);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(d.join("written.toml")).unwrap();
    // An example line is "# key = value" or "# [table]"; prose never looks like one.
    let mut examples = 0;
    let uncommented: String = written
        .lines()
        .map(|line| {
            let rest = line.strip_prefix("# ").unwrap_or("");
            let key = rest.split_once(" = ").map(|(k, _)| k);
            let example = rest.starts_with('[')
                || key.is_some_and(|k| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                });
            if example {
                examples += 1;
                format!("{rest}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert!(examples >= 15, "only {examples} example lines");
    std::fs::write(d.join("full.toml"), &uncommented).unwrap();
    let (code, out, err) = with_stdin(&["config", "check", "--config", "full.toml"], &d, b"");
    assert_eq!(code, 0, "{uncommented}\n{err}");
    assert!(out.starts_with("ok: "), "{out}");
    let (code, out, err) = with_stdin(&["models", "--config", "full.toml", "--json"], &d, b"");
    assert_eq!(code, 0, "{err}");
    let models: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local", "gpt", "smart"]);
}

#[test]
fn models_lists_what_each_model_resolves_to() {
    let d = temp_dir("commands", "models");
    let script = d.join("replies.json");
    std::fs::write(&script, r#"{"replies": ["x"]}"#).unwrap();
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            r#"
[agent]
model = "pair"

[[models]]
name = "local"
base_url = "http://user:secret@127.0.0.1:8080/v1?key=hidden"
upstream_model = "qwen2.5"
tool_mode = "prompt"

[[models]]
name = "pair"
[[models.arms]]
model = "anthropic:claude-sonnet-4-5"
[[models.arms]]
model = "scripted:{}"
"#,
            script.display()
        ),
    )
    .unwrap();
    let (code, out, err) = with_stdin(&["models"], &d, b"");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "local\n  1. openai qwen2.5 at http://127.0.0.1:8080/v1, tool mode prompt, dialect auto (hermes)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("pair  ([agent] model: run and chat use this)\n"),
        "{out}"
    );
    assert!(
        out.contains("  1. anthropic claude-sonnet-4-5 at https://api.anthropic.com, tool mode auto (native), key from ANTHROPIC_API_KEY — unavailable: set ANTHROPIC_API_KEY to use it\n"),
        "{out}"
    );
    assert!(
        out.contains(", tool mode auto (prompt), dialect auto (hermes)\n"),
        "a scripted arm has no native tools: {out}"
    );
    assert!(!out.contains("secret") && !out.contains("hidden"), "{out}");

    // With the key set the arm is available; the JSON says the same.
    let listed = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(["models", "--json"])
        .current_dir(&d)
        .env("HOME", &d)
        .env("ANTHROPIC_API_KEY", "sk-ant-not-shown")
        .output()
        .unwrap();
    let (code, out, err) = exit_and_text(listed);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("sk-ant-not-shown"), "{out}");
    let models: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pair = &models[1];
    assert_eq!(
        (pair["name"].as_str(), pair["default"].as_bool()),
        (Some("pair"), Some(true))
    );
    assert_eq!(pair["available"], true);
    assert_eq!(pair["arms"][0]["resolved_tool_mode"], "native");
    assert_eq!(pair["arms"][1]["provider"], "scripted");
    assert_eq!(
        models.as_array().unwrap().len(),
        2,
        "no default row when [agent] names one"
    );
}

/// The subcommands `toolbridge --help` lists.
fn subcommands(dir: &Path) -> Vec<String> {
    let (code, out, _) = toolbridge(&["--help"], dir);
    assert_eq!(code, 0);
    let commands = out.split("Commands:").nth(1).unwrap();
    let commands = commands.split("Options:").next().unwrap();
    commands
        .lines()
        // A command's line starts with it; wrapped descriptions are indented further.
        .filter_map(|l| l.strip_prefix("  ").filter(|rest| !rest.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn completions_and_the_man_page_come_from_the_clap_definitions() {
    let d = temp_dir("commands", "completions");
    let commands = subcommands(&d);
    assert!(
        commands.len() >= 17 && commands.contains(&"models".to_owned()),
        "{commands:?}"
    );
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let (code, out, err) = toolbridge(&["completions", shell], &d);
        assert_eq!(code, 0, "{shell}: {err}");
        for command in &commands {
            assert!(
                out.contains(command.as_str()),
                "{shell} completes {command}"
            );
        }
        // The global flag, in each shell's own notation.
        let flag = if shell == "fish" {
            "-l color"
        } else {
            "--color"
        };
        assert!(out.contains(flag), "{shell}");
    }
    // bash loads the script and registers it.
    let (_, script, _) = toolbridge(&["completions", "bash"], &d);
    std::fs::write(d.join("toolbridge.bash"), script).unwrap();
    let bash = Command::new("bash")
        .args(["-c", "source ./toolbridge.bash && complete -p toolbridge"])
        .current_dir(&d)
        .output()
        .unwrap();
    let (code, out, err) = exit_and_text(bash);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("toolbridge"), "{out}");
    let (code, _, err) = toolbridge(&["completions", "tcsh"], &d);
    assert_eq!(code, 2, "{err}");

    let (code, page, err) = toolbridge(&["man"], &d);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH toolbridge 1"), "{page}");
    for command in &commands {
        assert!(
            page.contains(&format!("toolbridge\\-{}", command.replace('-', "\\-"))),
            "the page lists {command}"
        );
    }
    let (code, _, err) = toolbridge(&["man", "--dir", "pages"], &d);
    assert_eq!(code, 0, "{err}");
    for command in &commands {
        assert!(
            d.join(format!("pages/toolbridge-{command}.1")).is_file(),
            "a page for {command}"
        );
    }
}
