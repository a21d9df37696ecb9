//! MCP start-up failures (crate toolbridge-mcp, driven from the CLI's tests): a stdio server that
//! writes to stderr and exits is reported with its own last stderr lines (bounded), not just
//! "connection closed" (issue 13, item 22).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use toolbridge_mcp::stderr::{TAIL_BYTES, TAIL_LINES};
use toolbridge_mcp::{McpManager, McpServerConfig};

fn shell_server(name: &str, script: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, "sh", vec!["-c".into(), script.into()])
}

#[tokio::test]
async fn a_server_that_exits_shows_its_last_stderr_lines() {
    let manager = McpManager::start(&[shell_server(
        "dies",
        "echo 'starting up' >&2; echo 'fatal: MY_API_KEY is not set' >&2; exit 1",
    )])
    .await
    .unwrap();
    let failures = manager.failures();
    assert_eq!(failures.len(), 1);
    let error = &failures[0].error;
    assert!(error.contains("initialization failed"), "{error}");
    assert!(
        error.contains("starting up") && error.contains("fatal: MY_API_KEY is not set"),
        "the server's own message is shown: {error}"
    );
    let first = error.find("starting up").unwrap();
    let last = error.find("fatal: MY_API_KEY").unwrap();
    assert!(first < last, "in the order written: {error}");
    manager.shutdown().await;
}

#[tokio::test]
async fn only_the_last_stderr_lines_are_kept() {
    let script = "i=0; while [ $i -lt 200 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done; \
                  echo 'the real reason' >&2; exit 3";
    let manager = McpManager::start(&[shell_server("noisy", script)])
        .await
        .unwrap();
    let error = &manager.failures()[0].error;
    assert!(error.contains("the real reason"), "{error}");
    assert!(error.contains("noise line 199\n"), "{error}");
    assert_eq!(
        error.matches("noise line").count(),
        TAIL_LINES - 1,
        "the last {TAIL_LINES} lines: {error}"
    );
    assert!(error.len() < TAIL_BYTES + 200, "{error}");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_long_stderr_is_cut_to_the_byte_bound() {
    let script = format!(
        "head -c {} /dev/zero | tr '\\0' x >&2; echo >&2; echo 'last words' >&2; exit 1",
        TAIL_BYTES * 4
    );
    let manager = McpManager::start(&[shell_server("long", &script)])
        .await
        .unwrap();
    let error = &manager.failures()[0].error;
    assert!(error.contains("last words"), "{error}");
    assert!(
        error.len() < TAIL_BYTES + 200,
        "bounded: {} bytes",
        error.len()
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn stderr_that_is_not_utf8_is_still_shown() {
    let manager = McpManager::start(&[shell_server(
        "binary",
        "printf 'bad \\377 byte\\n' >&2; echo 'after it' >&2; exit 1",
    )])
    .await
    .unwrap();
    let error = &manager.failures()[0].error;
    assert!(
        error.contains("bad") && error.contains("after it"),
        "{error}"
    );
    manager.shutdown().await;
}
