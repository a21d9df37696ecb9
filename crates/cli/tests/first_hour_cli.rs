//! Issue 39, item 6: what a new user meets in the first hour — chat's `/help` and `/tools`, a
//! misspelt model name, long tool descriptions on a terminal, a bad value in `[[models]]`, and
//! the help texts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::pty::Pty;
use common::{exit_and_text, output_with_stdin, repo, script, temp_dir, toolbridge};

#[test]
fn chat_help_says_what_save_writes_and_tools_says_how_to_get_some() {
    let d = temp_dir("first-hour", "chat");
    let model = script(&d, serde_json::json!(["Hi."]));
    let out = output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .args(["chat", "--model", &model])
            .current_dir(&d)
            .env("HOME", &d)
            .env("XDG_DATA_HOME", d.join("data"))
            .env_remove("XDG_CONFIG_HOME"),
        b"/help\n/tools\n/exit\n",
    );
    let (code, _, err) = exit_and_text(out);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "/save FILE     save the conversation to FILE, as Markdown when it ends in .md"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "(no tools: enable built-in tools with `enabled = [\"web_fetch\", …]` under [tools]"
        ),
        "/tools with no tools says how to enable some: {err}"
    );
}

#[test]
fn a_misspelt_model_name_gets_a_suggestion() {
    let d = temp_dir("first-hour", "typo");
    for args in [
        &["run", "--model", "embeded", "hi"][..],
        &["chat", "--model", "embeded"],
    ] {
        let (code, _, err) = toolbridge(args, &d);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("no model named `embeded` (did you mean `embedded`?)"),
            "{args:?}: {err}"
        );
    }
    std::fs::write(
        d.join("toolbridge.toml"),
        "[[models]]\nname = \"local\"\nmodel = \"scripted:none.json\"\n",
    )
    .unwrap();
    let (_, _, err) = toolbridge(&["run", "--model", "locl", "hi"], &d);
    assert!(err.contains("(did you mean `local`?)"), "{err}");
    let (_, _, err) = toolbridge(&["run", "--model", "zzzzzz", "hi"], &d);
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn long_tool_descriptions_wrap_under_themselves_on_a_terminal() {
    let d = temp_dir("first-hour", "wrap");
    let skills = repo().join("examples/demo/skills");
    let pty = Pty::toolbridge(
        &["tools", "--skills", skills.to_str().unwrap()],
        &d,
        &[],
        "",
    );
    let out = pty.finish();
    assert!(out.contains("exit=0"), "{out}");
    let listing: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("use_skill"))
        .take_while(|l| !l.starts_with("exit="))
        .collect();
    assert!(listing.len() > 1, "the description wraps: {out:?}");
    let column = "use_skill".len().max(20) + 1;
    for line in &listing {
        assert!(
            line.trim_end_matches('\r').chars().count() <= 80,
            "{line:?}"
        );
    }
    for line in &listing[1..] {
        assert!(
            line.starts_with(&" ".repeat(column)),
            "continued under the description: {line:?}"
        );
    }
}

#[test]
fn a_bad_value_in_a_models_entry_is_shown_at_its_line() {
    let d = temp_dir("first-hour", "caret");
    std::fs::write(
        d.join("toolbridge.toml"),
        "[agent]\nmodel = \"local\"\n\n[[models]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:8081/v1\"\nupstream_model = \"q\"\ntool_mode = \"prompts\"\n",
    )
    .unwrap();
    let (code, _, err) = toolbridge(&["config", "check"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line 8, column 13"), "{err}");
    assert!(err.contains("8 | tool_mode = \"prompts\""), "{err}");
    assert!(err.contains("unknown variant `prompts`"), "{err}");
}

#[test]
fn the_color_details_live_in_the_top_help_only() {
    let d = temp_dir("first-hour", "help");
    for command in ["run", "chat", "serve", "models", "workspaces", "tools"] {
        let (_, out, _) = toolbridge(&[command, "--help"], &d);
        assert!(!out.contains("Possible values"), "{command}: {out}");
        assert!(
            out.contains("Colour: auto, always or never (toolbridge --help)\n")
                && !out.contains("even into a pipe"),
            "{command}: {out}"
        );
    }
    let top = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .arg("--help")
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let top = String::from_utf8(top.stdout).unwrap();
    assert!(
        top.contains("Colours (--color WHEN, every command):"),
        "{top}"
    );
    // Nothing is wrapped out of its indent: every line fits.
    for help in [top, {
        let serve = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
            .args(["serve", "--help"])
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        String::from_utf8(serve.stdout).unwrap()
    }] {
        for line in help.lines() {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
    }
}
