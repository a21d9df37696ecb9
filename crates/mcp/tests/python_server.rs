//! Against a server written with the official Python SDK (`mcp`), over stdio: listing, calls with
//! arguments, a tool error, a slow tool hitting the timeout, an image result, a crash (restart on
//! next use), list_changed, and a shutdown that leaves no process behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbridge_agent::{CallStatus, DynamicTools, Tool, ToolContext};
use toolbridge_mcp::{McpManager, McpServerConfig};
use toolbridge_protocol::texts;

use common::{call, names, process_alive, py_server, start, wait_gone, workspace};

#[tokio::test]
async fn tools_are_listed_as_mcp_server_tool_with_descriptions_and_schemas() {
    let manager = start(&[py_server("py")]).await;
    let names = names(&manager);
    for expected in [
        "mcp__py__add",
        "mcp__py__fail",
        "mcp__py__slow",
        "mcp__py__image",
        "mcp__py__crash",
        "mcp__py__add_tool",
        // `weird.name/1` on the server: characters outside [A-Za-z0-9_-] become `_`.
        "mcp__py__weird_name_1",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let add = manager
        .mcp_tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__py__add")
        .unwrap();
    assert_eq!(add.spec().description, "Add two integers.");
    assert_eq!(add.server(), "py");
    let schema = add.spec().parameters.clone().unwrap();
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(manager.server_of("mcp__py__add"), Some("py"));
    let weird = call(
        &manager,
        "mcp__py__weird_name_1",
        json!({}),
        &ToolContext::default(),
    )
    .await;
    assert_eq!(
        (weird.status, weird.for_model.as_str()),
        (CallStatus::Ok, "weird")
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn calls_take_validated_arguments_and_tool_errors_reach_the_model() {
    let manager = start(&[py_server("py")]).await;
    let ctx = ToolContext::default();
    let r = call(&manager, "mcp__py__add", json!({"a": 2, "b": 3}), &ctx).await;
    assert_eq!((r.status, r.for_model.as_str()), (CallStatus::Ok, "5"));
    // Checked against the server's schema before the server sees it.
    let r = call(&manager, "mcp__py__add", json!({"a": "two", "b": 3}), &ctx).await;
    assert_eq!(r.status, CallStatus::InvalidArguments, "{}", r.for_model);
    // isError: the server's own text goes to the model as a tool error.
    let r = call(&manager, "mcp__py__fail", json!({}), &ctx).await;
    assert_eq!(r.status, CallStatus::ToolError);
    assert!(
        r.for_model.contains("the fail tool failed on purpose"),
        "{}",
        r.for_model
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_tool_hits_the_call_timeout_and_the_server_stays_usable() {
    let mut config = py_server("py");
    config.call_timeout_secs = 1;
    let manager = start(&[config]).await;
    let ctx = ToolContext::default();
    let began = Instant::now();
    let r = call(&manager, "mcp__py__slow", json!({"seconds": 30}), &ctx).await;
    assert_eq!(
        (r.status, r.for_model.as_str()),
        (CallStatus::TimedOut, texts::ERROR_TIMED_OUT)
    );
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    let pid = manager.pid("py").await.unwrap();
    let r = call(&manager, "mcp__py__add", json!({"a": 1, "b": 1}), &ctx).await;
    assert_eq!(r.for_model, "2");
    assert_eq!(
        manager.pid("py").await,
        Some(pid),
        "a timeout is not a crash"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn an_image_result_is_saved_into_the_workspace_and_returned_as_a_path() {
    let manager = start(&[py_server("py")]).await;
    let ws = workspace("image");
    let ctx = ToolContext {
        workspace: Some(ws.clone()),
        ..ToolContext::default()
    };
    let r = call(&manager, "mcp__py__image", json!({}), &ctx).await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    let path = r
        .for_model
        .strip_prefix("[image saved: ")
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{}", r.for_model));
    let path = Path::new(path);
    assert_eq!(path.parent().unwrap(), ws.join("downloads"));
    let file = path.file_name().unwrap().to_str().unwrap();
    assert!(
        file.starts_with("mcp-py-") && file.ends_with(".png"),
        "{file}"
    );
    assert!(std::fs::read(path).unwrap().starts_with(b"\x89PNG"));
    std::fs::remove_dir_all(ws).unwrap();
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_gives_the_sanitized_sentence_and_restarts_on_next_use() {
    let manager = start(&[py_server("py")]).await;
    let ctx = ToolContext::default();
    let first = manager.pid("py").await.unwrap();
    let r = call(&manager, "mcp__py__crash", json!({}), &ctx).await;
    assert_eq!(
        (r.status, r.for_model.as_str()),
        (CallStatus::Failed, texts::ERROR_FAILED)
    );
    assert!(wait_gone(first, Duration::from_secs(10)).await);
    let r = call(&manager, "mcp__py__add", json!({"a": 20, "b": 22}), &ctx).await;
    assert_eq!((r.status, r.for_model.as_str()), (CallStatus::Ok, "42"));
    let second = manager.pid("py").await.unwrap();
    assert_ne!(first, second, "a new process serves the call");
    manager.shutdown().await;
}

#[tokio::test]
async fn list_changed_refreshes_the_tool_list() {
    let manager = start(&[py_server("py")]).await;
    let ctx = ToolContext::default();
    let before = manager.version();
    assert!(!names(&manager).contains(&"mcp__py__multiply".to_owned()));
    let r = call(&manager, "mcp__py__add_tool", json!({}), &ctx).await;
    assert_eq!(r.for_model, "multiply added");
    let deadline = Instant::now() + Duration::from_secs(10);
    while manager.version() == before {
        assert!(Instant::now() < deadline, "no list_changed refresh");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(names(&manager).contains(&"mcp__py__multiply".to_owned()));
    let r = call(&manager, "mcp__py__multiply", json!({"a": 6, "b": 7}), &ctx).await;
    assert_eq!(r.for_model, "42");
    manager.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_process_behind() {
    let manager = start(&[py_server("py")]).await;
    let pid = manager.pid("py").await.unwrap();
    assert!(process_alive(pid));
    manager.shutdown().await;
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server process was ended and reaped"
    );
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_reported_and_the_others_run() {
    let mut hangs = McpServerConfig::stdio("hangs", "sleep", vec!["30".into()]);
    hangs.start_timeout_secs = Some(2);
    let missing = McpServerConfig::stdio("missing", "/nonexistent/mcp-server", vec![]);
    let mut off = py_server("off");
    off.enabled = false;
    let began = Instant::now();
    let manager = McpManager::start(&[hangs, py_server("py"), missing, off])
        .await
        .unwrap();
    let elapsed = began.elapsed();
    let failed: Vec<&str> = manager
        .failures()
        .iter()
        .map(|f| f.server.as_str())
        .collect();
    assert_eq!(failed, ["hangs", "missing"]);
    assert!(manager.failures()[0]
        .error
        .contains("did not start within 2 s"));
    assert!(manager.failures()[1]
        .error
        .contains("/nonexistent/mcp-server"));
    let names = names(&manager);
    assert!(
        names.iter().all(|n| n.starts_with("mcp__py__")),
        "{names:?}"
    );
    assert!(!names.is_empty());
    // Concurrently: the whole start-up is bounded by the slowest server, not the sum.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    eprintln!(
        "start-up with a 2 s start timeout failing: {} ms",
        elapsed.as_millis()
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn bad_configurations_are_refused() {
    let e = McpManager::start(&[py_server("py"), py_server("py")])
        .await
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "two MCP servers are named `py`");
    let e = McpManager::start(&[py_server("p y")]).await.err().unwrap();
    assert!(e.to_string().contains("may only hold letters"), "{e}");
}
