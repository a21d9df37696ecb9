//! Issue 13 item 13: `toolbridge run` prints only the model's visible text on stdout — never the
//! markup of a broken call or of a call made in the tool-free finalization round — while the
//! transcript keeps the raw text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{run_with_demo_skills, script, temp_dir};

#[test]
fn after_exhausted_retries_stdout_shows_only_the_visible_text() {
    let d = temp_dir("visible", "retries");
    let broken = "final <tool_call>{bad2";
    let model = script(&d, serde_json::json!([broken, broken, broken]));
    let transcript = d.join("t.json");
    let (code, out, err) =
        run_with_demo_skills(&model, &["--transcript", transcript.to_str().unwrap()], &d);
    assert_eq!(code, 5, "malformed_gave_up: {err}");
    assert!(out.contains("final"), "{out:?}");
    assert!(
        !out.contains("tool_call") && !out.contains("bad2"),
        "{out:?}"
    );
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap();
    let raw = t["transcript"].to_string();
    assert_eq!(
        raw.matches("{bad2").count(),
        3,
        "the raw attempts stay in the transcript: {t}"
    );
}

#[test]
fn a_finalization_round_that_still_calls_prints_no_markup() {
    let d = temp_dir("visible", "finalize");
    let load = "<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"trip-planner\"}}</tool_call>";
    let stray = "Here is what I know.\n<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"x\"}}</tool_call>";
    let model = script(&d, serde_json::json!([load, load, stray]));
    let (code, out, err) = run_with_demo_skills(&model, &[], &d);
    assert_eq!(code, 4, "tool_no_progress: {err}");
    assert!(out.contains("Here is what I know."), "{out:?}");
    assert!(!out.contains("tool_call"), "{out:?}");
}
