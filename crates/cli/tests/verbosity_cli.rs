//! Issue 39, item 2: a run says what it waits for from the start, and `-v` says what it did.
//! `-v` logs toolbridge's own info lines (each model request, its first token, each tool call
//! with its duration, the outcome) and nothing of other crates; on a terminal a progress line
//! shows while the model loads, before any answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::pty::Pty;
use common::{run_with_demo_skills, script, temp_dir, toolbridge};

#[test]
fn verbose_logs_the_runs_requests_and_tool_calls() {
    let d = temp_dir("verbosity", "info");
    let model = script(
        &d,
        serde_json::json!([
            {"tool_calls": [{"name": "use_skill", "arguments": {"name": "trip-planner"}}]},
            "Done."
        ]),
    );
    let (code, out, err) = run_with_demo_skills(&model, &["-v"], &d);
    assert_eq!((code, out.trim()), (0, "Done."), "{err}");
    for line in [
        "INFO toolbridge::run: model ready",
        "INFO toolbridge::run: model request round=1",
        "INFO toolbridge::run: first token round=1",
        "INFO toolbridge::run: tool call tool=use_skill status=Ok duration_ms=",
        "INFO toolbridge::run: model request round=2",
        "INFO toolbridge::run: run finished outcome=\"answered\" rounds=2",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    let (_, _, quiet) = run_with_demo_skills(&model, &[], &d);
    assert!(
        !quiet.contains("toolbridge::run"),
        "no log without -v: {quiet}"
    );
}

/// The embedded model (its tokenizer logs at trace) at `-v`: toolbridge's lines, none of the
/// tokenizer's.
#[test]
fn verbose_leaves_other_crates_out() {
    let Some(gguf) = std::env::var("TOOLBRIDGE_EMBEDDED_MODEL")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        panic!("TOOLBRIDGE_EMBEDDED_MODEL is not set: run the tests through scripts/test.sh");
    };
    let d = temp_dir("verbosity", "embedded");
    let model = format!("embedded:{gguf}");
    let (code, _, err) = toolbridge(&["run", "--model", &model, "-v", "Say hi"], &d);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("INFO toolbridge::run: model ready"), "{err}");
    assert!(err.contains("INFO toolbridge::run: run finished"), "{err}");
    assert!(!err.contains("tokenizers"), "{err}");
}

#[test]
fn a_terminal_shows_the_model_loading_before_the_answer() {
    let d = temp_dir("verbosity", "loading");
    let model = script(&d, serde_json::json!(["The answer."]));
    let pty = Pty::toolbridge(&["run", "--model", &model, "go"], &d, &[], "");
    let out = pty.finish();
    assert!(out.contains("exit=0"), "{out}");
    let loading = out
        .find(&format!("loading the model {model}"))
        .unwrap_or_else(|| panic!("no progress line: {out:?}"));
    let answer = out.find("The answer.").unwrap();
    assert!(loading < answer, "{out:?}");
}
