//! A stdio server's environment: toolbridge's own holds API keys (the providers', the gateway's
//! `[server] api_keys_env`), and a server must see none of them — only the inherited variables
//! (`PATH`, `HOME`, …) and what its `env` entry names, `${VAR}` read from toolbridge's.
//!
//! The keys are set in a child process of this test binary (so this process's environment is
//! never changed while other tests run): it starts the Python server, asks it for its
//! environment and prints it; this test reads that and checks it.
//!
//! Needs the `mcp` Python package: `TOOLBRIDGE_MCP_PYTHON` (scripts/test.sh sets it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use serde_json::json;
use toolbridge_agent::{CallStatus, ToolContext};

use common::{call, py_server, start};

/// What the child prints before the server's environment.
const MARK: &str = "SERVER ENVIRONMENT: ";

/// The variable the child's server entry names as `${…}`.
const OPERATOR_VAR: &str = "TB_TEST_OPERATOR_VAR";

#[test]
fn a_stdio_server_gets_no_secrets_of_toolbridges_environment() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("TOOLBRIDGE_API_KEYS", "sk-gw-1,sk-gw-2"),
        ("KEY_A", "secret-a"),
        ("KEY_B", "secret-b"),
    ];
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_reports_its_servers_environment"])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .envs(secrets)
        .env(OPERATOR_VAR, "named-by-the-operator")
        .env("LC_TIME", "C.UTF-8")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reported = stdout
        .lines()
        .find_map(|line| line.split_once(MARK).map(|(_, json)| json))
        .unwrap_or_else(|| panic!("no environment in: {stdout}"));
    let env: BTreeMap<String, String> = serde_json::from_str(reported).unwrap();

    for (name, value) in secrets {
        assert!(
            !env.contains_key(name),
            "{name} reached the server: {env:?}"
        );
        assert!(
            !env.values().any(|v| v.contains(value)),
            "the value of {name} reached the server: {env:?}"
        );
    }
    assert_eq!(
        env.get("PATH").map(String::as_str),
        std::env::var("PATH").ok().as_deref()
    );
    assert_eq!(
        env.get("HOME").map(String::as_str),
        std::env::var("HOME").ok().as_deref()
    );
    assert_eq!(env.get("LC_TIME").map(String::as_str), Some("C.UTF-8"));
    // The operator's `env` entry: a literal, and a variable passed on by name.
    assert_eq!(
        env.get("NAMED").map(String::as_str),
        Some("named-by-the-operator")
    );
    assert_eq!(env.get("LITERAL").map(String::as_str), Some("plain"));
    // Nothing else of ours: only what the server's own runtime adds may join these.
    let ours = [
        "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "NAMED", "LITERAL",
    ];
    let unexpected: Vec<&String> = env
        .keys()
        .filter(|k| !ours.contains(&k.as_str()) && !k.starts_with("LC_"))
        .filter(|k| std::env::var_os(k).is_some())
        .collect();
    assert!(unexpected.is_empty(), "inherited: {unexpected:?}");
}

/// Run by the test above in a child process whose environment holds the keys.
#[tokio::test]
#[ignore = "run by a_stdio_server_gets_no_secrets_of_toolbridges_environment in a child process"]
async fn child_reports_its_servers_environment() {
    let mut config = py_server("py");
    config
        .env
        .insert("NAMED".into(), format!("${{{OPERATOR_VAR}}}"));
    config.env.insert("LITERAL".into(), "plain".into());
    let manager = start(&[config]).await;
    let result = call(
        &manager,
        "mcp__py__environment",
        json!({}),
        &ToolContext::default(),
    )
    .await;
    assert_eq!(result.status, CallStatus::Ok, "{}", result.for_model);
    println!("{MARK}{}", result.full);
    manager.shutdown().await;
}
