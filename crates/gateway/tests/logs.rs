//! Keys never appear in the gateway's logs. This test has a binary of its own: `tracing` caches
//! each call site's interest process-wide, so other tests hitting the same call sites on other
//! threads without a subscriber could hide events from this test's thread-local subscriber.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const KEY_A: &str = "sk-gw-test-aaaaaaaaaaaaaaaa";

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// Current-thread runtime: every task runs on this thread, so the thread-local subscriber sees
// the gateway's logs too.
#[tokio::test(flavor = "current_thread")]
async fn keys_never_appear_in_logs() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("hi").into());
    up.push(Behavior::status(500, "boom"));
    // Issue 13 item 20: a model whose server is down.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = model(serde_json::json!({
        "name": "down", "base_url": format!("http://{closed}/v1"), "upstream_model": "gone",
        "max_retries": 0,
    }));
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt"), down],
        Some(KEY_A),
    )
    .await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let wrong = "sk-gw-test-wrong-wrong-wrong";
    for key in [KEY_A, wrong, KEY_A] {
        client
            .post(&url)
            .bearer_auth(key)
            .json(&tool_request("local", false))
            .send()
            .await
            .unwrap();
    }
    let res = client
        .post(&url)
        .bearer_auth(KEY_A)
        .json(&tool_request("down", false))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 502);
    let answer = res.text().await.unwrap();
    assert!(
        answer.contains("upstream error (connect)") && !answer.contains(&closed.to_string()),
        "the client's error names no upstream: {answer}"
    );
    gw.shutdown().await.unwrap();
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains(&format!("openai model `gone` at http://{closed}/v1"))
            && text.contains("is the server running"),
        "the operator's log says where: {text}"
    );
    assert!(
        text.contains("upstream failed"),
        "logs were captured: {text}"
    );
    assert!(!text.contains(KEY_A) && !text.contains(wrong), "{text}");
    assert!(!text.contains("aaaaaaaa"), "{text}");
}

/// Words of the prompt no log line may carry.
const SECRET_PROMPT: &str = "zebra-quartz-prompt-words";

/// Runs `f` with a TRACE subscriber writing into a buffer on this thread; returns the log text.
async fn logged<F: std::future::Future<Output = ()>>(f: F) -> String {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    f.await;
    drop(guard);
    let bytes = logs.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// The access-log lines of `text`.
fn access_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("toolbridge::access"))
        .collect()
}

/// Asserts one access line for `path`, with each of `fields`, and no key or prompt anywhere.
fn assert_one_line(text: &str, path: &str, fields: &[&str]) {
    let lines: Vec<&str> = access_lines(text)
        .into_iter()
        .filter(|l| l.contains(&format!("path={path} ")))
        .collect();
    assert_eq!(lines.len(), 1, "one access line for {path}: {text}");
    let line = lines[0];
    assert!(line.contains(" INFO "), "at info: {line}");
    for field in fields {
        assert!(line.contains(field), "{field} in {line}");
    }
    assert!(
        line.contains("duration_ms="),
        "the line has a duration: {line}"
    );
    assert!(!text.contains(KEY_A), "no key in the logs: {text}");
    assert!(
        !text.contains(SECRET_PROMPT),
        "no prompt text in the logs: {text}"
    );
}

fn prompt_request(model: &str, stream: bool) -> serde_json::Value {
    serde_json::json!({
        "model": model,
        "stream": stream,
        "messages": [{"role": "user", "content": SECRET_PROMPT}],
    })
}

#[tokio::test(flavor = "current_thread")]
async fn a_chat_completion_logs_one_access_line() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        up.push(Reply::text("hello there").with_usage(11, 7).into());
        let gw = start_with_keys(
            server_config(),
            vec![single("local", &up, "prompt")],
            Some(KEY_A),
        )
        .await;
        let res = http()
            .post(format!("{}/chat/completions?key={KEY_A}", gw.base_url()))
            .bearer_auth(KEY_A)
            .json(&prompt_request("local", false))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.text().await.unwrap();
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(
        &text,
        "/v1/chat/completions",
        &[
            "method=POST",
            "status=200",
            "model=\"local\"",
            "arm=\"openai:mock-model@",
            "mode=\"prompt\"",
            "stream=false",
            "input_tokens=11",
            "output_tokens=7",
        ],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_streamed_chat_completion_logs_one_access_line_with_its_usage() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        up.push(Reply::text("hello there").with_usage(13, 5).into());
        let gw = start_with_keys(
            server_config(),
            vec![single("local", &up, "native")],
            Some(KEY_A),
        )
        .await;
        let res = http()
            .post(format!("{}/chat/completions", gw.base_url()))
            .bearer_auth(KEY_A)
            .json(&prompt_request("local", true))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body = res.text().await.unwrap();
        assert!(body.contains("[DONE]"), "{body}");
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(
        &text,
        "/v1/chat/completions",
        &[
            "status=200",
            "model=\"local\"",
            "mode=\"native\"",
            "stream=true",
            "input_tokens=13",
            "output_tokens=5",
        ],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_messages_call_logs_one_access_line() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        up.push(Reply::text("hello there").with_usage(17, 3).into());
        let gw = start_with_keys(
            server_config(),
            vec![single("claude-local", &up, "prompt")],
            Some(KEY_A),
        )
        .await;
        let res = http()
            .post(format!("{}/messages", gw.base_url()))
            .header("x-api-key", KEY_A)
            .header("anthropic-version", "2023-06-01")
            .json(&serde_json::json!({
                "model": "claude-local",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": SECRET_PROMPT}],
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.text().await.unwrap();
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(
        &text,
        "/v1/messages",
        &[
            "status=200",
            "model=\"claude-local\"",
            "arm=\"openai:mock-model@",
            "mode=\"prompt\"",
            "stream=false",
            "input_tokens=17",
            "output_tokens=3",
        ],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_responses_call_logs_one_access_line() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        up.push(Reply::text("hello there").with_usage(19, 2).into());
        let gw = start_with_keys(
            server_config(),
            vec![single("local", &up, "prompt")],
            Some(KEY_A),
        )
        .await;
        let res = http()
            .post(format!("{}/responses", gw.base_url()))
            .bearer_auth(KEY_A)
            .json(&serde_json::json!({
                "model": "local",
                "input": SECRET_PROMPT,
                "store": false,
            }))
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body = res.text().await.unwrap();
        assert_eq!(status, 200, "{body}");
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(
        &text,
        "/v1/responses",
        &[
            "status=200",
            "model=\"local\"",
            "arm=\"openai:mock-model@",
            "mode=\"prompt\"",
            "stream=false",
            "input_tokens=19",
            "output_tokens=2",
        ],
    );
}

/// An agent served as a chat model runs the loop server-side: its line has the arm that
/// answered, its mode and the usage of every round.
#[tokio::test(flavor = "current_thread")]
async fn an_agent_served_as_a_chat_model_logs_its_arm_and_the_usage_of_every_round() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        // The agent offers no tools: one round answers.
        up.push(Reply::text("hello from the agent").with_usage(23, 4).into());
        let mut config = server_config();
        config.agents = vec![toolbridge_gateway::AgentModel {
            name: "helper".to_owned(),
            model: "local".to_owned(),
            tools: Vec::new(),
            instructions: None,
        }];
        let gw = start_with_keys(config, vec![single("local", &up, "native")], Some(KEY_A)).await;
        let res = http()
            .post(format!("{}/chat/completions", gw.base_url()))
            .bearer_auth(KEY_A)
            .json(&prompt_request("helper", false))
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body = res.text().await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("hello from the agent"), "{body}");
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(
        &text,
        "/v1/chat/completions",
        &[
            "status=200",
            "model=\"helper\"",
            "arm=\"openai:mock-model@",
            "mode=\"native\"",
            "input_tokens=23",
            "output_tokens=4",
        ],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_refused_request_logs_its_status_and_no_query_string() {
    let text = logged(async {
        let up = TestUpstream::start().await.unwrap();
        let gw = start_with_keys(
            server_config(),
            vec![single("local", &up, "prompt")],
            Some(KEY_A),
        )
        .await;
        let res = http()
            .get(format!("{}/models?api_key={KEY_A}", gw.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        gw.shutdown().await.unwrap();
    })
    .await;
    assert_one_line(&text, "/v1/models", &["method=GET", "status=401"]);
    assert!(!text.contains("api_key="), "no query string: {text}");
}
