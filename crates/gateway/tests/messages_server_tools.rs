//! Anthropic's server tools on `/v1/messages`, run server-side by a gateway made from a
//! composition root whose `[tools]` enable `python_execute`, `web_search` (against a loopback
//! SearxNG fake) and `web_fetch` (a loopback page the fetch policy allows): `server_tool_use`
//! blocks each followed by its result block, then the text, plain and streamed as Anthropic
//! streams them; the interpreter kept per conversation (`x-toolbridge-conversation`,
//! `metadata.user_id`) and the history's server blocks read back for the model; the client's
//! own tools beside them as `tool_use` with `stop_reason: tool_use`; server tools the
//! configuration lacks refused by name; and the official `anthropic` Python package parsing it
//! all.
//!
//! Needs the sandbox's Python (`TOOLBRIDGE_SANDBOX_PYTHON`) and, for the SDK test, a Python with
//! `anthropic` (`TOOLBRIDGE_PYTHON`); `scripts/test.sh` sets both.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::extract::Query;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use toolbridge_gateway::RunningGateway;
use toolbridge_runtime::Config;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::{
    anthropic_events, http, model_entry, runtime_gateway, sandbox_python, server_config, single,
    start,
};

const CODE_TOOL: &str = "code_execution_20250825";
const PAGE_TEXT: &str = "Sea otters hold hands while they sleep so that they do not drift apart.";

struct Setup {
    gw: RunningGateway,
    /// The loopback page web_fetch may read.
    page: String,
    _dir: Dir,
}

struct Dir(std::path::PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

/// A SearxNG JSON API fake (two hits per query) and a page, on loopback.
async fn backends() -> (SocketAddr, SocketAddr) {
    let searx = Router::new().route(
        "/search",
        get(|Query(q): Query<BTreeMap<String, String>>| async move {
            let query = q.get("q").cloned().unwrap_or_default();
            let results: Vec<Value> = (1..=2)
                .map(|i| json!({"url": format!("https://otters.example/{i}"), "title": format!("{query} page {i}"), "content": format!("Snippet {i} about {query}."), "engine": "fake"}))
                .collect();
            Json(json!({"query": query, "results": results}))
        }),
    );
    let page = Router::new().route(
        "/otters",
        get(|| async {
            (
                [("content-type", "text/html; charset=utf-8")],
                format!(
                    "<html><head><title>Otter facts</title></head><body><article><h1>Otter facts</h1>\
                     <p>{PAGE_TEXT}</p><p>They also keep a favourite stone in a pouch under the arm, \
                     and use it to crack shells open on their chests while floating.</p></article></body></html>"
                ),
            )
        }),
    );
    (serve(searx).await, serve(page).await)
}

async fn setup(up: &TestUpstream, enabled: &[&str]) -> Setup {
    let dir = std::env::temp_dir().join(format!(
        "tb-msgtools-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let (searx, page) = backends().await;
    let tools: toolbridge_tools::ToolsConfig = toml::from_str(&format!(
        "enabled = {enabled:?}\n[sandbox]\npython = {:?}\n[workspaces]\nroot = {:?}\n\
         [search]\nbackend = \"searxng\"\nbase_url = \"http://{searx}\"\n\
         [fetch]\nallowed_ports = [{}]\nallow = [\"127.0.0.1/32\"]\n",
        sandbox_python(),
        dir.join("ws").display().to_string(),
        page.port(),
    ))
    .unwrap();
    let config = Config {
        models: vec![model_entry("m", up, "native")],
        tools,
        ..Config::default()
    };
    let mut server = server_config();
    server.state.path = Some(dir.join("state.sqlite3"));
    let gw = runtime_gateway(config, server).await;
    Setup {
        gw,
        page: format!("http://{page}/otters"),
        _dir: Dir(dir),
    }
}

async fn all_tools(up: &TestUpstream) -> Setup {
    setup(up, &["python_execute", "web_search", "web_fetch"]).await
}

fn python_call(code: &str) -> Reply {
    Reply::tool_call("python_execute", json!({ "code": code }).to_string())
}

fn url(gw: &RunningGateway) -> String {
    format!("http://{}/v1/messages", gw.addr())
}

/// A plain (non-streaming) answer; panics unless it is a 200.
async fn create(gw: &RunningGateway, body: Value, conversation: Option<&str>) -> Value {
    let mut request = http().post(url(gw)).json(&body);
    if let Some(c) = conversation {
        request = request.header("x-toolbridge-conversation", c);
    }
    let resp = request.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn code_request(question: &str) -> Value {
    json!({
        "model": "m", "max_tokens": 512,
        "tools": [{"type": CODE_TOOL, "name": "code_execution"}],
        "messages": [{"role": "user", "content": question}],
    })
}

fn types(message: &Value) -> Vec<String> {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn code_execution_runs_in_the_conversations_interpreter_and_answers_in_server_tool_blocks() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(python_call("x = 6 * 7\nprint(x)")),
        Behavior::Reply(Reply::text("It is 42.").with_usage(30, 4)),
        Behavior::Reply(python_call("print(x + 1)")),
        Behavior::Reply(Reply::text("Plus one is 43.")),
        Behavior::Reply(python_call("print(x + 1)")),
        Behavior::Reply(Reply::text("x is not defined here.")),
    ]);
    let s = all_tools(&up).await;

    let first = create(&s.gw, code_request("What is 6 * 7?"), Some("conv-a")).await;
    assert_eq!(
        types(&first),
        ["server_tool_use", "code_execution_tool_result", "text"],
        "{first}"
    );
    let use_ = &first["content"][0];
    let id = use_["id"].as_str().unwrap();
    assert!(id.starts_with("srvtoolu_"), "{use_}");
    assert_eq!(use_["name"], "code_execution");
    assert_eq!(use_["input"], json!({"code": "x = 6 * 7\nprint(x)"}));
    let result = &first["content"][1];
    assert_eq!(result["tool_use_id"], id);
    assert_eq!(result["content"]["type"], "code_execution_result");
    assert_eq!(result["content"]["stdout"], "42", "{result}");
    assert_eq!(result["content"]["stderr"], "");
    assert_eq!(result["content"]["return_code"], 0);
    assert_eq!(result["content"]["content"], json!([]));
    assert_eq!(first["content"][2]["text"], "It is 42.");
    assert!(first["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(first["model"], "m");
    assert_eq!(first["stop_reason"], "end_turn");
    assert_eq!(
        first["usage"]["server_tool_use"],
        json!({"web_search_requests": 0, "web_fetch_requests": 0})
    );
    // The model ran the built-in and read its output as a tool result.
    let second_round = &up.requests()[1].body;
    let tool_names: Vec<&str> = second_round["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    // Only the built-in behind the requested server tool (beside the server's own, skills).
    assert!(tool_names.contains(&"python_execute"), "{tool_names:?}");
    assert!(
        !tool_names.contains(&"web_search") && !tool_names.contains(&"web_fetch"),
        "{tool_names:?}"
    );
    let last = second_round["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["content"], "42");

    // The next turn of the same conversation: the history's server blocks go back to the model
    // as its call and result, and the interpreter still holds `x`.
    let mut next = code_request("And plus one?");
    next["messages"] = json!([
        {"role": "user", "content": "What is 6 * 7?"},
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": "And plus one?"},
    ]);
    let second = create(&s.gw, next.clone(), Some("conv-a")).await;
    assert_eq!(second["content"][1]["content"]["stdout"], "43", "{second}");
    let replayed = &up.requests()[2].body["messages"];
    let replayed = replayed.as_array().unwrap();
    let call = replayed.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["id"], id);
    assert_eq!(call["tool_calls"][0]["function"]["name"], "python_execute");
    assert!(replayed
        .iter()
        .any(|m| m["role"] == "tool" && m["tool_call_id"] == id && m["content"] == "42"));

    // Another conversation has another interpreter: `x` is unknown there.
    let other = create(&s.gw, next, Some("conv-b")).await;
    let content = &other["content"][1]["content"];
    assert_eq!(content["return_code"], 1, "{other}");
    assert_eq!(content["stdout"], "");
    assert!(
        content["stderr"].as_str().unwrap().contains("NameError"),
        "{other}"
    );
    assert_eq!(up.remaining(), 0);
}

#[tokio::test]
async fn code_execution_streams_its_blocks_in_anthropics_order() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(
            Reply::text("Let me compute.")
                .with_tool_call(
                    "python_execute",
                    json!({"code": "x = 6 * 7\nprint(x)"}).to_string(),
                )
                .with_chunk_size(4),
        ),
        Behavior::Reply(Reply::text("It is 42.").with_chunk_size(3)),
    ]);
    let s = all_tools(&up).await;
    let mut body = code_request("What is 6 * 7?");
    body["stream"] = json!(true);
    // No header: metadata.user_id names the conversation.
    body["metadata"] = json!({"user_id": "user-7"});
    let resp = http().post(url(&s.gw)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let events = anthropic_events(&resp.text().await.unwrap());
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "ping")
        .collect();
    let blocks: Vec<(u64, &str)> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, e)| {
            (
                e["index"].as_u64().unwrap(),
                e["content_block"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [
            (0, "text"),
            (1, "server_tool_use"),
            (2, "code_execution_tool_result"),
            (3, "text")
        ],
        "{names:?}"
    );
    // Every block opens, gets its deltas and closes before the next one opens.
    let mut open: Option<u64> = None;
    for (name, e) in &events {
        match name.as_str() {
            "content_block_start" => {
                assert_eq!(open, None, "{name}: {e}");
                open = e["index"].as_u64();
            }
            "content_block_delta" => assert_eq!(open, e["index"].as_u64(), "{e}"),
            "content_block_stop" => {
                assert_eq!(open, e["index"].as_u64(), "{e}");
                open = None;
            }
            _ => {}
        }
    }
    let start = |i: u64| {
        &events
            .iter()
            .find(|(n, e)| n == "content_block_start" && e["index"] == i)
            .unwrap()
            .1["content_block"]
    };
    let deltas = |i: u64| -> Vec<&Value> {
        events
            .iter()
            .filter(|(n, e)| n == "content_block_delta" && e["index"] == i)
            .map(|(_, e)| &e["delta"])
            .collect()
    };
    // server_tool_use: shown with an empty input, the input as input_json_delta.
    let use_ = start(1);
    let id = use_["id"].as_str().unwrap();
    assert!(id.starts_with("srvtoolu_"));
    assert_eq!(use_["name"], "code_execution");
    assert_eq!(use_["input"], json!({}));
    let partial: String = deltas(1)
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "input_json_delta");
            d["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"code": "x = 6 * 7\nprint(x)"})
    );
    // The result comes whole in its start event.
    let result = start(2);
    assert_eq!(result["tool_use_id"], id);
    assert_eq!(result["content"]["stdout"], "42");
    assert_eq!(result["content"]["return_code"], 0);
    assert!(deltas(2).is_empty());
    let text = |i: u64| -> String {
        deltas(i)
            .iter()
            .map(|d| d["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(text(0), "Let me compute.");
    assert_eq!(text(3), "It is 42.");
    let delta = &events.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(
        delta["usage"]["server_tool_use"],
        json!({"web_search_requests": 0, "web_fetch_requests": 0})
    );
    assert_eq!(names.last(), Some(&"message_stop"));

    // metadata.user_id kept the interpreter: the same user's next request still has it.
    up.push_all([
        Behavior::Reply(python_call("print(x + 1)")),
        Behavior::Reply(Reply::text("43.")),
    ]);
    let mut again = code_request("Plus one?");
    again["metadata"] = json!({"user_id": "user-7"});
    let plain = create(&s.gw, again, None).await;
    assert_eq!(plain["content"][1]["content"]["stdout"], "43", "{plain}");
}

#[tokio::test]
async fn web_search_and_web_fetch_run_against_loopback_backends() {
    let up = TestUpstream::start().await.unwrap();
    let s = all_tools(&up).await;
    up.push_all([
        Behavior::Reply(Reply::tool_call(
            "web_search",
            json!({"query": "sea otters"}).to_string(),
        )),
        Behavior::Reply(Reply::tool_call(
            "web_fetch",
            json!({"url": s.page}).to_string(),
        )),
        Behavior::Reply(Reply::text("They hold hands.")),
    ]);
    let body = json!({
        "model": "m", "max_tokens": 512,
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
        "messages": [{"role": "user", "content": "Why do otters hold hands?"}],
    });
    let answer = create(&s.gw, body, None).await;
    assert_eq!(
        types(&answer),
        [
            "server_tool_use",
            "web_search_tool_result",
            "server_tool_use",
            "web_fetch_tool_result",
            "text"
        ],
        "{answer}"
    );
    let c = &answer["content"];
    assert_eq!(c[0]["name"], "web_search");
    assert_eq!(c[0]["input"], json!({"query": "sea otters"}));
    assert_eq!(c[1]["tool_use_id"], c[0]["id"]);
    let hits = c[1]["content"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{answer}");
    assert_eq!(hits[0]["type"], "web_search_result");
    assert_eq!(hits[0]["url"], "https://otters.example/1");
    assert_eq!(hits[0]["title"], "sea otters page 1");
    assert!(!hits[0]["encrypted_content"].as_str().unwrap().is_empty());
    assert_eq!(c[2]["name"], "web_fetch");
    assert_eq!(c[3]["tool_use_id"], c[2]["id"]);
    let fetched = &c[3]["content"];
    assert_eq!(fetched["type"], "web_fetch_result", "{fetched}");
    assert_eq!(fetched["url"], s.page);
    assert_eq!(fetched["content"]["type"], "document");
    assert_eq!(fetched["content"]["title"], "Otter facts");
    assert_eq!(fetched["content"]["source"]["media_type"], "text/plain");
    assert!(fetched["content"]["source"]["data"]
        .as_str()
        .unwrap()
        .contains(PAGE_TEXT));
    assert!(fetched["retrieved_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(c[4]["text"], "They hold hands.");
    assert_eq!(
        answer["usage"]["server_tool_use"],
        json!({"web_search_requests": 1, "web_fetch_requests": 1})
    );
    // The model read the search tool's own rendering of the hits.
    let after_search = &up.requests()[1].body["messages"];
    let tool = after_search.as_array().unwrap().last().unwrap();
    assert!(tool["content"]
        .as_str()
        .unwrap()
        .contains("Snippet 1 about sea otters."));
}

#[tokio::test]
async fn the_clients_own_tool_beside_a_server_tool_comes_back_as_tool_use() {
    let up = TestUpstream::start().await.unwrap();
    // One round with both calls: the server's runs, the client's is handed out last.
    up.push_all([
        Behavior::Reply(
            python_call("print(6 * 7)")
                .with_tool_call("get_weather", json!({"city": "Paris"}).to_string()),
        ),
        Behavior::Reply(Reply::text("42, and sunny in Paris.")),
    ]);
    let s = all_tools(&up).await;
    let tools = json!([
        {"type": CODE_TOOL, "name": "code_execution"},
        {"name": "get_weather", "description": "Weather for a city.",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
    ]);
    let question = json!({"role": "user", "content": "6 * 7, and the weather in Paris?"});
    let body = json!({"model": "m", "max_tokens": 512, "tools": tools, "messages": [question]});
    let first = create(&s.gw, body, Some("mixed")).await;
    assert_eq!(
        types(&first),
        ["server_tool_use", "code_execution_tool_result", "tool_use"],
        "{first}"
    );
    assert_eq!(first["stop_reason"], "tool_use");
    let use_ = &first["content"][2];
    assert!(use_["id"].as_str().unwrap().starts_with("toolu_"), "{use_}");
    assert_eq!(use_["name"], "get_weather");
    assert_eq!(use_["input"], json!({"city": "Paris"}));
    assert_eq!(first["content"][1]["content"]["stdout"], "42");
    assert_eq!(
        up.requests().len(),
        1,
        "the run stopped for the client's call"
    );

    // The client answers its call; the history continues the run.
    let body = json!({"model": "m", "max_tokens": 512, "tools": tools, "messages": [
        question,
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use_["id"], "content": "sunny, 24 C"}]},
    ]});
    let second = create(&s.gw, body, Some("mixed")).await;
    assert_eq!(types(&second), ["text"]);
    assert_eq!(second["content"][0]["text"], "42, and sunny in Paris.");
    assert_eq!(second["stop_reason"], "end_turn");
    let messages = up.requests()[1].body["messages"].clone();
    let messages = messages.as_array().unwrap();
    let n = messages.len();
    // The round's two calls in one assistant message, then both results.
    assert_eq!(messages[n - 3]["role"], "assistant", "{messages:?}");
    assert_eq!(
        messages[n - 3]["tool_calls"].as_array().unwrap().len(),
        2,
        "{messages:?}"
    );
    assert_eq!(messages[n - 2]["content"], "42");
    assert_eq!(messages[n - 1]["content"], "sunny, 24 C");
}

#[tokio::test]
async fn a_server_tool_the_configuration_lacks_is_refused_by_name() {
    let up = TestUpstream::start().await.unwrap();
    let s = setup(&up, &["python_execute"]).await;
    let body = json!({
        "model": "m", "max_tokens": 64,
        "tools": [{"type": CODE_TOOL, "name": "code_execution"},
                  {"type": "web_fetch_20250910", "name": "web_fetch"}],
        "messages": [{"role": "user", "content": "Read it."}],
    });
    let resp = http().post(url(&s.gw)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let error: Value = resp.json().await.unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("web_fetch_20250910"), "{message}");

    // A gateway of models only runs no server tool at all.
    let plain = start(server_config(), vec![single("m", &up, "native")]).await;
    let mut body = body;
    body["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
    let resp = http().post(url(&plain)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let error: Value = resp.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("web_search_20250305"),
        "{error}"
    );
    assert!(up.requests().is_empty(), "nothing reached the model");
}

#[tokio::test]
async fn the_anthropic_python_package_parses_server_tool_blocks_plain_and_streamed() {
    let python = std::env::var("TOOLBRIDGE_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_PYTHON is not set: run the suite with `bash scripts/test.sh`, which installs the anthropic package")
    });
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(python_call("x = 6 * 7\nprint(x)")),
        Behavior::Reply(Reply::text("It is 42.")),
        Behavior::Reply(python_call("print(x)").with_chunk_size(5)),
        Behavior::Reply(Reply::text("It is 42.").with_chunk_size(3)),
        Behavior::Reply(python_call("print(x + 1)")),
        Behavior::Reply(Reply::text("Plus one is 43.")),
    ]);
    let s = all_tools(&up).await;
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients/anthropic_server_tools.py");
    let mut command = std::process::Command::new(python);
    command
        .arg(script)
        .arg(format!("http://{}", s.gw.addr()))
        .arg("m");
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(": ok"), "{stdout}");
    assert_eq!(up.remaining(), 0, "every scripted answer was asked for");
}
