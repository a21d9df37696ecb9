//! Images a Messages request gives by URL: fetched by the gateway through the outbound guard
//! (with the runtime's `[tools.fetch]` policy) and sent to the upstream inline; an address the
//! policy does not allow, a body that is not an image and a gateway with
//! `fetch_image_urls = false` give a 400 in Anthropic's shape, and nothing reaches the upstream.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolbridge_gateway::RunningGateway;
use toolbridge_runtime::Config;
use toolbridge_testkit::{Reply, TestUpstream};

use common::{http, model_entry, runtime_gateway, server_config};

/// A PNG's signature and header chunk: enough for the type sniffing.
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// A loopback server answering every request with `body` as `content_type`, for a while.
async fn image_server(content_type: &'static str, body: &'static [u8]) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let serve = async {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = conn.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(body).await;
                });
            }
        };
        // The server stops by itself.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(60), serve).await;
    });
    port
}

/// A gateway over `up` whose `[tools.fetch]` lets the guard reach 127.0.0.1 on `port`.
async fn gateway(up: &TestUpstream, port: u16, fetch_image_urls: bool) -> RunningGateway {
    let tools: toolbridge_tools::ToolsConfig = toml::from_str(&format!(
        "[fetch]\nallow = [\"127.0.0.1\"]\nallowed_ports = [{port}]\n"
    ))
    .unwrap();
    let config = Config {
        models: vec![model_entry("m", up, "native")],
        tools,
        ..Config::default()
    };
    let mut server = server_config();
    server.fetch_image_urls = fetch_image_urls;
    runtime_gateway(config, server).await
}

fn image_request(url: &str) -> Value {
    json!({
        "model": "m",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": url}},
            {"type": "text", "text": "What is in the picture?"},
        ]}],
    })
}

async fn send(gw: &RunningGateway, body: &Value) -> (u16, Value) {
    let res = http()
        .post(format!("{}/messages", gw.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (
        status,
        serde_json::from_str(&res.text().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn an_image_by_url_is_fetched_through_the_guard_and_sent_inline() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("A tiny square.").into());
    let port = image_server("image/png", PNG).await;
    let gw = gateway(&up, port, true).await;
    let (status, body) = send(
        &gw,
        &image_request(&format!("http://127.0.0.1:{port}/pic.png")),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["content"][0]["text"], "A tiny square.", "{body}");
    let requests = up.requests();
    assert_eq!(requests.len(), 1);
    let parts = &requests[0].body["messages"][0]["content"];
    let url = parts[0]["image_url"]["url"].as_str().unwrap_or_default();
    use base64::Engine as _;
    let expected = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(url, format!("data:image/png;base64,{expected}"), "{parts}");
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn images_by_url_the_guard_or_the_configuration_refuses_are_a_400() {
    let up = TestUpstream::start().await.unwrap();
    let port = image_server("text/html", b"<html>not an image</html>").await;
    let gw = gateway(&up, port, true).await;
    // An address the policy does not allow (the cloud metadata address).
    let (status, body) = send(
        &gw,
        &image_request("http://169.254.169.254/latest/meta-data"),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not be fetched"), "{message}");
    // A body that is not an image.
    let (status, body) = send(&gw, &image_request(&format!("http://127.0.0.1:{port}/x"))).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("text/html"),
        "{body}"
    );
    gw.shutdown().await.unwrap();

    // Turned off: refused without a fetch.
    let gw = gateway(&up, port, false).await;
    let (status, body) = send(&gw, &image_request(&format!("http://127.0.0.1:{port}/x"))).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fetch_image_urls"),
        "{body}"
    );
    assert!(up.requests().is_empty(), "nothing reached the upstream");
    gw.shutdown().await.unwrap();
}
