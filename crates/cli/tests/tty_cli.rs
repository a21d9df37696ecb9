//! Issue 19 item 3, what happens only on a terminal (a pseudo-terminal from util-linux `script`,
//! see `common/pty.rs`): the spinner while the model has not answered, `chat`'s Markdown, colour
//! switched off by NO_COLOR and `--color never`, keys typed during an answer not echoed into
//! it, and Ctrl-C dropping the turn it cancels.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::pty::Pty;
use common::{exit_and_text, script, temp_dir};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const WAITING: &str = "waiting for the model";
const MARKDOWN: &str = "# Plan\nSome **bold** words.\n";

#[test]
fn the_spinner_shows_on_a_terminal_until_the_first_token() {
    let d = temp_dir("tty", "spinner");
    let model = script(&d, serde_json::json!(["The answer."]));
    let pty = Pty::toolbridge(&["run", "--model", &model, "go"], &d, &[], "");
    let out = pty.finish();
    assert!(out.contains("exit=0"), "{out}");
    let spinner = out
        .rfind(WAITING)
        .unwrap_or_else(|| panic!("no spinner: {out:?}"));
    let answer = out.find("The answer.").unwrap();
    assert!(spinner < answer, "{out:?}");
    assert!(
        out[spinner..answer].contains("\r\x1b[2K"),
        "the spinner's line is cleared before the answer: {out:?}"
    );

    // Without a terminal there is no spinner (and stderr carries nothing of it).
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(["run", "--model", &model, "go"])
        .current_dir(&d)
        .env("HOME", &d)
        .output()
        .unwrap();
    let (code, stdout, stderr) = exit_and_text(out);
    assert_eq!((code, stdout.as_str()), (0, "The answer.\n"), "{stderr}");
    assert!(!stderr.contains(WAITING), "{stderr}");
}

/// `chat` on a terminal answering MARKDOWN once, with `extra` flags and `env`; what it showed.
fn chat_once(name: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let d = temp_dir("tty", name);
    let model = script(&d, serde_json::json!([MARKDOWN]));
    let mut args = vec!["chat", "--model", &model];
    args.extend_from_slice(extra);
    let mut pty = Pty::toolbridge(&args, &d, env, "");
    pty.expect("/help lists the commands");
    pty.send(b"hi\n");
    let at = pty.expect("words.");
    pty.expect_from(at, "› ");
    pty.send(b"/exit\n");
    let out = pty.finish();
    assert!(out.contains("exit=0"), "{out}");
    assert!(
        out.contains(WAITING),
        "chat waits with a spinner too: {out:?}"
    );
    out
}

#[test]
fn chat_renders_markdown_on_a_terminal() {
    let out = chat_once("markdown", &[], &[]);
    assert!(
        out.contains("\x1b[1m\x1b[4mPlan\x1b[24m\x1b[22m"),
        "{out:?}"
    );
    assert!(out.contains("Some \x1b[1mbold\x1b[22m words."), "{out:?}");
}

#[test]
fn no_color_and_color_never_show_the_answer_as_written() {
    for (name, extra, env) in [
        ("no-color", &[][..], &[("NO_COLOR", "1")][..]),
        ("never", &["--color", "never"][..], &[][..]),
    ] {
        let out = chat_once(name, extra, env);
        assert!(
            out.contains("# Plan") && out.contains("Some **bold** words."),
            "{name}: {out:?}"
        );
        assert!(!out.contains("\x1b[1mbold"), "{name}: {out:?}");
    }
}

#[test]
fn keys_typed_during_an_answer_are_not_echoed_and_ctrl_c_drops_the_turn() {
    let d = temp_dir("tty", "cancel");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(TestUpstream::start()).unwrap();
    // The first answer stops after its first piece and would go on only after two minutes.
    upstream.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: std::time::Duration::from_secs(120),
        reply: Reply::text("First part of the answer. The rest.").with_chunk_size(25),
    });
    upstream.push(Behavior::Reply(Reply::text("Second answer.")));
    let model = format!("openai:m@{}", upstream.base_url());
    let mut pty = Pty::toolbridge(
        &["chat", "--model", &model],
        &d,
        &[],
        // After chat: the terminal's modes, to see that echo is back on.
        "stty -a",
    );
    pty.expect("/help lists the commands");
    pty.send(b"first question\n");
    let first = pty.expect("First part of the answer.");
    // Typed while the answer streams, then Ctrl-C. With echo on, the terminal would show the
    // keys (and ^C) at once, inside the answer.
    pty.send(b"zzz");
    pty.send(b"\x03");
    let note = pty.expect_from(
        first,
        "cancelled: this turn is dropped from the conversation",
    );
    let shown = pty.output();
    assert!(!shown[first..note].contains("zzz"), "{shown:?}");
    assert!(!shown[first..note].contains("^C"), "{shown:?}");
    pty.expect_from(note, "› ");
    pty.send(b"second question\n");
    let second = pty.expect_from(note, "Second answer.");
    pty.expect_from(second, "› ");
    pty.send(b"/save conversation.json\n");
    pty.expect_from(second, "conversation saved");
    pty.send(b"/exit\n");
    let out = pty.finish();
    assert!(out.contains("exit=0"), "{out}");
    let modes = &out[out.find("exit=0").unwrap()..];
    assert!(
        modes.contains(" echo ") && !modes.contains("-echo "),
        "echo is restored when chat ends: {modes}"
    );

    // The cancelled turn is gone: from the conversation sent next, and from the one saved.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body["messages"].to_string();
    assert!(
        sent.contains("second question") && !sent.contains("first question"),
        "{sent}"
    );
    assert!(!sent.contains("First part"), "{sent}");
    let saved = std::fs::read_to_string(d.join("conversation.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let messages = saved["messages"].to_string();
    assert!(
        messages.contains("second question")
            && messages.contains("Second answer.")
            && !messages.contains("first question"),
        "{messages}"
    );
    drop(runtime);
}
