//! The client: configuration checks, and requests over loopback (retries, timeouts, headers).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolbridge_protocol::types::FinishReason;

use super::*;
use crate::anthropic::AnthropicClient;
use crate::error::ProviderError;
use crate::http::RetryPolicy;
use crate::wire::Upstream;

#[test]
fn config_validation_and_describe() {
    let client = AnthropicClient::new(config()).unwrap();
    assert_eq!(client.describe(), "anthropic:claude-test");
    assert!(client.native_tools());
    assert_eq!(
        client.inner.url.as_str(),
        "https://api.anthropic.com/v1/messages"
    );
    let mut c = config();
    c.base_url = "http://127.0.0.1:9/v1/".into();
    assert_eq!(
        AnthropicClient::new(c).unwrap().inner.url.as_str(),
        "http://127.0.0.1:9/v1/messages"
    );
    let mut c = config();
    c.base_url = "ftp://x".into();
    assert!(matches!(
        AnthropicClient::new(c),
        Err(ProviderError::Config(_))
    ));
    assert!(matches!(
        AnthropicClient::new(AnthropicConfig::default()),
        Err(ProviderError::Config(_))
    ));
    let mut c = config();
    c.api_key = Some("sk-ant-secret\nvalue-0123456789".into());
    let err = AnthropicClient::new(c.clone()).err().unwrap();
    assert!(!err.to_string().contains("0123456789"));
    assert!(!format!("{c:?}").contains("0123456789"));
}

enum Reply {
    /// Written whole, then the connection is closed.
    Full(String),
    /// Written, then the connection stays silent.
    Stall(String),
}

fn sse_reply(body: &[u8]) -> Reply {
    Reply::Full(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
        String::from_utf8_lossy(body)
    ))
}

fn status_reply(status: &str, extra: &str, body: &str) -> Reply {
    Reply::Full(format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
        body.len()
    ))
}

/// Serves one reply per connection, recording each request; refuses connections after.
async fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        for reply in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = socket.read(&mut chunk).await.unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len || n == 0 {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf).to_string());
            match reply {
                Reply::Full(r) => {
                    socket.write_all(r.as_bytes()).await.unwrap();
                    let _ = socket.shutdown().await;
                }
                Reply::Stall(r) => {
                    socket.write_all(r.as_bytes()).await.unwrap();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(socket);
                    });
                }
            }
        }
    });
    (base, seen)
}

fn loopback_client(base: &str) -> AnthropicClient {
    let mut c = config();
    c.base_url = base.into();
    c.api_key = Some("sk-ant-api03-secretkey-0123456789".into());
    c.extra_headers = vec![("anthropic-beta".into(), "tools-2024-05-16".into())];
    AnthropicClient::new(c).unwrap()
}

async fn collect(client: &AnthropicClient) -> Vec<Result<WireEvent, ProviderError>> {
    client
        .send(request(vec![Message::user("hi")]))
        .collect()
        .await
}

#[tokio::test]
async fn loopback_retries_an_overloaded_answer_then_streams() {
    let (base, seen) = serve(vec![
        status_reply(
            "529 Site Overloaded",
            "",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        sse_reply(TEXT),
    ])
    .await;
    let events = collect(&loopback_client(&base)).await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0], Ok(text("Hello")));
    assert_eq!(events[3], Ok(WireEvent::Finish(FinishReason::Stop)));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let req = seen[1].to_ascii_lowercase();
    assert!(req.starts_with("post /v1/messages http/1.1"));
    assert!(req.contains("x-api-key: sk-ant-api03-secretkey-0123456789"));
    assert!(req.contains("anthropic-version: 2023-06-01"));
    assert!(req.contains("anthropic-beta: tools-2024-05-16"));
    assert!(seen[1].contains(r#""model":"claude-test","max_tokens":4096"#));
    assert!(seen[1].contains(r#""stream":true"#));
}

#[tokio::test]
async fn loopback_long_retry_after_is_not_waited_for() {
    let (base, seen) = serve(vec![status_reply(
        "429 Too Many Requests",
        "retry-after: 30\r\n",
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    )])
    .await;
    let events = collect(&loopback_client(&base)).await;
    assert_eq!(
        events,
        vec![Err(ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(30)),
            message: "slow down".into()
        })]
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn loopback_auth_errors_are_final_and_redacted() {
    let (base, seen) = serve(vec![status_reply(
        "401 Unauthorized",
        "",
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-api03-secretkey-0123456789"}}"#,
    )])
    .await;
    let events = collect(&loopback_client(&base)).await;
    assert_eq!(events.len(), 1);
    let err = events[0].clone().unwrap_err();
    assert!(matches!(err, ProviderError::Auth { status: 401, .. }));
    assert!(!err.to_string().contains("0123456789"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn loopback_idle_gap_after_content_is_not_retried() {
    let partial = &TEXT[..TEXT.windows(6).position(|w| w == b"! How ").unwrap_or(0)];
    let (base, seen) = serve(vec![Reply::Stall(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{}",
        String::from_utf8_lossy(partial)
    ))])
    .await;
    let mut c = loopback_client(&base).config().clone();
    c.timeouts.idle = Duration::from_millis(300);
    let events = collect(&AnthropicClient::new(c).unwrap()).await;
    assert_eq!(
        events,
        vec![
            Ok(text("Hello")),
            Err(ProviderError::Timeout(crate::error::TimeoutKind::Idle))
        ]
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn loopback_cut_stream_before_content_is_retried() {
    let (base, seen) = serve(vec![
        sse_reply(
            &CUT[..CUT
                .windows(13)
                .position(|w| w == b"event: conten")
                .unwrap_or(0)],
        ),
        sse_reply(TWO_TOOLS),
    ])
    .await;
    let events = collect(&loopback_client(&base)).await;
    assert_eq!(events.len(), 7, "{events:?}");
    assert!(events.iter().all(Result::is_ok));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn loopback_connection_refused_is_a_connect_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut c = loopback_client(&base).config().clone();
    c.retry = RetryPolicy::none();
    let events = collect(&AnthropicClient::new(c).unwrap()).await;
    assert_eq!(events.len(), 1);
    let err = events[0].clone().unwrap_err();
    assert!(matches!(err, ProviderError::Connect(_)), "{err:?}");
    assert!(!err.to_string().contains("0123456789"));
}
