//! Hosted tools of the Responses API on a gateway made from a composition root whose
//! `[tools]` enable `python_execute`: an uploaded file staged into the conversation's workspace,
//! `code_interpreter` calls run in the sandbox with their code and logs as
//! `code_interpreter_call` items (streamed with their progress events), files the code writes
//! listed and downloadable as the container's, the interpreter's state kept for a follow-up
//! with `previous_response_id`, and hosted tools the configuration lacks left out with a mark.
//!
//! Needs the sandbox's Python: `TOOLBRIDGE_SANDBOX_PYTHON` (scripts/test.sh sets it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use serde_json::{json, Value};
use toolbridge_gateway::RunningGateway;
use toolbridge_runtime::Config;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

use common::{http, model_entry, runtime_gateway, sandbox_python, server_config};

struct Setup {
    gw: RunningGateway,
    _dir: Dir,
}

struct Dir(std::path::PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn setup(up: &TestUpstream) -> Setup {
    setup_with(up, Vec::new()).await
}

async fn setup_with(up: &TestUpstream, agents: Vec<toolbridge_gateway::AgentModel>) -> Setup {
    let dir = std::env::temp_dir().join(format!(
        "tb-hosted-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let tools: toolbridge_tools::ToolsConfig = toml::from_str(&format!(
        "enabled = [\"python_execute\"]\n[sandbox]\npython = {:?}\n[workspaces]\nroot = {:?}\n",
        sandbox_python(),
        dir.join("ws").display().to_string(),
    ))
    .unwrap();
    let config = Config {
        models: vec![model_entry("m", up, "native")],
        tools,
        ..Config::default()
    };
    let mut server = server_config();
    server.state.path = Some(dir.join("state.sqlite3"));
    server.agents = agents;
    let gw = runtime_gateway(config, server).await;
    Setup { gw, _dir: Dir(dir) }
}

fn python_call(code: &str) -> Reply {
    Reply::tool_call("python_execute", json!({ "code": code }).to_string())
}

async fn create(gw: &RunningGateway, body: Value) -> Value {
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let kind = f
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap()
                .to_owned();
            let data = f.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            (kind, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn code_interpreter_reads_an_uploaded_file_keeps_its_state_and_its_outputs_download() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(python_call(
            "import csv\nrows = list(csv.DictReader(open('/workspace/uploads/data.csv')))\nx = sum(int(r['n']) for r in rows)\nopen('/workspace/outputs/total.txt', 'w').write(str(x))\nprint(x)",
        )),
        Behavior::Reply(Reply::text("The total is 42.")),
        Behavior::Reply(python_call("print(x + 1)")),
        Behavior::Reply(Reply::text("Plus one is 43.")),
    ]);
    let s = setup(&up).await;
    let gw = &s.gw;

    // Upload: the type is sniffed, the client's path is not kept.
    let form = reqwest::multipart::Form::new()
        .text("purpose", "user_data")
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"name,n\na,1\nb,2\nc,39\n".to_vec())
                .file_name("../../data.csv"),
        );
    let resp = http()
        .post(format!("{}/files", gw.base_url()))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let file: Value = resp.json().await.unwrap();
    assert!(file["id"].as_str().unwrap().starts_with("file-"), "{file}");
    assert_eq!(file["filename"], "data.csv");
    assert_eq!(file["bytes"], 20);

    // Streamed: the code interpreter's item and progress events, in OpenAI's order.
    let resp = http()
        .post(format!("{}/responses", gw.base_url()))
        .json(&json!({
            "model": "m", "stream": true,
            "tools": [{"type": "code_interpreter", "container": {"type": "auto"}}],
            "input": [{"role": "user", "content": [
                {"type": "input_text", "text": "Sum column n."},
                {"type": "input_file", "file_id": file["id"]},
            ]}],
        }))
        .send()
        .await
        .unwrap();
    let evs = events(&resp.text().await.unwrap());
    let kinds: Vec<&str> = evs.iter().map(|(k, _)| k.as_str()).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} missing: {kinds:?}"))
    };
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
    assert_eq!(kinds.last(), Some(&"response.completed"));
    let first = evs.last().unwrap().1["response"].clone();
    let ci = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "code_interpreter_call")
        .unwrap()
        .clone();
    assert_eq!(ci["status"], "completed", "{ci}");
    assert!(ci["code"].as_str().unwrap().contains("csv.DictReader"));
    assert!(
        ci["outputs"][0]["logs"].as_str().unwrap().contains("42"),
        "{ci}"
    );
    assert_eq!(first["output_text"], "The total is 42.");
    // The model saw the staged file's name inside the sandbox.
    let sent = up.requests()[0].body.to_string();
    assert!(sent.contains("/workspace/uploads/data.csv"), "{sent}");

    // What the code wrote is the container's file, downloadable.
    let container = ci["container_id"].as_str().unwrap();
    let (status, list) = {
        let r = http()
            .get(format!("{}/containers/{container}/files", gw.base_url()))
            .send()
            .await
            .unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    };
    assert_eq!(status, 200);
    let kept = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("total.txt"))
        .unwrap_or_else(|| panic!("{list}"));
    let content = http()
        .get(format!(
            "{}/containers/{container}/files/{}/content",
            gw.base_url(),
            kept["id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(content, "42");

    // A follow-up sees the interpreter's variable: same conversation, same session.
    let second = create(
        gw,
        json!({
            "model": "m", "previous_response_id": first["id"],
            "tools": [{"type": "code_interpreter", "container": {"type": "auto"}}],
            "input": "And plus one?",
        }),
    )
    .await;
    let ci2 = second["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "code_interpreter_call")
        .unwrap()
        .clone();
    assert!(
        ci2["outputs"][0]["logs"].as_str().unwrap().contains("43"),
        "{ci2}"
    );
    assert_eq!(ci2["container_id"], container);
    assert_eq!(second["output_text"], "Plus one is 43.");
}

#[tokio::test]
async fn a_hosted_tool_the_configuration_lacks_is_left_out_and_marked() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("No search here.")));
    let s = setup(&up).await;
    let body = create(&s.gw, json!({
        "model": "m", "input": "Search the web.",
        "tools": [{"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}}],
    }))
    .await;
    assert_eq!(body["status"], "completed");
    let tools = body["tools"].as_array().unwrap();
    assert!(
        tools[0]["toolbridge_unavailable"]
            .as_str()
            .unwrap()
            .contains("web_search"),
        "{body}"
    );
    assert!(tools[1].get("toolbridge_unavailable").is_none());
    let sent = &up.requests()[0].body;
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    // The built-in skill's use_skill comes with python_execute; no search tool reached the model.
    assert!(names.contains(&"python_execute"), "{sent}");
    assert!(!names.iter().any(|n| n.starts_with("web_")), "{sent}");
}

#[tokio::test]
async fn an_agent_served_as_a_chat_model_runs_the_loop_and_reports_tool_activity_as_comments() {
    let up = TestUpstream::start().await.unwrap();
    up.push_all([
        Behavior::Reply(python_call("print(6 * 7)")),
        Behavior::Reply(Reply::text("It is 42.")),
        Behavior::Reply(python_call("print(6 * 7)")),
        Behavior::Reply(Reply::text("Still 42.")),
    ]);
    let agent = toolbridge_gateway::AgentModel {
        name: "analyst".into(),
        model: "m".into(),
        tools: vec!["code_interpreter".into()],
        instructions: None,
    };
    let s = setup_with(&up, vec![agent]).await;
    let listed: Value = http()
        .get(format!("{}/models", s.gw.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "analyst"),
        "{listed}"
    );
    let resp = http()
        .post(format!("{}/chat/completions", s.gw.base_url()))
        .json(&json!({"model": "analyst", "messages": [{"role": "user", "content": "What is 6 times 7?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "analyst");
    assert_eq!(body["choices"][0]["message"]["content"], "It is 42.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    // The upstream got the tool result; the client never saw the call.
    assert!(up.requests()[1].body.to_string().contains("42"));
    assert!(
        body["choices"][0]["message"].get("tool_calls").is_none(),
        "{body}"
    );

    let resp = http()
        .post(format!("{}/chat/completions", s.gw.base_url()))
        .json(&json!({"model": "analyst", "stream": true, "messages": [{"role": "user", "content": "Again?"}]}))
        .send()
        .await
        .unwrap();
    let text = resp.text().await.unwrap();
    assert!(text.contains(": tool python_execute started"), "{text}");
    assert!(
        text.contains(": tool python_execute finished completed"),
        "{text}"
    );
    let content: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(content, "Still 42.");
    assert!(text.trim_end().ends_with("data: [DONE]"));
}
