//! `toolbridge serve` killed with SIGKILL while a background response runs (issue 15, "Proof"):
//! after a restart on the same `[server.state]`, that response reads `failed` — never stuck
//! `in_progress` — and a response completed before the kill is intact. The model is a scripted
//! loopback upstream (testkit) whose second answer stalls, so the run is mid-request when killed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

/// The server process, killed when dropped (a failing test leaves nothing running).
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `toolbridge serve --config DIR/toolbridge.toml` isolated in `dir`, and reads its
/// address from the start-up line.
fn serve(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .arg("serve")
        .arg("--config")
        .arg(dir.join("toolbridge.toml"))
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("TOOLBRIDGE_API_KEYS")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("on http://").nth(1) {
            let addr = rest.split("/v1").next().unwrap_or_default().to_owned();
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return Server {
                child,
                base: format!("http://{addr}/v1"),
            };
        }
        seen.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no start-up line: {seen:?}");
}

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_running_when_the_server_is_killed_reads_failed_after_a_restart() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("Stored before the kill.")));
    // Far longer than the test: the run is waiting for its first byte when the server dies.
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_secs(300),
        reply: Reply::text("never seen"),
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolbridge.toml"),
        format!(
            r#"
[server]
listen = "127.0.0.1:0"
rate_limit_per_minute = 0

[server.state]
path = "{state}"

[server.responses]
instance = "kill-test"

[[models]]
name = "local"
base_url = "{url}"
upstream_model = "mock-model"
tool_mode = "native"
max_retries = 0
first_byte_timeout_secs = 600.0
"#,
            state = dir.path().join("state.sqlite3").display(),
            url = up.base_url(),
        ),
    )
    .unwrap();
    let http = client();

    let server = serve(dir.path());
    let (status, done) = send(
        http.post(format!("{}/responses", server.base))
            .json(&json!({"model": "local", "input": "Remember me."})),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed");
    let done_id = done["id"].as_str().unwrap().to_owned();

    let (status, started) = send(
        http.post(format!("{}/responses", server.base))
            .json(&json!({"model": "local", "input": "Take your time.", "background": true})),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["status"], "queued");
    let id = started["id"].as_str().unwrap().to_owned();
    // In progress, and its model request reached the upstream (which is holding it).
    let (status, running) = send(http.get(format!("{}/responses/{id}", server.base))).await;
    assert_eq!(status, 200, "{running}");
    assert_eq!(running["status"], "in_progress", "{running}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the run never called the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut server = server;
    server.child.kill().unwrap(); // SIGKILL: no shutdown code runs
    let killed = server.child.wait().unwrap();
    assert!(!killed.success());
    drop(server);

    // Same state file, same instance name: the start marks what the dead instance left running.
    let server = serve(dir.path());
    let (status, after) = send(http.get(format!("{}/responses/{id}", server.base))).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["status"], "failed", "{after}");
    assert_eq!(after["error"]["code"], "server_error", "{after}");
    assert_eq!(
        after["error"]["message"],
        "The server stopped while this response was being generated."
    );
    assert_eq!(after["id"], id.as_str());
    assert_eq!(after["background"], true);
    let (status, kept) = send(http.get(format!("{}/responses/{done_id}", server.base))).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept, done, "the completed response is intact");
    // The restarted instance continues the conversation stored before the kill.
    up.push(Behavior::Reply(Reply::text("Back again.")));
    let (status, next) = send(http.post(format!("{}/responses", server.base)).json(
        &json!({"model": "local", "input": "Still there?", "previous_response_id": done_id}),
    ))
    .await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["output_text"], "Back again.");
    let sent = up.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("Remember me.") && sent.contains("Stored before the kill."),
        "{sent}"
    );
}
