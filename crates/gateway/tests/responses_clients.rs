//! The proof with real clients for the Responses API: the official `openai` Python and npm
//! packages, the OpenAI Agents SDK and Codex CLI, unmodified, drive `/v1/responses` of an
//! in-process gateway (keys checked, state in SQLite in a temporary folder) in front of the
//! scripted upstream in native tool mode. Each test runs its client script (tests/clients/*)
//! once and asserts on the JSON it prints and on what the upstream was sent. The scripts'
//! headers list the requests and the replies scripted here, in the same order.
//!
//! `scripts/test.sh` installs the clients and exports `TOOLBRIDGE_PYTHON`,
//! `TOOLBRIDGE_NODE_MODULES`, `TOOLBRIDGE_CODEX` and `TOOLBRIDGE_SANDBOX_PYTHON` (for the hosted
//! code interpreter). Without them these tests fail and say so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, RunningGateway};
use toolbridge_runtime::Config;
use toolbridge_testkit::{Behavior, Recorded, Reply, TestUpstream};

use common::{server_config, single, KEYS_VAR};

const KEY: &str = "sk-responses-clients-test-key";
const MODEL: &str = "m";

fn env_or_fail(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test.sh, which installs the \
             Responses API clients (openai, openai-agents, @openai/codex) and the sandbox's \
             Python, and exports TOOLBRIDGE_PYTHON, TOOLBRIDGE_NODE_MODULES, TOOLBRIDGE_CODEX \
             and TOOLBRIDGE_SANDBOX_PYTHON"
        )
    })
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("clients")
        .join(name)
        .display()
        .to_string()
}

/// A temporary folder removed on drop (std only).
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("tb-rclients-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn keys() -> BTreeMap<String, String> {
    BTreeMap::from([(KEYS_VAR.to_owned(), KEY.to_owned())])
}

/// A gateway of the one model `m` (no configured tools), state in `dir`.
async fn models_gateway(up: &TestUpstream, dir: &Dir) -> RunningGateway {
    let mut config = server_config();
    config.state.path = Some(dir.path().join("state.sqlite3"));
    Gateway::new(config, vec![single(MODEL, up, "native")], &keys())
        .unwrap()
        .spawn()
        .await
        .unwrap()
}

/// A gateway made from a composition root whose `[tools]` enable `python_execute` (the hosted
/// code interpreter) with the sandbox's Python, workspaces and state in `dir`.
async fn runtime_gateway(up: &TestUpstream, dir: &Dir) -> RunningGateway {
    let python = env_or_fail("TOOLBRIDGE_SANDBOX_PYTHON");
    let workspaces = dir.path().join("ws");
    std::fs::create_dir_all(&workspaces).unwrap();
    let tools: toolbridge_tools::ToolsConfig = toml::from_str(&format!(
        "enabled = [\"python_execute\"]\n[sandbox]\npython = {python:?}\n[workspaces]\nroot = {:?}\n",
        workspaces.display().to_string(),
    ))
    .unwrap();
    let config = Config {
        models: vec![common::model_entry(MODEL, up, "native")],
        tools,
        ..Config::default()
    };
    let mut server = server_config();
    server.state.path = Some(dir.path().join("state.sqlite3"));
    common::runtime_gateway_with(config, server, &keys())
        .await
        .0
}

/// Runs `program args… BASE_URL m` once with the test key; panics with its output unless it
/// exits 0; returns the JSON object it printed.
async fn run_client(
    program: String,
    args: Vec<String>,
    envs: Vec<(&'static str, String)>,
    gw: &RunningGateway,
) -> Value {
    let base_url = gw.base_url();
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .args(&args)
            .arg(&base_url)
            .arg(MODEL)
            .env("TOOLBRIDGE_TEST_KEY", KEY)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .envs(envs)
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
    // Reported, never asserted: how long the client took (the suite must stay fast).
    eprintln!("client ran in {:.1?}", started.elapsed());
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: not JSON:\n{stdout}\n{stderr}"))
}

fn python_call(code: &str) -> Behavior {
    Reply::tool_call("python_execute", json!({ "code": code }).to_string())
        .with_chunk_size(9)
        .into()
}

fn text(s: &str) -> Behavior {
    Reply::text(s).with_chunk_size(4).with_usage(12, 5).into()
}

/// The messages of an upstream (Chat Completions) request.
fn messages(r: &Recorded) -> &Vec<Value> {
    r.body["messages"].as_array().unwrap()
}

/// The tool results an upstream request carried, in order: (tool_call_id, content).
fn tool_results(r: &Recorded) -> Vec<(String, String)> {
    messages(r)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (m["tool_call_id"].as_str().unwrap().to_owned(), content)
        })
        .collect()
}

/// The tool calls of the assistant messages of an upstream request: (id, name, arguments).
fn assistant_calls(r: &Recorded) -> Vec<(String, String, String)> {
    messages(r)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["function"]["name"].as_str().unwrap().to_owned(),
                c["function"]["arguments"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn tool_names(r: &Recorded) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn last_user_text(r: &Recorded) -> String {
    let m = messages(r)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    m["content"].to_string()
}

/// The one item of `kind` in a summary's `output`.
fn item<'a>(summary: &'a Value, kind: &str) -> &'a Value {
    let items: Vec<&Value> = summary["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect();
    assert_eq!(items.len(), 1, "one {kind} item: {summary}");
    items[0]
}

/// A plain text answer's summary (both scripts print the same shape).
fn assert_text_response(s: &Value, text: &str) {
    assert_eq!(s["object"], "response", "{s}");
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["model"], MODEL, "{s}");
    assert!(s["id"].as_str().unwrap().starts_with("resp_"), "{s}");
    assert_eq!(s["text"], text, "{s}");
    let message = item(s, "message");
    assert_eq!(message["text"], text, "{s}");
    assert_eq!(message["status"], "completed", "{s}");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"), "{s}");
    assert_eq!(s["usage"]["input_tokens"], 12, "{s}");
    assert_eq!(s["usage"]["output_tokens"], 5, "{s}");
}

/// The events of one streamed text answer, in order: lifecycle first, the message item's
/// added/part/deltas/done, `response.completed` last — consecutive deltas counted as one.
fn assert_text_stream_events(types: &[Value]) {
    let mut kinds: Vec<&str> = types.iter().map(|t| t.as_str().unwrap()).collect();
    let deltas = kinds
        .iter()
        .filter(|k| **k == "response.output_text.delta")
        .count();
    assert!(deltas > 1, "the text arrived in several deltas: {kinds:?}");
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
}

/// Each event was parsed into the SDK's own class for its type (not a generic fallback).
fn assert_event_classes(stream: &Value) {
    let class_of = |kind: &str| match kind {
        "response.created" => "ResponseCreatedEvent",
        "response.in_progress" => "ResponseInProgressEvent",
        "response.output_item.added" => "ResponseOutputItemAddedEvent",
        "response.content_part.added" => "ResponseContentPartAddedEvent",
        "response.output_text.delta" => "ResponseTextDeltaEvent",
        "response.output_text.done" => "ResponseTextDoneEvent",
        "response.content_part.done" => "ResponseContentPartDoneEvent",
        "response.output_item.done" => "ResponseOutputItemDoneEvent",
        "response.completed" => "ResponseCompletedEvent",
        other => panic!("unexpected event {other}"),
    };
    let types = stream["event_types"].as_array().unwrap();
    let classes = stream["event_classes"].as_array().unwrap();
    assert_eq!(types.len(), classes.len());
    for (kind, class) in types.iter().zip(classes) {
        assert_eq!(class_of(kind.as_str().unwrap()), class, "{kind}");
    }
}

const HELLO: &str = "Hello! How can I help?";
const HELLO_AGAIN: &str = "Hello again, still here.";
const HELLO_THIRD: &str = "Hello for the third time.";
const WEATHER: &str = "It is sunny and 24 C in Paris.";

fn weather_call() -> Behavior {
    Reply::tool_call("get_weather", r#"{"city":"Paris"}"#)
        .with_chunk_size(5)
        .with_usage(12, 5)
        .into()
}

/// The function round trip of both openai scripts: the call paused the run, the output resumed
/// it, and the upstream's next request carried the output for the same call.
fn assert_function_round_trip(result: &Value, call_request: &Recorded, answer_request: &Recorded) {
    let call = &result["function"]["call"];
    assert_eq!(call["status"], "completed", "{call}");
    let fc = item(call, "function_call");
    assert_eq!(fc["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(fc["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
    assert!(fc["id"].as_str().unwrap().starts_with("fc_"), "{fc}");
    let call_id = fc["call_id"].as_str().unwrap();
    assert_eq!(tool_names(call_request), ["get_weather"]);

    let answer = &result["function"]["answer"];
    assert_text_response(answer, WEATHER);
    assert_eq!(answer["previous_response_id"], call["id"]);
    let calls = assistant_calls(answer_request);
    assert_eq!(calls.len(), 1, "{:?}", answer_request.body);
    assert_eq!(calls[0].1, "get_weather");
    let results = tool_results(answer_request);
    assert_eq!(results, [(calls[0].0.clone(), "sunny, 24 C".to_owned())]);
    // The client answered the call id it was given, which is the upstream's own call's.
    assert_eq!(call_id, calls[0].0);
    assert!(last_user_text(answer_request).contains("What is the weather in Paris?"));
}

fn ci_logs(ci: &Value) -> String {
    ci["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["type"] == "logs")
        .map(|o| o["logs"].as_str().unwrap())
        .collect()
}

const FILE_CODE: &str = "import csv\nrows = list(csv.DictReader(open('/workspace/uploads/data.csv')))\nprint(sum(int(r['numbers']) for r in rows))";
const FILE_ANSWER: &str = "The numbers add up to 42.";
const X_ANSWER: &str = "x is 42.";
const X1_ANSWER: &str = "x + 1 is 43.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_python_drives_the_responses_api() {
    let python = env_or_fail("TOOLBRIDGE_PYTHON");
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        text(HELLO),
        text(HELLO_AGAIN),
        text(HELLO_THIRD),
        weather_call(),
        text(WEATHER),
        python_call(FILE_CODE),
        text(FILE_ANSWER),
        python_call("x = 6 * 7\nprint(x)"),
        text(X_ANSWER),
        python_call("print(x + 1)"),
        text(X1_ANSWER),
    ]);
    let dir = Dir::new("py");
    let gw = runtime_gateway(&up, &dir).await;
    let r = run_client(python, vec![script("responses_py.py")], vec![], &gw).await;
    let sent = up.requests();
    assert_eq!(sent.len(), 11, "one upstream request per scripted reply");
    assert_eq!(up.remaining(), 0);
    for s in &sent {
        assert_eq!(s.path, "/v1/chat/completions");
    }

    // 1. create.
    assert_text_response(&r["create"], HELLO);
    assert!(last_user_text(&sent[0]).contains("Say hello."));

    // 2. responses.stream: every event typed, numbered from 0, the deltas making the text.
    let stream = &r["stream"];
    assert_text_stream_events(stream["event_types"].as_array().unwrap());
    let seqs: Vec<u64> = stream["sequence_numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_event_classes(stream);
    assert_eq!(stream["delta_text"], HELLO_AGAIN);
    assert_text_response(&stream["final"], HELLO_AGAIN);

    // 3. create(stream=True): the raw events, the same order, each in its SDK class.
    let raw = &r["stream_raw"];
    assert_text_stream_events(raw["event_types"].as_array().unwrap());
    assert_event_classes(raw);
    assert_text_response(&raw["final"], HELLO_THIRD);
    let ids: Vec<&Value> = [&r["create"], &stream["final"], &raw["final"]]
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "{ids:?}");

    // 4-5. The function round trip through previous_response_id.
    assert_function_round_trip(&r, &sent[3], &sent[4]);

    // The stored objects of request 1, then a 404 after the delete.
    let stored = &r["stored"];
    assert_eq!(stored["retrieved"], r["create"]);
    let items = stored["input_items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{stored}");
    assert_eq!(items[0]["type"], "message");
    assert_eq!(items[0]["role"], "user");
    assert_eq!(items[0]["text"], "Say hello.");
    assert!(items[0]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(stored["input_items_has_more"], false);
    assert_eq!(stored["after_delete"], "NotFoundError 404");

    // 6. The uploaded file reached python in the conversation's workspace.
    let upload = &r["file"]["upload"];
    assert!(
        upload["id"].as_str().unwrap().starts_with("file-"),
        "{upload}"
    );
    assert_eq!(upload["object"], "file");
    assert_eq!(upload["filename"], "data.csv");
    assert_eq!(upload["bytes"], 26, "the script's CSV is 26 bytes");
    assert_eq!(upload["purpose"], "user_data");
    let with_file = &r["file"]["response"];
    assert_eq!(with_file["status"], "completed", "{with_file}");
    assert_eq!(with_file["text"], FILE_ANSWER);
    let ci = item(with_file, "code_interpreter_call");
    assert_eq!(ci["status"], "completed", "{ci}");
    assert_eq!(ci["code"], FILE_CODE);
    assert_eq!(ci_logs(ci).trim(), "42", "{ci}");
    assert!(ci["container_id"].as_str().unwrap().starts_with("cntr_"));
    assert!(
        sent[5]
            .body
            .to_string()
            .contains("/workspace/uploads/data.csv"),
        "the model was told where the file is: {}",
        sent[5].body
    );
    assert!(tool_names(&sent[5]).contains(&"python_execute".to_owned()));
    let results = tool_results(&sent[6]);
    assert_eq!(results.len(), 1, "{:?}", sent[6].body);
    assert!(results[0].1.contains("42"), "{results:?}");

    // 7-8. The interpreter's state survives into the follow-up: same container, x still set.
    let first = &r["code_interpreter"]["first"];
    let follow = &r["code_interpreter"]["followup"];
    assert_eq!(first["text"], X_ANSWER);
    assert_eq!(follow["text"], X1_ANSWER);
    assert_eq!(follow["previous_response_id"], first["id"]);
    let (ci1, ci2) = (
        item(first, "code_interpreter_call"),
        item(follow, "code_interpreter_call"),
    );
    assert_eq!(ci_logs(ci1).trim(), "42", "{ci1}");
    assert_eq!(ci_logs(ci2).trim(), "43", "{ci2}");
    assert_eq!(ci1["container_id"], ci2["container_id"]);
    assert_ne!(ci1["container_id"], ci["container_id"]);
    // The follow-up's upstream request held the earlier turn (x's code and its output).
    let earlier = assistant_calls(&sent[9]);
    assert!(
        earlier
            .iter()
            .any(|(_, _, args)| args.contains("x = 6 * 7")),
        "{earlier:?}"
    );
    assert!(last_user_text(&sent[9]).contains("Now print x + 1 with Python."));
    assert!(tool_results(&sent[10])
        .iter()
        .any(|(_, out)| out.contains("43")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_node_drives_the_responses_api() {
    let modules = env_or_fail("TOOLBRIDGE_NODE_MODULES");
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        text(HELLO),
        text(HELLO_AGAIN),
        weather_call(),
        text(WEATHER),
    ]);
    let dir = Dir::new("js");
    let gw = models_gateway(&up, &dir).await;
    let node = std::env::var("TOOLBRIDGE_NODE").unwrap_or_else(|_| "node".to_owned());
    let envs = vec![("TOOLBRIDGE_NODE_MODULES", modules)];
    let r = run_client(node, vec![script("responses_js.mjs")], envs, &gw).await;
    let sent = up.requests();
    assert_eq!(sent.len(), 4);
    assert_eq!(up.remaining(), 0);

    assert_text_response(&r["create"], HELLO);
    let stream = &r["stream"];
    assert_text_stream_events(stream["event_types"].as_array().unwrap());
    let seqs: Vec<u64> = stream["sequence_numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(stream["delta_text"], HELLO_AGAIN);
    assert_text_response(&stream["final"], HELLO_AGAIN);
    assert_function_round_trip(&r, &sent[2], &sent[3]);
}

const AGENT_ANSWER: &str = "It is sunny, 24 C in Paris, and 6 * 7 = 42.";

/// One Agents SDK run's items: the code interpreter's call (run here, with its logs), the
/// function call the SDK ran itself, its output, the answer.
fn assert_agent_run(run: &Value) {
    assert_eq!(run["final_output"], AGENT_ANSWER, "{run}");
    let items = run["items"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = items
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap(),
                i["raw_type"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("tool_call_item", "code_interpreter_call"),
            ("tool_call_item", "function_call"),
            ("tool_call_output_item", "function_call_output"),
            ("message_output_item", "message"),
        ],
        "{run}"
    );
    let ci = &items[0];
    assert_eq!(ci["status"], "completed", "{ci}");
    assert_eq!(ci["code"], "print(6 * 7)");
    assert!(ci["container_id"].as_str().unwrap().starts_with("cntr_"));
    assert_eq!(ci["outputs"].as_array().unwrap().len(), 1, "{ci}");
    assert_eq!(ci["outputs"][0]["type"], "logs", "{ci}");
    assert_eq!(
        ci["outputs"][0]["logs"].as_str().unwrap().trim(),
        "42",
        "{ci}"
    );
    assert_eq!(items[1]["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(items[1]["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(items[2]["output"], "sunny, 24 C in Paris");
    assert_eq!(items[2]["call_id"], items[1]["call_id"]);
    assert_eq!(items[3]["text"], AGENT_ANSWER);
    let ids = run["response_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 2, "{run}");
    assert_ne!(ids[0], ids[1]);
    assert!(ids
        .iter()
        .all(|id| id.as_str().unwrap().starts_with("resp_")));
    assert_eq!(run["tool_calls"], json!([{"city": "Paris"}]));
}

/// The three upstream requests of one SDK run: the code runs first; the function call pauses
/// the run; the SDK's second request (its whole history, no previous_response_id) reaches the
/// model with the replayed code interpreter call and the function's output.
fn assert_agent_upstream(sent: &[Recorded]) {
    let system = messages(&sent[0])[0].to_string();
    assert!(
        system.contains("Answer briefly. Use the tools."),
        "{system}"
    );
    let names = tool_names(&sent[0]);
    assert!(names.contains(&"get_weather".to_owned()), "{names:?}");
    assert!(names.contains(&"python_execute".to_owned()), "{names:?}");
    assert!(tool_results(&sent[1])
        .iter()
        .any(|(_, out)| out.contains("42")));
    let replayed = &sent[2];
    let calls = assistant_calls(replayed);
    let names: Vec<&str> = calls.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["python_execute", "get_weather"],
        "{:?}",
        replayed.body
    );
    assert!(calls[0].2.contains("print(6 * 7)"));
    let results = tool_results(replayed);
    assert_eq!(results.len(), 2, "{:?}", replayed.body);
    assert_eq!(results[0].0, calls[0].0);
    assert!(results[0].1.contains("42"), "{results:?}");
    assert_eq!(
        results[1],
        (calls[1].0.clone(), "sunny, 24 C in Paris".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_sdk_runs_a_function_tool_and_the_code_interpreter() {
    let python = env_or_fail("TOOLBRIDGE_PYTHON");
    let up = TestUpstream::start().await.unwrap();
    for _ in 0..2 {
        up.push_all([
            python_call("print(6 * 7)"),
            weather_call(),
            text(AGENT_ANSWER),
        ]);
    }
    let dir = Dir::new("agents");
    let gw = runtime_gateway(&up, &dir).await;
    let r = run_client(python, vec![script("agents_sdk.py")], vec![], &gw).await;
    let sent = up.requests();
    assert_eq!(sent.len(), 6);
    assert_eq!(up.remaining(), 0);

    assert_agent_run(&r["run"]);
    assert_agent_upstream(&sent[..3]);

    let streamed = &r["streamed"];
    assert_agent_run(streamed);
    assert_agent_upstream(&sent[3..]);
    assert_eq!(
        streamed["event_types"],
        json!([
            "agent_updated_stream_event",
            "raw_response_event",
            "run_item_stream_event"
        ])
    );
    let raw: Vec<&str> = streamed["raw_event_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let at = |k: &str| {
        raw.iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} missing: {raw:?}"))
    };
    assert!(at("response.created") < at("response.code_interpreter_call.in_progress"));
    assert!(
        at("response.code_interpreter_call.in_progress")
            < at("response.code_interpreter_call_code.done")
    );
    assert!(
        at("response.code_interpreter_call_code.done")
            < at("response.code_interpreter_call.interpreting")
    );
    assert!(
        at("response.code_interpreter_call.interpreting")
            < at("response.code_interpreter_call.completed")
    );
    assert!(at("response.code_interpreter_call.completed") < at("response.output_text.delta"));
    assert_eq!(
        raw.iter().filter(|k| **k == "response.completed").count(),
        2,
        "one response.completed per request: {raw:?}"
    );
    assert_eq!(raw.last(), Some(&"response.completed"));
    assert_eq!(
        streamed["run_item_events"],
        json!([
            "tool_called",
            "tool_called",
            "tool_output",
            "message_output_created"
        ])
    );
}

const NOTE: &str = "The secret word is pelican.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_exec_runs_its_shell_tool_through_the_gateway() {
    let python = env_or_fail("TOOLBRIDGE_PYTHON");
    let codex = env_or_fail("TOOLBRIDGE_CODEX");
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Reply::tool_call("exec_command", r#"{"cmd": "cat note.txt"}"#)
            .with_chunk_size(6)
            .with_usage(12, 5)
            .into(),
        text(&format!("The note says: {NOTE}")),
    ]);
    let dir = Dir::new("codex");
    let gw = models_gateway(&up, &dir).await;
    let envs = vec![("TOOLBRIDGE_CODEX", codex)];
    let r = run_client(python, vec![script("codex_exec.py")], envs, &gw).await;
    let sent = up.requests();
    assert_eq!(sent.len(), 2, "{r}");
    assert_eq!(up.remaining(), 0);

    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["answer_has_file_content"], true, "{r}");
    assert_eq!(r["final_message"], format!("The note says: {NOTE}"));
    // The one error item expected: Codex's warning for a model outside its catalog.
    let errors: Vec<&str> = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap_or("(no message)"))
        .filter(|e| !e.starts_with("Model metadata for `m` not found."))
        .collect();
    assert!(errors.is_empty(), "{r}");
    let commands = r["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 1, "{r}");
    assert!(commands[0]["command"]
        .as_str()
        .unwrap()
        .contains("cat note.txt"));
    assert_eq!(commands[0]["exit_code"], 0);
    assert!(commands[0]["output"].as_str().unwrap().contains(NOTE));
    let events: Vec<&str> = r["event_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(events.first(), Some(&"thread.started"), "{events:?}");
    assert_eq!(events.last(), Some(&"turn.completed"), "{events:?}");

    // Codex's tools reached the model as functions; hosted web search was left out.
    let names = tool_names(&sent[0]);
    assert!(names.contains(&"exec_command".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("web")), "{names:?}");
    assert!(last_user_text(&sent[0]).contains("Run `cat note.txt`"));
    // The function_call Codex got back and its function_call_output came in the next request.
    let calls = assistant_calls(&sent[1]);
    assert_eq!(calls.len(), 1, "{:?}", sent[1].body);
    assert_eq!(calls[0].1, "exec_command");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap()["cmd"],
        "cat note.txt"
    );
    let results = tool_results(&sent[1]);
    assert_eq!(results.len(), 1, "{:?}", sent[1].body);
    assert_eq!(results[0].0, calls[0].0);
    assert!(results[0].1.contains(NOTE), "{results:?}");
}
