//! Against the reference "everything" server from npm (`@modelcontextprotocol/server-everything`),
//! over stdio and over streamable HTTP on a loopback port: calls with arguments, an image, an
//! embedded resource and resource links, the call timeout, and the tools the server registers after
//! initialization (announced with list_changed; whether the first listing already holds them is a
//! race, so list_changed itself is tested deterministically with the Python server).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use serde_json::json;
use toolbridge_agent::{CallStatus, ToolContext};
use toolbridge_mcp::{McpManager, McpServerConfig};
use toolbridge_protocol::texts;

use common::{call, everything_stdio, names, start, wait_gone, workspace, EverythingHttp};

async fn exercise(manager: &std::sync::Arc<McpManager>, server: &str) {
    let tool = |t: &str| format!("mcp__{server}__{t}");
    let ws = workspace(server);
    let ctx = ToolContext {
        workspace: Some(ws.clone()),
        ..ToolContext::default()
    };
    let names = names(manager);
    assert!(names.contains(&tool("get-sum")), "{names:?}");

    let r = call(manager, &tool("get-sum"), json!({"a": 2, "b": 40}), &ctx).await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    assert!(r.for_model.contains("42"), "{}", r.for_model);

    let r = call(manager, &tool("echo"), json!({"message": "héllo"}), &ctx).await;
    assert!(r.for_model.contains("héllo"), "{}", r.for_model);

    let r = call(manager, &tool("get-sum"), json!({"a": "x"}), &ctx).await;
    assert_eq!(r.status, CallStatus::InvalidArguments);

    let r = call(manager, &tool("get-tiny-image"), json!({}), &ctx).await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    let saved = r
        .for_model
        .lines()
        .find_map(|l| l.strip_prefix("[image saved: ")?.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{}", r.for_model));
    assert!(saved.starts_with(ws.join("downloads").to_str().unwrap()));
    assert!(std::fs::read(saved).unwrap().starts_with(b"\x89PNG"));

    let r = call(
        manager,
        &tool("get-resource-reference"),
        json!({"resourceType": "Text", "resourceId": 1}),
        &ctx,
    )
    .await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    assert!(r.for_model.contains("[resource "), "{}", r.for_model);

    let r = call(
        manager,
        &tool("get-resource-links"),
        json!({"count": 2}),
        &ctx,
    )
    .await;
    assert_eq!(r.status, CallStatus::Ok, "{}", r.for_model);
    assert!(r.for_model.contains("[resource link: "), "{}", r.for_model);
    std::fs::remove_dir_all(ws).unwrap();
}

/// The tools registered after initialization show up (first listing or list_changed).
async fn wait_for_tool(manager: &McpManager, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !names(manager).iter().any(|n| n == name) {
        assert!(
            Instant::now() < deadline,
            "{name} never appeared: {:?}",
            names(manager)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn everything_over_stdio() {
    let mut config = everything_stdio("ev");
    config.call_timeout_secs = 1;
    let manager = start(&[config]).await;
    exercise(&manager, "ev").await;
    wait_for_tool(&manager, "mcp__ev__simulate-research-query").await;

    let began = Instant::now();
    let r = call(
        &manager,
        "mcp__ev__trigger-long-running-operation",
        json!({"duration": 20, "steps": 2}),
        &ToolContext::default(),
    )
    .await;
    assert_eq!(
        (r.status, r.for_model.as_str()),
        (CallStatus::TimedOut, texts::ERROR_TIMED_OUT)
    );
    assert!(began.elapsed() < Duration::from_secs(5));

    let pid = manager.pid("ev").await.unwrap();
    manager.shutdown().await;
    assert!(wait_gone(pid, Duration::from_secs(1)).await);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let server = EverythingHttp::start().await;
    let mut config = McpServerConfig::http("evh", server.url.clone());
    config.call_timeout_secs = 1;
    // Headers reach the server (and a variable in a value is expanded); the server ignores them.
    config.headers.insert(
        "X-Test-Token".into(),
        "Bearer ${TOOLBRIDGE_MCP_TEST_TOKEN}".into(),
    );
    std::env::set_var("TOOLBRIDGE_MCP_TEST_TOKEN", "t0ken");
    let manager = start(&[config]).await;
    exercise(&manager, "evh").await;
    wait_for_tool(&manager, "mcp__evh__simulate-research-query").await;
    let r = call(
        &manager,
        "mcp__evh__trigger-long-running-operation",
        json!({"duration": 20, "steps": 2}),
        &ToolContext::default(),
    )
    .await;
    assert_eq!(r.status, CallStatus::TimedOut);
    manager.shutdown().await;
    server.stop().await;
}
