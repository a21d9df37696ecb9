//! The proof with real Anthropic clients, unmodified, against `/v1/messages`: the official
//! `anthropic` Python package and `@anthropic-ai/sdk` npm package (tests/clients/anthropic_*),
//! and Claude Code itself (`claude -p`), whose `Read` tool call is scripted from the upstream —
//! once with the upstream in prompt mode (the text protocol carrying Claude Code's own large
//! tool set) and once native.
//!
//! The packages are installed by `scripts/test.sh`, which exports `TOOLBRIDGE_PYTHON` (a venv's
//! interpreter with `anthropic`), `TOOLBRIDGE_NODE_MODULES` (with `@anthropic-ai/sdk`) and
//! `TOOLBRIDGE_CLAUDE` (the `claude` program of `@anthropic-ai/claude-code`). Without them these
//! tests fail and say so. One test runs them all in turn against one gateway (the clients are
//! slow to start; the upstreams' queues are filled in the order the clients ask).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};
use toolbridge_gateway::ServerConfig;
use toolbridge_testkit::{Reply, TestUpstream};

const KEY: &str = "sk-anthropic-clients-test-key";
const FINAL: &str = "It is sunny and 24 C in Paris.";
const SECRET: &str = "the secret line is: violet-otter-42";

fn env_or_fail(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, which installs the \
             anthropic Python and npm packages and Claude Code and sets TOOLBRIDGE_PYTHON, \
             TOOLBRIDGE_NODE_MODULES and TOOLBRIDGE_CLAUDE"
        )
    })
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("clients")
        .join(name)
}

/// Runs a program to its end; panics with its output when it fails. Gives stdout.
async fn run(mut command: Command, what: &'static str) -> String {
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    stdout
}

fn prompt_call(name: &str, args: &str) -> Reply {
    Reply::text(format!("I will look that up.\n{}", call_text(name, args))).with_chunk_size(7)
}

/// The SDK clients: Python (create, stream, second turn, second turn streamed, count_tokens)
/// and npm (create, stream).
async fn sdk_clients(root: &str, up: &TestUpstream, model: &str, call: impl Fn() -> Reply) {
    let answer = || Reply::text(FINAL).with_chunk_size(5);
    up.push_all([
        call().into(),
        call().into(),
        answer().into(),
        answer().into(),
    ]);
    let mut python = Command::new(env_or_fail("TOOLBRIDGE_PYTHON"));
    python
        .arg(script("anthropic_client.py"))
        .arg(root)
        .arg(model)
        .env("TOOLBRIDGE_TEST_KEY", KEY);
    let out = run(python, "the anthropic Python client").await;
    assert!(out.contains(": ok"), "{out}");

    up.push_all([call().into(), call().into()]);
    let node = std::env::var("TOOLBRIDGE_NODE").unwrap_or_else(|_| "node".to_owned());
    let mut node = Command::new(node);
    node.arg(script("anthropic_client.mjs"))
        .arg(root)
        .arg(model)
        .env("TOOLBRIDGE_TEST_KEY", KEY)
        .env(
            "TOOLBRIDGE_NODE_MODULES",
            env_or_fail("TOOLBRIDGE_NODE_MODULES"),
        );
    let out = run(node, "the @anthropic-ai/sdk client").await;
    assert!(out.contains(": ok"), "{out}");
    assert_eq!(up.remaining(), 0, "every scripted answer was asked for");
}

/// Claude Code in a fresh home, every network use but the gateway turned off.
fn claude(root: &str, model: &str, home: &Path, workdir: &Path) -> Command {
    let mut c = Command::new(env_or_fail("TOOLBRIDGE_CLAUDE"));
    c.current_dir(workdir)
        .args(["-p", "Read the file notes.txt and tell me its secret line."])
        .args(["--output-format", "json", "--model", model])
        .args(["--allowedTools", "Read"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("ANTHROPIC_BASE_URL", root)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_SMALL_FAST_MODEL", "tb-aux")
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "tb-aux")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_BUG_COMMAND", "1")
        .env("DISABLE_NON_ESSENTIAL_MODEL_CALLS", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    c
}

/// Whether a recorded upstream request carries the file's content as a tool result.
fn carries_tool_result(body: &Value) -> bool {
    body["messages"].as_array().is_some_and(|messages| {
        messages.iter().any(|m| {
            let text = m.to_string();
            text.contains(SECRET) && (m["role"] == "tool" || text.contains("<tool_result"))
        })
    })
}

/// Claude Code's first request is answered with a call to its `Read` tool on a file written
/// here (native or as `<tool_call>` text), the next with a final answer.
async fn claude_code(root: &str, up: &TestUpstream, model: &str, native: bool) {
    let dir = tempfile_dir(model);
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let file = work.join("notes.txt");
    std::fs::write(&file, format!("Some notes.\n{SECRET}\nMore notes.\n")).unwrap();
    let args = json!({"file_path": file.display().to_string()}).to_string();
    let call = if native {
        Reply::tool_call("Read", args)
    } else {
        prompt_call("Read", &args)
    };
    up.push_all([
        call.into(),
        Reply::text(format!("The file says: {SECRET}"))
            .with_chunk_size(9)
            .into(),
    ]);
    let out = run(claude(root, model, &home, &work), "Claude Code").await;
    let result: Value = serde_json::from_str(out.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("Claude Code's output is not JSON ({e}): {out}"));
    assert_eq!(result["is_error"], false, "{out}");
    assert!(
        result["result"].as_str().unwrap_or("").contains(SECRET),
        "{out}"
    );
    let requests = up.requests();
    assert!(
        requests.iter().any(|r| carries_tool_result(&r.body)),
        "no upstream request carried the Read result: {:#?}",
        requests
            .iter()
            .map(|r| &r.body["messages"])
            .collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolbridge-claude-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_clients_and_claude_code() {
    let prompt = TestUpstream::start().await.unwrap();
    let native = TestUpstream::start().await.unwrap();
    let cc_prompt = TestUpstream::start().await.unwrap();
    let cc_native = TestUpstream::start().await.unwrap();
    let aux = TestUpstream::start().await.unwrap();
    // Claude Code's side requests (titles, summaries) go to the small model.
    aux.set_default(Some(Reply::text("ok").into()));
    let config = ServerConfig {
        model_map: [("tb-aux", "aux"), ("claude-*", "aux")]
            .into_iter()
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .collect(),
        ..server_config()
    };
    let gw = start_with_keys(
        config,
        vec![
            single("local", &prompt, "prompt"),
            single("gpt", &native, "native"),
            single("cc-prompt", &cc_prompt, "prompt"),
            single("cc-native", &cc_native, "native"),
            single("aux", &aux, "prompt"),
        ],
        Some(KEY),
    )
    .await;
    let root = format!("http://{}", gw.addr());

    sdk_clients(&root, &prompt, "local", || {
        prompt_call("get_weather", r#"{"city": "Paris"}"#)
    })
    .await;
    // The prompt-mode upstream got the tool_result re-encoded in the text protocol.
    let third = &prompt.requests()[2].body;
    let last = third["messages"].as_array().unwrap().last().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains(r#"<tool_result name="get_weather">"#),
        "{third}"
    );
    sdk_clients(&root, &native, "gpt", || {
        Reply::tool_call("get_weather", r#"{"city":"Paris"}"#).with_chunk_size(5)
    })
    .await;
    assert_eq!(native.requests()[2].body["messages"][2]["role"], "tool");

    claude_code(&root, &cc_prompt, "cc-prompt", false).await;
    // The text protocol carried Claude Code's own tool set, `Read` among it.
    let first = &cc_prompt.requests()[0].body;
    assert!(first.get("tools").is_none());
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("### Read"));
    claude_code(&root, &cc_native, "cc-native", true).await;
    assert!(cc_native.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "Read"));
}
