//! Hosted `mcp` tools of the Responses API: a `[[mcp_servers]]` entry (the official Python SDK's
//! test server, over stdio) named by `server_label`; `require_approval: "never"` runs the call as
//! an `mcp_call` item; `"always"` stops with an `mcp_approval_request`, and the client's
//! `mcp_approval_response` either runs it (continuing the same run) or denies it (the model is
//! told the protocol's denial); a label that is not configured is left out.
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

use common::{arm, http, server_config};

struct Dir(std::path::PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn setup(up: &TestUpstream) -> (RunningGateway, Arc<Runtime>, Dir) {
    let python = std::env::var("TOOLBRIDGE_MCP_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_MCP_PYTHON is not set: run the suite with `bash scripts/test.sh`, which installs the mcp package")
    });
    let server =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/py_server.py");
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
    let config = Config {
        models: vec![model],
        mcp_servers: vec![mcp],
        ..Config::default()
    };
    let mut runtime = Runtime::new(config, ProviderRegistry::new(), Overrides::default());
    runtime.start_mcp().await.unwrap();
    let runtime = Arc::new(runtime);
    let served = runtime.served_models().unwrap();
    let mut server = server_config();
    server.state.path = Some(dir.join("state.sqlite3"));
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
            .contains("remote MCP"),
        "{body}"
    );
    assert!(
        up.requests()[0].body.get("tools").is_none(),
        "{}",
        up.requests()[0].body
    );
    runtime.shutdown().await;
}
