//! Hosted `mcp` tools of the Responses API: a `[[mcp_servers]]` entry (the official Python SDK's
//! test server, over stdio) named by `server_label`; `require_approval: "never"` runs the call as
//! an `mcp_call` item; `"always"` stops with an `mcp_approval_request`, and the client's
//! `mcp_approval_response` either runs it (continuing the same run) or denies it (the model is
//! told the protocol's denial); a label that is not configured is left out. A `server_url` the
//! operator allow-listed (`[server.responses] remote_mcp_urls`) is connected for the request
//! through the outbound guard (the same Python server over streamable HTTP on a loopback
//! port), with the request's `headers` and `authorization`, which are never echoed or stored.
//!
//! Needs the `mcp` Python package: `TOOLBRIDGE_MCP_PYTHON` (scripts/test.sh sets it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, RunningGateway};
use toolbridge_providers::config::ModelConfig;
use toolbridge_providers::ProviderRegistry;
use toolbridge_runtime::{Config, Overrides, Runtime};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::responses::Schema;
use common::{arm, http, server_config};

struct Dir(std::path::PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn python() -> String {
    std::env::var("TOOLBRIDGE_MCP_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_MCP_PYTHON is not set: run the suite with `bash scripts/test.sh`, which installs the mcp package")
    })
}

fn py_server() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/py_server.py")
}

/// What a test's gateway allows beyond the configured `calc` server.
#[derive(Default)]
struct Remote {
    /// `[server.responses] remote_mcp_urls`.
    urls: Vec<String>,
    /// `[tools.fetch] allow`: networks the outbound guard lets through (loopback is reserved).
    allow: Vec<String>,
}

async fn setup(up: &TestUpstream) -> (RunningGateway, Arc<Runtime>, Dir) {
    setup_with(up, Remote::default()).await
}

async fn setup_with(up: &TestUpstream, remote: Remote) -> (RunningGateway, Arc<Runtime>, Dir) {
    setup_on(up, remote, None).await
}

/// A gateway whose state is in `state_url` (PostgreSQL), else in a SQLite file of its own.
async fn setup_on(
    up: &TestUpstream,
    remote: Remote,
    state_url: Option<&str>,
) -> (RunningGateway, Arc<Runtime>, Dir) {
    let python = python();
    let server = py_server();
    let dir = std::env::temp_dir().join(format!(
        "tb-rmcp-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mcp: toolbridge_mcp::McpServerConfig = serde_json::from_value(json!({
        "name": "calc", "command": python, "args": [server.display().to_string()],
        // The operator allows the server's calls; the request's require_approval decides.
        "approval": "never",
    }))
    .unwrap();
    let mut model = arm(up, "native");
    model["name"] = json!("m");
    let model: ModelConfig = serde_json::from_value(model).unwrap();
    let mut config = Config {
        models: vec![model],
        mcp_servers: vec![mcp],
        ..Config::default()
    };
    config.tools.fetch.allow = remote.allow;
    let mut runtime = Runtime::new(config, ProviderRegistry::new(), Overrides::default());
    runtime.start_mcp().await.unwrap();
    let runtime = Arc::new(runtime);
    let served = runtime.served_models().unwrap();
    let mut server = server_config();
    server.state.path = Some(dir.join("state.sqlite3"));
    server.state.url = state_url.map(str::to_owned);
    server.responses.remote_mcp_urls = remote.urls;
    let gw = Gateway::from_runtime(server, Arc::clone(&runtime), served, &BTreeMap::new())
        .unwrap()
        .spawn()
        .await
        .unwrap();
    (gw, runtime, Dir(dir))
}

async fn create(gw: &RunningGateway, body: Value) -> Value {
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

fn mcp_tool(approval: &str) -> Value {
    json!({"type": "mcp", "server_label": "calc", "require_approval": approval})
}

fn item<'a>(body: &'a Value, kind: &str) -> &'a Value {
    body["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} item: {body}"))
}

#[tokio::test]
async fn mcp_calls_run_ask_for_approval_and_honour_the_answer() {
    let up = TestUpstream::start().await.unwrap();
    let add = || Reply::tool_call("mcp__calc__add", r#"{"a":2,"b":3}"#);
    up.push_all([
        Behavior::Reply(add()),
        Behavior::Reply(Reply::text("2 + 3 = 5.")),
        Behavior::Reply(add()),
        Behavior::Reply(Reply::text("Approved: 5.")),
        Behavior::Reply(add()),
        Behavior::Reply(Reply::text("I may not add.")),
    ]);
    let (gw, runtime, _dir) = setup(&up).await;

    // never: the call runs at once.
    let body = create(
        &gw,
        json!({"model": "m", "input": "Add 2 and 3.", "tools": [mcp_tool("never")]}),
    )
    .await;
    let call = item(&body, "mcp_call");
    assert_eq!(call["server_label"], "calc");
    assert_eq!(call["name"], "add");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["output"], "5");
    assert_eq!(body["output_text"], "2 + 3 = 5.");

    // always: the run stops with an approval request; approving runs the call in that run.
    let first = create(
        &gw,
        json!({"model": "m", "input": "Add 2 and 3.", "tools": [mcp_tool("always")]}),
    )
    .await;
    let request = item(&first, "mcp_approval_request");
    assert_eq!(request["name"], "add");
    assert_eq!(
        up.requests().len(),
        3,
        "the model was not asked again before the approval"
    );
    let second = create(&gw, json!({
        "model": "m", "previous_response_id": first["id"], "tools": [mcp_tool("always")],
        "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}],
    }))
    .await;
    assert_eq!(item(&second, "mcp_call")["output"], "5", "{second}");
    assert_eq!(second["output_text"], "Approved: 5.");
    assert!(up.requests()[3].body.to_string().contains('5'));

    // Denied: the model is told, and the tool did not run.
    let first = create(
        &gw,
        json!({"model": "m", "input": "Add 2 and 3.", "tools": [mcp_tool("always")]}),
    )
    .await;
    let request = item(&first, "mcp_approval_request").clone();
    let second = create(&gw, json!({
        "model": "m", "previous_response_id": first["id"], "tools": [mcp_tool("always")],
        "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": false}],
    }))
    .await;
    assert_eq!(second["output_text"], "I may not add.");
    let told = up.requests()[5].body.to_string();
    assert!(told.contains("was not approved"), "{told}");
    assert!(second["output"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["type"] != "mcp_call"));
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_mcp_label_that_is_not_configured_is_left_out() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("No such server.")));
    let (gw, runtime, _dir) = setup(&up).await;
    let body = create(&gw, json!({"model": "m", "input": "x", "tools": [
        {"type": "mcp", "server_label": "elsewhere", "server_url": "https://mcp.example.com/mcp", "require_approval": "never"}
    ]}))
    .await;
    assert!(
        body["tools"][0]["toolbridge_unavailable"]
            .as_str()
            .unwrap()
            .contains("not allow-listed"),
        "{body}"
    );
    assert!(
        up.requests()[0].body.get("tools").is_none(),
        "{}",
        up.requests()[0].body
    );
    runtime.shutdown().await;
}

/// The Python server over streamable HTTP on a loopback port; killed when dropped.
struct HttpServer {
    _child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(python())
            .arg(py_server())
            .args(["http", &port.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the MCP server did not listen"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        HttpServer {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

fn remote_tool(url: &str, approval: &str) -> Value {
    json!({
        "type": "mcp", "server_label": "far", "server_url": url, "require_approval": approval,
        "headers": {"X-Probe": "probe-value-17"}, "authorization": "token-value-42",
    })
}

#[tokio::test]
async fn an_allow_listed_server_url_is_connected_for_the_request_with_its_headers() {
    let mcp = HttpServer::start().await;
    let up = TestUpstream::start().await.unwrap();
    let header =
        |name: &str| Reply::tool_call("mcp__far__header", json!({ "name": name }).to_string());
    up.push_all([
        Behavior::Reply(header("x-probe")),
        Behavior::Reply(header("authorization")),
        Behavior::Reply(Reply::text("Both headers arrived.")),
        Behavior::Reply(Reply::tool_call("mcp__far__add", r#"{"a":4,"b":5}"#)),
        Behavior::Reply(Reply::text("4 + 5 = 9.")),
        Behavior::Reply(Reply::tool_call("mcp__far__add", r#"{"a":1,"b":1}"#)),
        Behavior::Reply(Reply::text("1 + 1 = 2.")),
    ]);
    let (gw, runtime, _dir) = setup_with(
        &up,
        Remote {
            // The entry allows the server's path and what lies under it.
            urls: vec![mcp.url.clone()],
            allow: vec!["127.0.0.1".into()],
        },
    )
    .await;

    let body = create(
        &gw,
        json!({"model": "m", "input": "Probe.", "tools": [remote_tool(&mcp.url, "never")]}),
    )
    .await;
    // The model saw the remote server's tools under its label.
    let offered = up.requests()[0].body["tools"].to_string();
    assert!(
        offered.contains("mcp__far__add") && offered.contains("mcp__far__header"),
        "{offered}"
    );
    let calls: Vec<&Value> = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "mcp_call")
        .collect();
    assert_eq!(calls.len(), 2, "{body}");
    assert_eq!(calls[0]["server_label"], "far");
    assert_eq!(calls[0]["name"], "header");
    assert_eq!(calls[0]["output"], "probe-value-17");
    assert_eq!(calls[1]["output"], "Bearer token-value-42");
    assert_eq!(body["output_text"], "Both headers arrived.");
    // The secrets are neither echoed nor stored (the tool's own output shows them, as asked).
    let stored: Value = http()
        .get(format!(
            "{}/responses/{}",
            gw.base_url(),
            body["id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for echoed in [&body["tools"][0], &stored["tools"][0]] {
        assert_eq!(echoed["server_url"], mcp.url.as_str(), "{echoed}");
        assert!(echoed.get("headers").is_none(), "{echoed}");
        assert!(echoed.get("authorization").is_none(), "{echoed}");
    }

    // Approval: the run pauses; the next request connects again and the approved call runs.
    let first = create(
        &gw,
        json!({"model": "m", "input": "Add 4 and 5.", "tools": [remote_tool(&mcp.url, "always")]}),
    )
    .await;
    let request = item(&first, "mcp_approval_request");
    assert_eq!(request["server_label"], "far");
    assert_eq!(request["name"], "add");
    let second = create(&gw, json!({
        "model": "m", "previous_response_id": first["id"], "tools": [remote_tool(&mcp.url, "always")],
        "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}],
    }))
    .await;
    assert_eq!(item(&second, "mcp_call")["output"], "9", "{second}");
    assert_eq!(second["output_text"], "4 + 5 = 9.");

    // tool_choice names one of the remote server's tools: the first model request forces it.
    let before = up.requests().len();
    let forced = create(
        &gw,
        json!({
            "model": "m", "input": "Add 1 and 1.", "tools": [remote_tool(&mcp.url, "never")],
            "tool_choice": {"type": "mcp", "server_label": "far", "name": "add"},
        }),
    )
    .await;
    assert_eq!(item(&forced, "mcp_call")["output"], "2", "{forced}");
    let choice = up.requests()[before].body["tool_choice"].to_string();
    assert!(choice.contains("mcp__far__add"), "{choice}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_url_off_the_list_or_refused_by_the_guard_is_left_out() {
    let mcp = HttpServer::start().await;
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(Reply::text("Not listed.")),
        Behavior::Reply(Reply::text("Guarded.")),
    ]);
    // Allow-listed, but loopback is not among `[tools.fetch]`'s allowed networks.
    let (gw, runtime, _dir) = setup_with(
        &up,
        Remote {
            urls: vec![format!("{}/only-here", mcp.url)],
            allow: Vec::new(),
        },
    )
    .await;
    let body = create(
        &gw,
        json!({"model": "m", "input": "x", "tools": [remote_tool(&mcp.url, "never")]}),
    )
    .await;
    let why = body["tools"][0]["toolbridge_unavailable"].as_str().unwrap();
    assert!(why.contains("not allow-listed"), "{why}");
    let body = create(
        &gw,
        json!({"model": "m", "input": "x", "tools": [remote_tool(&format!("{}/only-here", mcp.url), "never")]}),
    )
    .await;
    let why = body["tools"][0]["toolbridge_unavailable"].as_str().unwrap();
    assert!(why.contains("outbound guard"), "{why}");
    for request in up.requests() {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn bad_remote_mcp_tools_are_400s() {
    let up = TestUpstream::start().await.unwrap();
    let (gw, runtime, _dir) = setup(&up).await;
    for (tool, fragment) in [
        (
            json!({"type": "mcp", "server_label": "a b", "server_url": "https://x.example/"}),
            "server_label",
        ),
        (
            json!({"type": "mcp", "server_label": "a", "server_url": "https://x.example/", "headers": {"Host": "y"}}),
            "set by the MCP transport",
        ),
        (
            json!({"type": "mcp", "server_label": "a", "server_url": "https://x.example/", "authorization": 7}),
            "authorization",
        ),
    ] {
        let resp = http()
            .post(format!("{}/responses", gw.base_url()))
            .json(&json!({"model": "m", "input": "x", "tools": [tool]}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let text = resp.text().await.unwrap();
        assert!(text.contains(fragment), "{text}");
    }
    let twice = json!({"type": "mcp", "server_label": "calc"});
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&json!({"model": "m", "input": "x", "tools": [twice.clone(), twice]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp
        .text()
        .await
        .unwrap()
        .contains("Duplicate MCP server_label"));
    assert!(up.requests().is_empty());
    runtime.shutdown().await;
}

/// `POST /v1/responses`: status and JSON body.
async fn send(gw: &RunningGateway, body: &Value) -> (u16, Value) {
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// How many times the server's side-effecting `bump` tool ran (its read-only `bumps`).
async fn bumps(runtime: &Runtime) -> u64 {
    use toolbridge_agent::Tool as _;
    let tool = runtime
        .mcp()
        .mcp_tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__calc__bumps")
        .unwrap();
    let out = tool
        .invoke(json!({}), toolbridge_agent::ToolContext::default())
        .await
        .unwrap();
    out.trim().parse().unwrap()
}

/// A response paused for the approval of a `bump` call, and the answer approving it.
async fn paused_for_bump(gw: &RunningGateway) -> Value {
    let first = create(
        gw,
        json!({"model": "m", "input": "Bump it.", "tools": [mcp_tool("always")]}),
    )
    .await;
    let request = item(&first, "mcp_approval_request");
    assert_eq!(request["name"], "bump");
    json!({
        "model": "m", "previous_response_id": first["id"], "tools": [mcp_tool("always")],
        "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}],
    })
}

/// The upstream's script: a `bump` call, then answers enough for every resumed run.
fn bump_script(up: &TestUpstream) {
    up.push(Behavior::Reply(Reply::tool_call("mcp__calc__bump", "{}")));
    answers(up);
}

/// Answers enough for every run resumed with an answer (one, unless the answer is replayed).
fn answers(up: &TestUpstream) {
    for _ in 0..3 {
        up.push(Behavior::Reply(Reply::text("Bumped.")));
    }
}

fn assert_replay_refused(status: u16, body: &Value) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["code"], "approval_already_answered", "{body}");
    assert_eq!(body["error"]["param"], "input", "{body}");
}

#[tokio::test]
async fn a_replayed_approval_is_refused_and_the_tool_runs_once() {
    let up = TestUpstream::start().await.unwrap();
    bump_script(&up);
    let (gw, runtime, _dir) = setup(&up).await;
    let answer = paused_for_bump(&gw).await;

    let (status, second) = send(&gw, &answer).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(item(&second, "mcp_call")["output"], "1", "{second}");
    // The same answer again, with the same previous_response_id.
    let (status, replay) = send(&gw, &answer).await;
    assert_replay_refused(status, &replay);
    assert_eq!(bumps(&runtime).await, 1);
    // A denial is an answer too: it cannot be turned into an approval afterwards.
    let mut denied = answer.clone();
    denied["input"][0]["approve"] = json!(false);
    let (status, body) = send(&gw, &denied).await;
    assert_replay_refused(status, &body);
    assert_eq!(bumps(&runtime).await, 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_approval_sent_twice_at_once_runs_the_tool_once() {
    let up = TestUpstream::start().await.unwrap();
    bump_script(&up);
    let (gw, runtime, _dir) = setup(&up).await;
    let answer = paused_for_bump(&gw).await;

    let (one, two) = tokio::join!(send(&gw, &answer), send(&gw, &answer));
    let mut statuses = [one.0, two.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 400], "{} {}", one.1, two.1);
    let refused = if one.0 == 400 { &one.1 } else { &two.1 };
    assert_replay_refused(400, refused);
    assert_eq!(bumps(&runtime).await, 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_approval_sent_to_two_instances_sharing_postgres_at_once_runs_the_tool_once() {
    let schema = Schema::create().await;
    let (up_a, up_b) = (
        TestUpstream::start().await.unwrap(),
        TestUpstream::start().await.unwrap(),
    );
    bump_script(&up_a);
    answers(&up_b);
    let (a, runtime_a, _dir_a) = setup_on(&up_a, Remote::default(), Some(&schema.url)).await;
    let (b, runtime_b, _dir_b) = setup_on(&up_b, Remote::default(), Some(&schema.url)).await;
    let answer = paused_for_bump(&a).await;

    let (one, two) = tokio::join!(send(&a, &answer), send(&b, &answer));
    let mut statuses = [one.0, two.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 400], "{} {}", one.1, two.1);
    // Each instance runs its own server process: the bumps of both together.
    assert_eq!(bumps(&runtime_a).await + bumps(&runtime_b).await, 1);
    // A replay on either instance, later, is refused too.
    let (status, body) = send(&b, &answer).await;
    assert_replay_refused(status, &body);
    let (status, body) = send(&a, &answer).await;
    assert_replay_refused(status, &body);
    assert_eq!(bumps(&runtime_a).await + bumps(&runtime_b).await, 1);
    runtime_a.shutdown().await;
    runtime_b.shutdown().await;
    schema.drop_now().await;
}
