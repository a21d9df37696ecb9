//! `toolbridge serve` as an operator runs it: configuration file, start-up messages, the
//! endpoints answering, refusal of a public address without keys, and a clean stop on SIGTERM.
//! Every test gives a configuration with a model, so none of them sets up the embedded default.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// A configuration with one model (so no embedded default is set up).
const ONE_MODEL: &str = r#"
[server]
listen = "127.0.0.1:0"

[[models]]
name = "local"
base_url = "http://127.0.0.1:9/v1"
upstream_model = "mock-model"
tool_mode = "prompt"
"#;

fn toolbridge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolbridge"));
    c.env_remove("TOOLBRIDGE_API_KEYS").env("RUST_LOG", "warn");
    c
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tb-serve-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts the server and reads its address from the start-up line. The caller stops it with
/// [`terminate`], which waits for it.
fn start(mut cmd: Command) -> (Child, String, Vec<String>) {
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    match read_address(stderr) {
        Ok((addr, seen)) => (child, addr, seen),
        Err(seen) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no start-up line: {seen:?}");
        }
    }
}

fn read_address(stderr: ChildStderr) -> Result<(String, Vec<String>), Vec<String>> {
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else {
            return Err(seen);
        };
        seen.push(line.clone());
        if let Some(rest) = line.split("on http://").nth(1) {
            let addr = rest.split("/v1").next().unwrap_or_default().to_owned();
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return Ok((addr, seen));
        }
    }
    Err(seen)
}

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serves_the_configured_models_and_stops_on_sigterm() {
    let dir = temp_dir("models");
    let config = dir.join("toolbridge.toml");
    std::fs::write(&config, ONE_MODEL).unwrap();
    let mut cmd = toolbridge();
    cmd.arg("serve").arg("--config").arg(&config);
    let (mut child, addr, seen) = start(cmd);
    assert!(
        seen.iter()
            .any(|l| l.contains(&config.display().to_string())),
        "{seen:?}"
    );
    let models = get(&addr, "/v1/models");
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    assert!(models.contains(r#""id":"local""#), "{models}");
    assert!(get(&addr, "/healthz").contains(r#"{"status":"ok"}"#));
    assert!(terminate(&mut child).success());
}

#[test]
fn refuses_a_public_address_without_keys() {
    let dir = temp_dir("public");
    let config = dir.join("toolbridge.toml");
    std::fs::write(&config, ONE_MODEL).unwrap();
    let out = toolbridge()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without API keys"),
        "{err}"
    );
}

#[test]
fn config_errors_name_the_file_and_line() {
    let dir = temp_dir("bad");
    let config = dir.join("bad.toml");
    std::fs::write(
        &config,
        "[server]\nlisten = \"127.0.0.1:0\"\nbody_limt = 5\n",
    )
    .unwrap();
    let out = toolbridge()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("line 3") && err.contains("body_limt"),
        "{err}"
    );
}

fn post_json(addr: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Issue 13 item 24: `--listen localhost:PORT` is accepted, and a model whose key variable is
/// unset does not stop the server: it starts, warns, and answers that model with a clear 503.
#[test]
fn listens_on_localhost_and_serves_despite_a_model_without_its_key() {
    let dir = temp_dir("nokey");
    let config = dir.join("toolbridge.toml");
    let text = format!(
        "{ONE_MODEL}\n[[models]]\nname = \"keyless\"\nbase_url = \"http://127.0.0.1:9/v1\"\nupstream_model = \"m\"\napi_key_env = \"TB_TEST_UNSET_KEY_VAR\"\n"
    );
    std::fs::write(&config, text).unwrap();
    let mut cmd = toolbridge();
    cmd.env_remove("TB_TEST_UNSET_KEY_VAR")
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "localhost:0"]);
    let (mut child, addr, seen) = start(cmd);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert!(
        seen.iter()
            .any(|l| l.contains("warning: model `keyless` is not available")
                && l.contains("TB_TEST_UNSET_KEY_VAR")),
        "{seen:?}"
    );
    let models = get(&addr, "/v1/models");
    assert!(
        models.contains(r#""id":"local""#) && !models.contains("keyless"),
        "{models}"
    );
    let answer = post_json(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"keyless","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains(r#""code":"model_unavailable""#), "{answer}");
    assert!(!answer.contains("TB_TEST_UNSET_KEY_VAR"), "{answer}");
    assert!(terminate(&mut child).success());
}

/// Issue 39, items 3 and 5: `--listen 127.0.0.1:0` picks a free port and the start line prints
/// it; the start lines name every endpoint family and the chat page's address; a request for a
/// model that does not exist is told which ones do, in OpenAI's error shape.
#[test]
fn the_start_lines_name_the_port_and_every_endpoint_and_a_404_lists_the_models() {
    let dir = temp_dir("banner");
    let config = dir.join("toolbridge.toml");
    std::fs::write(&config, ONE_MODEL.replace("listen = \"127.0.0.1:0\"", "")).unwrap();
    let mut cmd = toolbridge();
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"]);
    let (mut child, addr, _) = start(cmd);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0, "the port picked is printed: {addr}");
    assert!(get(&addr, "/healthz").contains(r#"{"status":"ok"}"#));
    terminate(&mut child);

    // The whole banner: read stderr to the end once the server has stopped.
    let mut cmd = toolbridge();
    cmd.arg("serve").arg("--config").arg(&config);
    let mut child = cmd
        .args(["--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut banner = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line.contains("the chat page: http://");
        banner.push(line);
        if done {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let text = banner.join("\n");
    let addr = text
        .split("on http://")
        .nth(1)
        .and_then(|rest| rest.split("/v1").next())
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    for endpoint in [
        "POST /v1/chat/completions",
        "POST /v1/responses",
        "/v1/conversations",
        "/v1/files",
        "/v1/containers",
        "POST /v1/messages",
        "/v1/messages/count_tokens",
        "GET  /v1/models",
        "GET  /healthz",
        "GET  /metrics",
    ] {
        assert!(text.contains(endpoint), "{endpoint} in the banner: {text}");
    }
    assert!(
        text.contains(&format!("the chat page: http://{addr}/ui")),
        "{text}"
    );
    assert!(text.contains("1 model (local)"), "{text}");

    let answer = post_json(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"lokal","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "model_not_found", "{body}");
    assert_eq!(body["error"]["param"], "model", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`lokal` does not exist") && message.contains("The models here: `local`."),
        "{message}"
    );
    assert!(terminate(&mut child).success());
}

/// Issue 39, item 3: `serve --help` lists every endpoint family.
#[test]
fn serve_help_lists_every_endpoint() {
    let out = toolbridge().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for endpoint in [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/conversations",
        "/v1/files",
        "/v1/containers",
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/models",
        "/healthz",
        "/metrics",
        "/ui",
    ] {
        assert!(help.contains(endpoint), "{endpoint}: {help}");
    }
    assert!(help.contains("127.0.0.1:0"), "{help}");
}

/// Issue 39, item 5: a port in use is reported with the way out.
#[test]
fn a_port_in_use_names_the_fix() {
    let dir = temp_dir("in-use");
    let config = dir.join("toolbridge.toml");
    std::fs::write(&config, ONE_MODEL).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = toolbridge()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen on {addr}"))
            && err.contains("Address already in use")
            && err.contains("--listen 127.0.0.1:0 picks a free one and prints it"),
        "{err}"
    );
    drop(taken);
}

/// Issue 39, item 4: `models` and `serve` agree. One `openai:` model without its key and no
/// `[agent] model`: `run` would use the embedded default, `models` says serve serves it too,
/// and serve does (the keyless model gets 503, not a server with nothing to answer).
#[test]
fn models_and_serve_agree_on_the_default_model() {
    let Some(gguf) = std::env::var_os("TOOLBRIDGE_EMBEDDED_MODEL").filter(|p| !p.is_empty()) else {
        panic!("TOOLBRIDGE_EMBEDDED_MODEL is not set: run the tests through scripts/test.sh");
    };
    let dir = temp_dir("agree");
    let _ = std::fs::remove_dir_all(dir.join(".cache"));
    let cache = dir.join(".cache/toolbridge/models");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&gguf, cache.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    let config = dir.join("toolbridge.toml");
    std::fs::write(
        &config,
        "[[models]]\nname = \"gpt\"\nmodel = \"openai:gpt-4o-mini\"\n",
    )
    .unwrap();
    let in_dir = |cmd: &mut Command| {
        cmd.current_dir(&dir)
            .env("HOME", &dir)
            .env("TOOLBRIDGE_NO_PULL", "1")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("OPENAI_API_KEY");
    };
    let mut models = toolbridge();
    in_dir(&mut models);
    let out = models.arg("models").output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("embedded  (no [agent] model: run and chat use this; serve serves it too"),
        "{listing}"
    );

    let mut serve = toolbridge();
    in_dir(&mut serve);
    serve.args(["serve", "--listen", "127.0.0.1:0"]);
    let (mut child, addr, seen) = start(serve);
    assert!(
        seen.iter()
            .any(|l| l.contains("no [[models]] entry can answer; serving `embedded`")),
        "{seen:?}"
    );
    let listed = get(&addr, "/v1/models");
    assert!(listed.contains(r#""id":"embedded""#), "{listed}");
    let keyless = post_json(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"gpt","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert!(keyless.starts_with("HTTP/1.1 503"), "{keyless}");
    assert!(terminate(&mut child).success());
}
