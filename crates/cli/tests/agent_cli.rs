//! `toolbridge run`, `tools` and `skills` driven as a user would, on scripted models.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{exit_and_text, output_with_stdin, repo, run_with_demo_skills, script};

/// `toolbridge ARGS` in `dir` with HOME there; unlike `common::toolbridge` it leaves XDG_DATA_HOME
/// as it is, since some of these tests run in the repository itself.
fn toolbridge(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    exit_and_text(out)
}

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("cli", name)
}

#[test]
fn the_demo_run_answers_and_exits_zero() {
    let r = repo();
    let (code, out, err) = toolbridge(
        &[
            "run",
            "--model",
            "scripted:examples/demo/script.json",
            "--skills",
            "examples/demo/skills",
            "Plan a trip to Paris",
        ],
        &r,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Best season"), "{out}");
    assert!(err.contains("use_skill"), "tool activity on stderr: {err}");
}

#[test]
fn json_events_and_transcript() {
    let d = temp_dir("json");
    let model = script(
        &d,
        serde_json::json!([
            "<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"nope\"}}</tool_call>",
            "fine"
        ]),
    );
    let transcript = d.join("t.json");
    let (code, out, _) = run_with_demo_skills(
        &model,
        &["--json", "--transcript", transcript.to_str().unwrap()],
        &d,
    );
    assert_eq!(code, 0);
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "round_started");
    assert!(events
        .iter()
        .any(|e| e["type"] == "call_finished" && e["status"] == "tool_error"));
    assert_eq!(events.last().unwrap()["type"], "outcome");
    assert_eq!(events.last().unwrap()["outcome"], "answered");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap();
    assert_eq!(t["outcome"], "answered");
    assert!(t["transcript"].as_array().unwrap().len() >= 4);
    // The whole conversation: owner-only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&transcript).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn exit_codes_follow_the_outcome() {
    let d = temp_dir("codes");
    let broken = "<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"trip-planner\",}}</tool_call>";
    let model = script(&d, serde_json::json!([broken, broken, broken]));
    let (code, _, err) = run_with_demo_skills(&model, &[], &d);
    assert_eq!(code, 5, "malformed_gave_up: {err}");
    assert!(err.contains("malformed_gave_up"));

    let model = script(&d, serde_json::json!([]));
    let (code, _, err) = toolbridge(&["run", "--model", &model, "go"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no reply left"));

    // With no model the embedded default is used; TOOLBRIDGE_NO_PULL keeps the test offline.
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(["run", "go"])
        .current_dir(&d)
        .env("HOME", &d)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env("TOOLBRIDGE_NO_PULL", "1")
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("no model configured"), "{err}");
    assert!(err.contains("toolbridge model pull"), "{err}");
}

#[test]
fn config_file_models_and_agent_section() {
    let d = temp_dir("config");
    let model = script(&d, serde_json::json!(["from the config"]));
    let spec = model.trim_start_matches("scripted:");
    std::fs::write(
        d.join("toolbridge.toml"),
        format!("[agent]\nmodel = \"scripted:{spec}\"\nmax_rounds = 3\n"),
    )
    .unwrap();
    let (code, out, err) = toolbridge(&["run", "hello"], &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "from the config");
    std::fs::write(d.join("toolbridge.toml"), "[agent]\nmax_round = 3\n").unwrap();
    let (code, _, err) = toolbridge(&["run", "hello"], &d);
    assert_eq!(code, 1);
    assert!(
        err.contains("unknown field `max_round`") && err.contains("toolbridge.toml"),
        "{err}"
    );
}

#[test]
fn tools_and_skills_list_what_a_run_offers() {
    let r = repo();
    let (code, out, _) = toolbridge(&["skills", "--skills", "examples/demo/skills"], &r);
    assert_eq!(code, 0);
    assert!(out.contains("trip-planner: How to answer travel questions."));
    let (_, out, _) = toolbridge(&["tools", "--skills", "examples/demo/skills", "--json"], &r);
    let specs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(specs[0]["function"]["name"], "use_skill");
}

#[test]
fn chat_keeps_the_conversation_and_answers_commands() {
    let d = temp_dir("chat");
    let record = d.join("requests.jsonl");
    std::fs::write(
        d.join("script.json"),
        serde_json::json!({"replies": ["Hello there!", "Second answer."], "record": record})
            .to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", d.join("script.json").display());
    let out = output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .args(["chat", "--model", &model])
            .current_dir(&d)
            .env("HOME", &d),
        b"hi\n/tools\n/bogus\nagain\n/reset\n/quit\n",
    );
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stdout.contains("Hello there!") && stdout.contains("Second answer."),
        "{stdout}"
    );
    assert!(stderr.contains("unknown command /bogus"), "{stderr}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let second = lines[1]["messages"].to_string();
    assert!(
        second.contains("Hello there!") && second.contains("\"hi\"") && second.contains("again"),
        "the second turn carries the first: {second}"
    );
}

#[test]
fn tool_choice_forces_the_first_model_request_only() {
    let d = temp_dir("tool-choice");
    let record = d.join("requests.jsonl");
    std::fs::write(
        d.join("script.json"),
        serde_json::json!({"replies": [
            "<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"trip-planner\"}}</tool_call>",
            "Go in May.",
        ], "record": record})
        .to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", d.join("script.json").display());
    let skills = repo().join("examples/demo/skills");
    let skills = skills.to_str().unwrap();
    let (code, out, err) = toolbridge(
        &[
            "run",
            "--model",
            &model,
            "--skills",
            skills,
            "--tool-choice",
            "use_skill",
            "Paris?",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Go in May."), "{out}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    // The scripted model is served in prompt mode: the forced choice is the protocol's sentence.
    let forced = "You must call the tool use_skill in this reply.";
    assert!(
        lines[0]["messages"].to_string().contains(forced),
        "{}",
        lines[0]
    );
    assert!(
        !lines[1]["messages"].to_string().contains(forced),
        "{}",
        lines[1]
    );
    // A choice that is no tool of the agent is a usage error naming the tools.
    let (code, _, err) = toolbridge(
        &[
            "run",
            "--model",
            &model,
            "--skills",
            skills,
            "--tool-choice",
            "teleport",
            "x",
        ],
        &d,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("teleport") && err.contains("use_skill"),
        "{err}"
    );
}

/// The README's first command, exactly as written (after `cargo run --release -p toolbridge-cli
/// --`), on the real default model (TOOLBRIDGE_EMBEDDED_MODEL, which scripts/test.sh fetches, is
/// put where `toolbridge model pull` would have put it): the model loads the demo skill through
/// its forced call and answers from it — the city, its sights and its tip (decoding is greedy,
/// so this is the answer every run gives).
#[test]
fn the_readme_first_command_loads_the_skill_and_answers_from_it() {
    let Some(gguf) = std::env::var_os("TOOLBRIDGE_EMBEDDED_MODEL").filter(|p| !p.is_empty()) else {
        panic!("TOOLBRIDGE_EMBEDDED_MODEL is not set: run the tests through scripts/test.sh");
    };
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run "))
        .expect("the README starts with a `cargo run` command");
    let args = first
        .strip_prefix("cargo run --release -p toolbridge-cli -- ")
        .unwrap_or_else(|| panic!("unexpected first command: {first}"));
    // The command's words: flags, then the quoted prompt.
    let (flags, prompt) = args.split_once(" \"").expect("a quoted prompt");
    let prompt = prompt
        .strip_suffix('"')
        .expect("the prompt ends the command");
    let mut argv: Vec<&str> = flags.split_whitespace().collect();
    argv.push(prompt);

    let d = common::temp_dir("readme", "first");
    let models = d.join(".cache/toolbridge/models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&gguf, models.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    // The skill folder the README names, relative to the repository.
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(&argv)
        .current_dir(repo())
        .env("HOME", &d)
        .env("XDG_DATA_HOME", d.join("data"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let (code, stdout, stderr) = exit_and_text(out);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("use_skill {\"name\": \"trip-planner\"}"),
        "the skill is loaded by a tool call: {stderr}"
    );
    for fact in ["Paris", "Louvre", "Montmartre", "Navigo"] {
        assert!(
            stdout.contains(fact),
            "the answer quotes the skill ({fact}): {stdout}"
        );
    }
}
