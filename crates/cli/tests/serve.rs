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
