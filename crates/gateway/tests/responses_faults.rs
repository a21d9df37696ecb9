//! The Responses API under faults (issue 15, "Proof"): an upstream failing after a tool round
//! ends the stream with `response.failed` and a sanitized error; a hosted tool that times out
//! gives the model the protocol's sentence and the run goes on; a client leaving a stream of a
//! non-background response cancels it; `/cancel` ends a background one; the per-user limit on
//! running responses answers 429. State in SQLite in a temporary folder; the hosted tool is
//! `python_execute` in the real sandbox (TOOLBRIDGE_SANDBOX_PYTHON, set by scripts/test.sh).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolbridge_gateway::{Gateway, ResponsesConfig, RunningGateway, ServerConfig};
use toolbridge_protocol::texts;
use toolbridge_providers::Model;
use toolbridge_runtime::{AgentSection, Config};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::responses::{create, events, get, post, wait_for_status, weather};
use common::{
    http, model, model_entry, runtime_gateway, sandbox_python, server_config, single, KEYS_VAR,
};

/// How long a test waits for something that should happen at once (a bound, not a timing
/// claim: a slow machine only makes it wait longer).
const PATIENCE: Duration = Duration::from_secs(20);

/// A server configuration with its state in `dir`.
fn config_in(dir: &tempfile::TempDir) -> ServerConfig {
    let mut config = server_config();
    config.state.path = Some(dir.path().join("state.sqlite3"));
    config
}

/// A gateway over a composition root whose `[tools]` enable `python_execute` (workspaces in
/// `dir`) and whose `[agent] tool_timeout_secs` is `tool_timeout`; model `m` is `up`.
async fn hosted_gateway(
    up: &TestUpstream,
    dir: &tempfile::TempDir,
    tool_timeout: u64,
) -> RunningGateway {
    let model = model_entry("m", up, "native");
    let tools = serde_json::from_value(json!({
        "enabled": ["python_execute"],
        "sandbox": {"python": sandbox_python()},
        "workspaces": {"root": dir.path().join("workspaces")},
    }))
    .unwrap();
    let config = Config {
        models: vec![model],
        agent: AgentSection {
            tool_timeout_secs: Some(tool_timeout),
            ..AgentSection::default()
        },
        tools,
        ..Config::default()
    };
    runtime_gateway(config, config_in(dir)).await
}

/// A gateway of models only, with keys and `[server.responses]` as given.
async fn plain_gateway(
    dir: &tempfile::TempDir,
    models: Vec<Model>,
    keys: &str,
    responses: ResponsesConfig,
) -> RunningGateway {
    let mut config = config_in(dir);
    config.responses = responses;
    let env = BTreeMap::from([(KEYS_VAR.to_owned(), keys.to_owned())]);
    Gateway::new(config, models, &env)
        .unwrap()
        .spawn()
        .await
        .unwrap()
}

fn code_interpreter() -> Value {
    json!({"type": "code_interpreter", "container": {"type": "auto"}})
}

/// An upstream that starts one streamed answer ("Hel") and then holds the connection until the
/// gateway closes it; the receiver fires when it did (or after 60 s at most).
async fn hanging_upstream() -> (String, tokio::sync::oneshot::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let mut seen = Vec::new();
        // The request head and its Content-Length body first.
        loop {
            let n = s.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if seen.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let event = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
        s.write_all(chunk.as_bytes()).await.unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        let _ = tx.send(());
    });
    (format!("http://{addr}/v1"), rx)
}

/// A model `name` on the hanging upstream (no retries; its idle limit longer than the tests).
fn hanging_model(name: &str, url: &str) -> Model {
    model(json!({
        "name": name,
        "base_url": url,
        "upstream_model": "m",
        "tool_mode": "native",
        "max_retries": 0,
        "idle_timeout_secs": 120.0,
    }))
}

/// Waits for the hanging upstream to see its connection closed.
async fn closed(rx: tokio::sync::oneshot::Receiver<()>) {
    tokio::time::timeout(PATIENCE, rx)
        .await
        .expect("the upstream request was not dropped")
        .unwrap();
}

#[tokio::test]
async fn an_upstream_failure_after_a_tool_round_streams_response_failed_with_a_sanitized_error() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::tool_call(
        "python_execute",
        r#"{"code":"print(6 * 7)"}"#,
    )));
    up.push(Behavior::status(
        500,
        "secret upstream detail at http://10.1.2.3:8000/internal",
    ));
    let dir = tempfile::tempdir().unwrap();
    let gw = hosted_gateway(&up, &dir, 60).await;
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&json!({"model": "m", "input": "Compute 6 * 7.", "tools": [code_interpreter()], "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.text().await.unwrap();
    let evs = events(&body);
    // The tool round ran (its output reached the model), then the model request failed.
    let requests = up.requests();
    assert_eq!(requests.len(), 2, "{body}");
    assert!(
        requests[1].body.to_string().contains("42"),
        "{:?}",
        requests[1].body
    );
    assert!(
        evs.iter()
            .any(|(k, _)| k == "response.code_interpreter_call.completed"),
        "{body}"
    );
    let (kind, last) = evs.last().unwrap();
    assert_eq!(kind, "response.failed", "{body}");
    let failed = &last["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "server_error");
    assert!(failed["error"]["message"].as_str().unwrap().len() > 10);
    assert!(
        failed["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "code_interpreter_call"),
        "{failed}"
    );
    for leak in ["secret", "10.1.2.3", "8000", "internal"] {
        assert!(!body.contains(leak), "`{leak}` reached the client: {body}");
    }
    let id = failed["id"].as_str().unwrap();
    let (status, stored) = get(&gw, None, &format!("/responses/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(stored["status"], "failed");
    assert!(!stored.to_string().contains("secret"), "{stored}");
}

#[tokio::test]
async fn a_hosted_tool_that_times_out_gives_the_model_the_timed_out_text_and_the_run_answers() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::tool_call(
        "python_execute",
        r#"{"code":"import time\ntime.sleep(60)\nprint('woke')"}"#,
    )));
    up.push(Behavior::Reply(Reply::text(
        "The computation took too long.",
    )));
    let dir = tempfile::tempdir().unwrap();
    let gw = hosted_gateway(&up, &dir, 1).await;
    let (status, body) = create(
        &gw,
        None,
        json!({"model": "m", "input": "Sleep a minute.", "tools": [code_interpreter()]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["output_text"], "The computation took too long.");
    let call = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "code_interpreter_call")
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    assert_eq!(call["status"], "failed", "{call}");
    // What the model read for the call ends with the protocol's sentence for an interrupted
    // cell (python_execute interrupts its own cell at the call's deadline, so the interpreter
    // and its variables survive; the toolbox's cut-off comes later and keeps the generic
    // `ERROR_TIMED_OUT` for tools without a timeout of their own).
    let requests = up.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{messages:?}"));
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.ends_with(&texts::python_cell_timeout(1)),
        "{content}"
    );
    assert!(content.contains("KeyboardInterrupt"), "{content}");
    assert!(
        !content.contains("woke"),
        "the cell never finished: {content}"
    );
}

#[tokio::test]
async fn a_client_leaving_a_stream_cancels_the_response_and_its_upstream_request() {
    let (url, hung_up) = hanging_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = plain_gateway(
        &dir,
        vec![hanging_model("hang", &url)],
        "sk-ada",
        ResponsesConfig::default(),
    )
    .await;
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .bearer_auth("sk-ada")
        .json(&json!({"model": "hang", "input": "Talk to me.", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("response.output_text.delta") {
        let chunk = body.next().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let created = events(&seen[..seen.find("\n\n").unwrap() + 2]);
    let id = created[0].1["response"]["id"].as_str().unwrap().to_owned();
    let (_, running) = get(&gw, Some("sk-ada"), &format!("/responses/{id}")).await;
    assert_eq!(running["status"], "in_progress", "{running}");
    drop(body); // the client goes away mid-stream

    closed(hung_up).await;
    let stored = wait_for_status(&gw, Some("sk-ada"), &id, "cancelled", PATIENCE).await;
    assert_eq!(stored["background"], false);
}

#[tokio::test]
async fn cancelling_a_background_response_stops_its_upstream_request_and_stores_cancelled() {
    let (url, hung_up) = hanging_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = plain_gateway(
        &dir,
        vec![hanging_model("hang", &url)],
        "sk-ada,sk-bob",
        ResponsesConfig::default(),
    )
    .await;
    let (status, started) = create(
        &gw,
        Some("sk-ada"),
        json!({"model": "hang", "input": "Take your time.", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "queued");
    let id = started["id"].as_str().unwrap().to_owned();
    let (_, running) = get(&gw, Some("sk-ada"), &format!("/responses/{id}")).await;
    assert_eq!(running["status"], "in_progress", "{running}");
    // Another key cannot cancel it.
    let (status, _) = post(
        &gw,
        Some("sk-bob"),
        &format!("/responses/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 404);

    let (status, cancelled) = post(
        &gw,
        Some("sk-ada"),
        &format!("/responses/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["id"], id.as_str());
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    closed(hung_up).await;
    let stored = wait_for_status(&gw, Some("sk-ada"), &id, "cancelled", PATIENCE).await;
    assert_eq!(stored["error"], Value::Null, "{stored}");
}

#[tokio::test]
async fn beyond_max_concurrent_per_user_a_response_gets_429_until_one_ends() {
    let (url, hung_up) = hanging_upstream().await;
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Behavior::Reply(Reply::text("quick"))));
    let dir = tempfile::tempdir().unwrap();
    let gw = plain_gateway(
        &dir,
        vec![hanging_model("hang", &url), single("m", &up, "native")],
        "sk-ada,sk-bob",
        ResponsesConfig {
            max_concurrent_per_user: 1,
            ..ResponsesConfig::default()
        },
    )
    .await;
    let (status, running) = create(
        &gw,
        Some("sk-ada"),
        json!({"model": "hang", "input": "Take your time.", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{running}");
    let id = running["id"].as_str().unwrap().to_owned();

    for body in [
        json!({"model": "m", "input": "And this?"}),
        json!({"model": "m", "input": "And this?", "stream": true}),
        json!({"model": "m", "input": "And this?", "tools": [weather()], "background": true}),
    ] {
        let resp = http()
            .post(format!("{}/responses", gw.base_url()))
            .bearer_auth("sk-ada")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 429, "{body}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(
            err["error"]["code"], "too_many_concurrent_responses",
            "{err}"
        );
    }
    assert!(
        up.requests().is_empty(),
        "a refused response called no model"
    );
    // The limit is per user: another key is served meanwhile.
    let (status, other) = create(&gw, Some("sk-bob"), json!({"model": "m", "input": "Hi."})).await;
    assert_eq!(status, 200, "{other}");
    assert_eq!(other["output_text"], "quick");

    // Once the running one ends, the user is admitted again.
    let (status, _) = post(
        &gw,
        Some("sk-ada"),
        &format!("/responses/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    closed(hung_up).await;
    wait_for_status(&gw, Some("sk-ada"), &id, "cancelled", PATIENCE).await;
    let (status, again) = create(&gw, Some("sk-ada"), json!({"model": "m", "input": "Now?"})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "completed");
}
