//! Conversation workspaces from the command line: `--attach`, `--conversation`, the idle clean-up
//! and `toolbridge workspaces`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::toolbridge;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::json;
use toolbridge_protocol::texts;

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("ws-cli", name)
}

fn workspaces(d: &Path) -> PathBuf {
    d.join("data/toolbridge/workspaces")
}

/// `toolbridge run PROMPT --model MODEL --conversation q3-report --attach sales.csv` in `dir`.
fn attach_in_q3_report(prompt: &str, model: &str, dir: &Path) -> (i32, String, String) {
    let args = [
        "run",
        prompt,
        "--model",
        model,
        "--conversation",
        "q3-report",
        "--attach",
        "sales.csv",
    ];
    toolbridge(&args, dir)
}

#[test]
fn attach_copies_into_uploads_and_tells_the_model() {
    let d = temp_dir("attach");
    std::fs::write(d.join("sales.csv"), "month,total\njan,10\n").unwrap();
    let record = d.join("requests.jsonl");
    let script = d.join("script.json");
    std::fs::write(
        &script,
        json!({"replies": ["Got it."], "record": record}).to_string(),
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let (code, out, err) = attach_in_q3_report("Summarize the file.", &model, &d);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("attached sales.csv as /workspace/uploads/sales.csv"),
        "{err}"
    );
    let ws = workspaces(&d).join("q3-report");
    assert_eq!(
        std::fs::read_to_string(ws.join("uploads/sales.csv")).unwrap(),
        "month,total\njan,10\n"
    );
    for folder in ["uploads", "downloads", "outputs"] {
        assert!(ws.join(folder).is_dir(), "{folder}");
    }
    let note = texts::attachments_note(&[texts::attached_file_line(
        "/workspace/uploads/sales.csv",
        "month,total\njan,10\n".len() as u64,
    )]);
    let recorded = std::fs::read_to_string(&record).unwrap();
    let want = format!("Summarize the file.\n\n{note}");
    assert!(
        recorded.contains(&serde_json::to_string(&want).unwrap()),
        "{recorded}"
    );

    // The same conversation again: the upload is kept, a second copy gets a new name.
    let (code, _, err) = attach_in_q3_report("Again.", &model, &d);
    assert_eq!(code, 0, "{err}");
    assert!(ws.join("uploads/sales-2.csv").is_file());
    assert!(ws.join("uploads/sales.csv").is_file());
}

#[test]
fn bad_attachments_and_conversation_ids_are_clear_errors() {
    let d = temp_dir("bad");
    let script = d.join("script.json");
    std::fs::write(&script, json!({"replies": ["x"]}).to_string()).unwrap();
    let model = format!("scripted:{}", script.display());
    let (code, _, err) = toolbridge(
        &["run", "Hi", "--model", &model, "--attach", "missing.pdf"],
        &d,
    );
    assert_eq!(code, 1);
    assert!(err.contains("--attach missing.pdf"), "{err}");
    let (code, _, err) = toolbridge(
        &["run", "Hi", "--model", &model, "--conversation", "../etc"],
        &d,
    );
    assert_eq!(code, 1);
    assert!(err.contains("--conversation \"../etc\""), "{err}");
}

#[test]
fn idle_workspaces_are_removed_and_listed() {
    let d = temp_dir("idle");
    let script = d.join("script.json");
    std::fs::write(&script, json!({"replies": ["x", "y"]}).to_string()).unwrap();
    std::fs::write(d.join("a.txt"), "a").unwrap();
    let model = format!("scripted:{}", script.display());
    for id in ["old-one", "new-one"] {
        let (code, _, err) = toolbridge(
            &[
                "run",
                "Hi",
                "--model",
                &model,
                "--conversation",
                id,
                "--attach",
                "a.txt",
            ],
            &d,
        );
        assert_eq!(code, 0, "{err}");
    }
    let (_, out, _) = toolbridge(&["workspaces", "list"], &d);
    assert!(out.contains("old-one") && out.contains("new-one"), "{out}");
    let marker = workspaces(&d).join("old-one/.toolbridge-workspace");
    std::fs::File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(8 * 86_400))
        .unwrap();
    // The next run removes workspaces idle for more than 7 days (the default rule).
    let (code, _, err) = toolbridge(&["run", "Hi", "--model", &model], &d);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("removed the idle workspace of conversation old-one"),
        "{err}"
    );
    assert!(!workspaces(&d).join("old-one").exists());
    assert!(workspaces(&d).join("new-one/uploads/a.txt").is_file());

    let (_, out, _) = toolbridge(&["workspaces", "path", "new-one"], &d);
    assert_eq!(PathBuf::from(out.trim()), workspaces(&d).join("new-one"));
    let (code, out, _) = toolbridge(&["workspaces", "clean", "--idle-days", "0"], &d);
    assert_eq!(code, 0);
    assert_eq!(out, "removed 1 workspace(s) idle for more than 0 day(s)\n");
    assert!(!workspaces(&d).join("new-one").exists());
}
