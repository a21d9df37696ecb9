//! The proof with real clients: the official `openai` Python and npm packages, unmodified, drive
//! the gateway (tests/clients/*) against the scripted upstream — in prompt mode (the upstream
//! writes `<tool_call>` text), native mode, and through a fallback from a failing arm.
//!
//! The packages are installed by `scripts/test.sh`, which exports `TOOLBRIDGE_PYTHON` (a venv's
//! interpreter) and `TOOLBRIDGE_NODE_MODULES`. Without them these tests fail and say so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use serde_json::json;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const KEY: &str = "sk-official-clients-test-key";
const FINAL: &str = "It is sunny and 24 C in Paris.";

fn env_or_fail(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, which installs the official \
             openai Python and npm packages and sets TOOLBRIDGE_PYTHON and TOOLBRIDGE_NODE_MODULES"
        )
    })
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("clients")
        .join(name)
}

/// The six answers each client script expects, in its order (see the scripts).
fn replies(call: impl Fn() -> Reply) -> Vec<Behavior> {
    let answer = || Reply::text(FINAL).with_chunk_size(5);
    vec![
        call().into(),
        answer().into(),
        call().into(),
        call().into(),
        answer().into(),
        answer().into(),
    ]
}

fn prompt_call() -> Reply {
    Reply::text(format!(
        "I will look that up.\n{}",
        call_text("get_weather", r#"{"city": "Paris"}"#)
    ))
    .with_chunk_size(7)
}

fn native_call() -> Reply {
    Reply::tool_call("get_weather", r#"{"city":"Paris"}"#).with_chunk_size(5)
}

/// Runs a client script to its end; panics with its output when it fails.
async fn run_client(program: String, args: Vec<String>, base_url: String, model: &str) {
    let model = model.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .args(&args)
            .arg(&base_url)
            .arg(&model)
            .env("TOOLBRIDGE_TEST_KEY", KEY)
            .env(
                "TOOLBRIDGE_NODE_MODULES",
                std::env::var("TOOLBRIDGE_NODE_MODULES").unwrap_or_default(),
            )
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains(": ok"), "{stdout}");
}

async fn python(base_url: String, model: &str) {
    let python = env_or_fail("TOOLBRIDGE_PYTHON");
    let args = vec![script("python_client.py").display().to_string()];
    run_client(python, args, base_url, model).await;
}

async fn node(base_url: String, model: &str) {
    env_or_fail("TOOLBRIDGE_NODE_MODULES");
    let node = std::env::var("TOOLBRIDGE_NODE").unwrap_or_else(|_| "node".to_owned());
    let args = vec![script("node_client.mjs").display().to_string()];
    run_client(node, args, base_url, model).await;
}

/// The second turns reached a prompt-mode upstream with the client's history re-encoded.
fn assert_history_reencoded(up: &TestUpstream) {
    let requests = up.requests();
    let second = &requests[1].body;
    assert!(second.get("tools").is_none());
    let messages = second["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(assistant["content"]
        .as_str()
        .unwrap()
        .contains("<tool_call>"));
    let result = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        result.contains(r#"<tool_result name="get_weather">"#),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_clients_in_prompt_mode() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all(replies(prompt_call));
    up.push_all(replies(prompt_call));
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt")],
        Some(KEY),
    )
    .await;
    python(gw.base_url(), "local").await;
    assert_history_reencoded(&up);
    node(gw.base_url(), "local").await;
    assert_eq!(up.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_clients_in_native_mode() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all(replies(native_call));
    up.push_all(replies(native_call));
    let gw = start_with_keys(
        server_config(),
        vec![single("gpt", &up, "native")],
        Some(KEY),
    )
    .await;
    python(gw.base_url(), "gpt").await;
    node(gw.base_url(), "gpt").await;
    assert_eq!(up.remaining(), 0);
    let second = &up.requests()[1].body;
    assert_eq!(second["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        second["messages"][1]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(second["messages"][2]["role"], "tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_clients_through_a_fallback() {
    let failing = TestUpstream::start().await.unwrap();
    let working = TestUpstream::start().await.unwrap();
    for _ in 0..12 {
        failing.push(Behavior::status(503, "overloaded"));
    }
    working.push_all(replies(prompt_call));
    working.push_all(replies(prompt_call));
    let smart = model(json!({
        "name": "smart",
        "arms": [arm(&failing, "native"), arm(&working, "prompt")],
    }));
    let gw = start_with_keys(server_config(), vec![smart], Some(KEY)).await;
    python(gw.base_url(), "smart").await;
    node(gw.base_url(), "smart").await;
    assert_eq!(
        failing.remaining(),
        0,
        "every request tried the failing arm first"
    );
    assert_eq!(working.remaining(), 0);
    let metrics = http()
        .get(format!("http://{}/metrics", gw.addr()))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("toolbridge_fallbacks_total 12"),
        "{metrics}"
    );
}
