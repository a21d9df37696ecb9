//! Every default of docs/src/security.md, "The gateway", each with its test: keys, body and JSON
//! limits, head size and header-read timeouts, the connection cap, the response timeouts,
//! cancellation on disconnect, rate limits, no CORS, and errors and logs that leak nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolbridge_gateway::{Gateway, GatewayError, ServerConfig};
use toolbridge_protocol::openai::ErrorBody;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const KEY_A: &str = "sk-gw-test-aaaaaaaaaaaaaaaa";
const KEY_B: &str = "sk-gw-test-bbbbbbbbbbbbbbbb";

/// Reads an error answer and checks it is OpenAI's shape.
async fn error_of(res: reqwest::Response) -> ErrorBody {
    assert_eq!(res.headers()["content-type"], "application/json");
    let text = res.text().await.unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = v["error"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["message", "type", "param", "code"], "{text}");
    serde_json::from_value(v).unwrap()
}

/// Reads from a raw connection until the server closes it or `limit` passes.
async fn read_all(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return (String::from_utf8_lossy(&buf).into_owned(), false),
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&buf).into_owned(), true),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test]
async fn bearer_keys_missing_wrong_and_right() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("hi").into());
    let keys = format!("{KEY_A},{KEY_B}");
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt")],
        Some(&keys),
    )
    .await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let req = tool_request("local", false);

    let missing = client.post(&url).json(&req).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(
        error_of(missing).await.error.code,
        Some(json!("missing_api_key"))
    );

    let wrong_key = "sk-gw-test-aaaaaaaaaaaaaaaX";
    let wrong = client
        .post(&url)
        .bearer_auth(wrong_key)
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let body = error_of(wrong).await;
    assert_eq!(body.error.code, Some(json!("invalid_api_key")));
    assert!(!body.error.message.contains(wrong_key));
    let basic = client
        .post(&url)
        .basic_auth("u", Some(KEY_A))
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
    assert!(up.requests().is_empty(), "nothing reached the upstream");

    let right = client
        .post(&url)
        .bearer_auth(KEY_B)
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);

    let base = format!("http://{}", gw.addr());
    let get = |path: &str, key: Option<&str>| {
        let mut r = client.get(format!("{base}{path}"));
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        r.send()
    };
    assert_eq!(get("/v1/models", None).await.unwrap().status(), 401);
    assert_eq!(get("/v1/models", Some(KEY_A)).await.unwrap().status(), 200);
    assert_eq!(get("/metrics", None).await.unwrap().status(), 401);
    let metrics = get("/metrics", Some(KEY_A))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains(KEY_A) && !metrics.contains(KEY_B));
    assert_eq!(get("/healthz", None).await.unwrap().status(), 200);
}

#[tokio::test]
async fn without_keys_only_loopback_is_allowed() {
    let config = ServerConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..server_config()
    };
    let gw = Gateway::new(config, vec![], &BTreeMap::new()).unwrap();
    // Refused before anything is bound.
    let err = gw.bind().await.unwrap_err();
    assert!(matches!(err, GatewayError::NoKeysOnPublicAddress(_)));
    assert!(err.to_string().contains("without API keys"));
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_plain_and_chunked() {
    let up = TestUpstream::start().await.unwrap();
    let config = ServerConfig {
        body_limit: 4096,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let mut big = tool_request("local", false);
    big["messages"][0]["content"] = json!("x".repeat(10_000));
    let plain = client.post(&url).json(&big).send().await.unwrap();
    assert_eq!(plain.status(), 413);
    assert_eq!(
        error_of(plain).await.error.code,
        Some(json!("request_too_large"))
    );

    // Chunked: no Content-Length, the limit is found while reading.
    let bytes = serde_json::to_vec(&big).unwrap();
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
        bytes.chunks(1000).map(|c| Ok(c.to_vec())).collect();
    let chunked = client
        .post(&url)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)))
        .send()
        .await
        .unwrap();
    assert_eq!(chunked.status(), 413);
    error_of(chunked).await;
    assert!(up.requests().is_empty());
}

#[tokio::test]
async fn deep_json_gets_400_in_openai_shape() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let deep = format!(
        r#"{{"model":"local","messages":[{{"role":"user","content":"x"}}],"metadata":{}1{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let res = http()
        .post(format!("{}/chat/completions", gw.base_url()))
        .header("content-type", "application/json")
        .body(deep)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body = error_of(res).await;
    assert_eq!(body.error.kind, "invalid_request_error");
    assert!(body.error.message.contains("nested more than 64 levels"));

    let broken = http()
        .post(format!("{}/chat/completions", gw.base_url()))
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
    error_of(broken).await;
}

#[tokio::test]
async fn huge_headers_get_431() {
    let gw = start(server_config(), vec![]).await;
    let mut s = TcpStream::connect(gw.addr()).await.unwrap();
    let req = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(100_000)
    );
    // The server may close before reading everything; a write error is fine.
    let _ = s.write_all(req.as_bytes()).await;
    let (text, _) = read_all(&mut s, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{text:?}");
}

#[tokio::test]
async fn silent_and_half_sent_connections_are_closed_after_the_header_timeout() {
    let config = ServerConfig {
        header_read_timeout_secs: 0.3,
        ..server_config()
    };
    let gw = start(config, vec![]).await;

    let started = Instant::now();
    let mut silent = TcpStream::connect(gw.addr()).await.unwrap();
    let (text, closed) = read_all(&mut silent, Duration::from_secs(3)).await;
    assert!(closed, "a silent connection is closed");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert!(!text.starts_with("HTTP/1.1 200"));

    let started = Instant::now();
    let mut half = TcpStream::connect(gw.addr()).await.unwrap();
    half.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        .await
        .unwrap();
    let (_, closed) = read_all(&mut half, Duration::from_secs(3)).await;
    assert!(closed, "a half-sent request head is closed");
    assert!(started.elapsed() < Duration::from_secs(2));

    // A kept-alive connection that goes quiet after its response is closed the same way.
    let mut idle = TcpStream::connect(gw.addr()).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let (text, closed) = read_all(&mut idle, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 200") && closed, "{text:?}");
}

#[tokio::test]
async fn a_slow_body_gets_408() {
    let config = ServerConfig {
        body_read_timeout_secs: 0.3,
        ..server_config()
    };
    let up = TestUpstream::start().await.unwrap();
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let mut s = TcpStream::connect(gw.addr()).await.unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
        .await
        .unwrap();
    let (text, _) = read_all(&mut s, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text:?}");
    assert!(text.contains("\"request_timeout\""));
}

/// A raw POST whose body stops short of its `Content-Length`, then drips one byte every 100 ms;
/// gives what the server answered (read until it closes or 5 s pass).
async fn post_dripping(addr: SocketAddr, path: &str, content_type: &str, start: &[u8]) -> String {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nContent-Length: 100000\r\n\r\n"
    );
    write.write_all(head.as_bytes()).await.unwrap();
    write.write_all(start).await.unwrap();
    let drip = tokio::spawn(async move {
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(b"x").await.is_err() {
                break;
            }
        }
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut buf)).await;
    drip.abort();
    String::from_utf8_lossy(&buf).into_owned()
}

#[tokio::test]
async fn slow_bodies_on_every_route_get_408_uploads_included() {
    let config = ServerConfig {
        body_read_timeout_secs: 0.3,
        upload_progress_timeout_secs: 0.5,
        ..server_config()
    };
    let gw = start(config, vec![]).await;
    for path in ["/v1/conversations", "/v1/conversations/conv_1"] {
        let text = post_dripping(gw.addr(), path, "application/json", b"{\"metadata\":").await;
        assert!(text.starts_with("HTTP/1.1 408"), "{path}: {text:?}");
        assert!(text.contains("\"request_timeout\""), "{path}: {text:?}");
    }
    // A byte every 100 ms is no progress for an upload: it is cut after one period too.
    let multipart =
        b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n";
    let text = post_dripping(
        gw.addr(),
        "/v1/files",
        "multipart/form-data; boundary=b",
        multipart,
    )
    .await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text:?}");
    assert!(text.contains("\"request_timeout\""), "{text:?}");
    // The server still answers.
    let health = http()
        .get(format!("http://{}/healthz", gw.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn every_error_answer_is_json_with_the_field_named() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let base = format!("http://{}", gw.addr());

    // Not multipart: axum's rejection was plain text.
    let res = client
        .post(format!("{base}/v1/files"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_eq!(error_of(res).await.error.param.as_deref(), Some("file"));

    // A query value of the wrong type: serde's text, plain, before.
    for path in [
        "/v1/files?limit=-1",
        "/v1/responses/resp_1/input_items?limit=x",
    ] {
        let res = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(res.status(), 400, "{path}");
        assert_eq!(
            error_of(res).await.error.param.as_deref(),
            Some("limit"),
            "{path}"
        );
    }

    // A path that is not UTF-8 once decoded, and a missing page of the web UI.
    for path in ["/v1/files/%FF", "/ui/missing.js"] {
        let res = client.get(format!("{base}{path}")).send().await.unwrap();
        assert!(res.status().is_client_error(), "{path}");
        error_of(res).await;
    }

    // An upload announcing 10 GB: 413 before a byte of it is read (400 before).
    let mut s = TcpStream::connect(gw.addr()).await.unwrap();
    s.write_all(b"POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10000000000\r\n\r\n--b\r\n")
        .await
        .unwrap();
    let (text, _) = read_all(&mut s, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text:?}");
    let body: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["param"], "file", "{body}");
    assert_eq!(body["error"]["code"], "request_too_large", "{body}");

    // A body field of the wrong type is named, not told by line and column only.
    for (body, param) in [
        (
            json!({"model": "local", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
            "temperature",
        ),
        (
            json!({"model": "local", "messages": [{"role": "user", "content": "x"}, {"role": "user", "content": 5}]}),
            "messages[1]",
        ),
    ] {
        let res = post(&client, &gw, &body).await;
        assert_eq!(res.status(), 400, "{body}");
        let error = error_of(res).await.error;
        assert_eq!(error.param.as_deref(), Some(param), "{body}");
        assert!(error.message.contains(param), "{}", error.message);
    }
    assert!(up.requests().is_empty());
}

#[tokio::test]
async fn invalid_chat_requests_get_a_400_naming_the_field() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let mut bad_properties = time_tool();
    bad_properties["function"]["parameters"]["properties"] = json!(5);
    let cases = [
        (
            json!({"tools": [weather_tool(), bad_properties]}),
            "tools[1].function.parameters.properties",
        ),
        (
            json!({"stream": true, "stream_options": "x"}),
            "stream_options",
        ),
    ];
    for (fields, param) in cases {
        let mut body = json!({"model": "local", "messages": [{"role": "user", "content": "x"}]});
        for (k, v) in fields.as_object().unwrap() {
            body[k] = v.clone();
        }
        let res = post(&client, &gw, &body).await;
        assert_eq!(res.status(), 400, "{body}");
        assert_eq!(
            error_of(res).await.error.param.as_deref(),
            Some(param),
            "{body}"
        );
    }
    assert!(up.requests().is_empty());
}

#[tokio::test]
async fn connections_past_the_cap_wait() {
    let config = ServerConfig {
        max_connections: 1,
        ..server_config()
    };
    let gw = start(config, vec![]).await;
    let get = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let mut first = TcpStream::connect(gw.addr()).await.unwrap();
    first.write_all(get).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = first.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));

    // The first connection is kept alive and holds the only slot.
    let mut second = TcpStream::connect(gw.addr()).await.unwrap();
    second.write_all(get).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(400), second.read(&mut buf)).await;
    assert!(waited.is_err(), "served past the connection cap");

    drop(first);
    let n = tokio::time::timeout(Duration::from_secs(3), second.read(&mut buf))
        .await
        .expect("served once the slot is free")
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn slow_upstreams_hit_the_request_timeout() {
    let up = TestUpstream::start().await.unwrap();
    for _ in 0..2 {
        up.push(Behavior::SlowFirstByte {
            delay: Duration::from_secs(3),
            reply: Reply::text("late"),
        });
    }
    let config = ServerConfig {
        request_timeout_secs: 0.3,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    for stream in [false, true] {
        let started = Instant::now();
        let res = post(&http(), &gw, &tool_request("local", stream)).await;
        assert_eq!(res.status(), 504);
        assert_eq!(error_of(res).await.error.code, Some(json!("timeout")));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

#[tokio::test]
async fn a_silent_stream_ends_with_an_error_event_at_the_idle_limit() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 2,
        stall: Duration::from_secs(4),
        reply: Reply::text("Hello there, all is well.").with_chunk_size(4),
    });
    let config = ServerConfig {
        stream_idle_timeout_secs: 0.4,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let started = Instant::now();
    let text = post(&http(), &gw, &tool_request("local", true))
        .await
        .text()
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    let data = sse_data(&text);
    assert!(data[0].contains("\"role\":\"assistant\""));
    assert!(text.contains("Hell"), "content before the stall: {text}");
    let last: ErrorBody = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last.error.code, Some(json!("timeout")));
    assert!(!text.contains("[DONE]"));
}

/// A fake upstream that answers one request with SSE headers and one chunk, then waits; it
/// reports when the gateway closes the connection.
async fn hanging_upstream() -> (String, tokio::sync::oneshot::Receiver<Instant>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let mut seen = Vec::new();
        // Read the request head and body (Content-Length) before answering.
        loop {
            let n = s.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if seen.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let event = "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
        s.write_all(chunk.as_bytes()).await.unwrap();
        // Wait for the gateway to hang up (or 30 s at most).
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        let _ = tx.send(Instant::now());
    });
    (format!("http://{addr}/v1"), rx)
}

fn hanging_model(base_url: &str) -> toolbridge_providers::Model {
    model(json!({
        "name": "hang",
        "base_url": base_url,
        "upstream_model": "m",
        "tool_mode": "prompt",
        "max_retries": 0,
        "idle_timeout_secs": 20.0,
    }))
}

#[tokio::test]
async fn a_client_hanging_up_mid_stream_cancels_the_upstream_request() {
    let (url, closed) = hanging_upstream().await;
    let gw = start(server_config(), vec![hanging_model(&url)]).await;
    let res = post(&http(), &gw, &tool_request("hang", true)).await;
    let mut body = res.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("Hel"));
    let hung_up = Instant::now();
    drop(body);
    let at = tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the upstream connection was not closed")
        .unwrap();
    assert!(at.duration_since(hung_up) < Duration::from_secs(2));
}

#[tokio::test]
async fn a_client_hanging_up_before_the_answer_cancels_the_upstream_request() {
    let (url, closed) = hanging_upstream().await;
    let gw = start(server_config(), vec![hanging_model(&url)]).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let gave_up = post_expect_err(&client, &gw, &tool_request("hang", false)).await;
    let at = tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the upstream connection was not closed")
        .unwrap();
    assert!(at.duration_since(gave_up) < Duration::from_secs(2));
}

async fn post_expect_err(
    client: &reqwest::Client,
    gw: &toolbridge_gateway::RunningGateway,
    body: &Value,
) -> Instant {
    let r = client
        .post(format!("{}/chat/completions", gw.base_url()))
        .json(body)
        .send()
        .await;
    assert!(r.is_err(), "the client timed out");
    Instant::now()
}

#[tokio::test]
async fn after_a_disconnect_the_upstream_serves_the_next_request_at_once() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_secs(30),
        reply: Reply::text("abcdefgh").with_chunk_size(2),
    });
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let res = post(&client, &gw, &tool_request("local", true)).await;
    let mut body = res.bytes_stream();
    body.next().await.unwrap().unwrap();
    drop(body);
    up.push(Reply::text("next").into());
    let started = Instant::now();
    let v: Value = post(&client, &gw, &tool_request("local", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "next");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn rate_limits_answer_429_with_retry_after() {
    let up = TestUpstream::start().await.unwrap();
    let config = ServerConfig {
        rate_limit_per_minute: 6,
        rate_limit_burst: 2,
        ..server_config()
    };
    let keys = format!("{KEY_A},{KEY_B}");
    let gw = start_with_keys(config, vec![single("local", &up, "prompt")], Some(&keys)).await;
    let client = http();
    let models = |key: &'static str| {
        client
            .get(format!("{}/models", gw.base_url()))
            .bearer_auth(key)
            .send()
    };
    assert_eq!(models(KEY_A).await.unwrap().status(), 200);
    assert_eq!(models(KEY_A).await.unwrap().status(), 200);
    let limited = models(KEY_A).await.unwrap();
    assert_eq!(limited.status(), 429);
    let after: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&after), "{after}");
    let body = error_of(limited).await;
    assert_eq!(body.error.kind, "rate_limit_error");
    assert_eq!(
        models(KEY_B).await.unwrap().status(),
        200,
        "limits are per key"
    );

    // Without keys the limit is per client address.
    let config = ServerConfig {
        rate_limit_per_minute: 6,
        rate_limit_burst: 1,
        ..server_config()
    };
    let open = start(config, vec![]).await;
    let url = format!("{}/models", open.base_url());
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    assert_eq!(client.get(&url).send().await.unwrap().status(), 429);
}

#[tokio::test]
async fn cors_is_off() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("hi").into());
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let preflight = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    assert!(!preflight.status().is_success(), "{}", preflight.status());
    let no_cors = |h: &reqwest::header::HeaderMap| {
        !h.keys().any(|k| k.as_str().starts_with("access-control-"))
    };
    assert!(no_cors(preflight.headers()));
    // Without keys a foreign origin is refused outright (issue 13 item 3) …
    let res = client
        .post(&url)
        .header("origin", "https://evil.example")
        .json(&tool_request("local", false))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert!(no_cors(res.headers()));
    // … and an allowed one is served, still without CORS headers.
    let gw = start(
        ServerConfig {
            allowed_origins: vec!["https://app.example".into()],
            ..server_config()
        },
        vec![single("local", &up, "prompt")],
    )
    .await;
    let res = client
        .post(format!("{}/chat/completions", gw.base_url()))
        .header("origin", "https://app.example")
        .json(&tool_request("local", false))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(no_cors(res.headers()));
}

/// Issue 13 item 3: the preconditions of CSRF and DNS rebinding against a keyless gateway.
#[tokio::test]
async fn a_keyless_gateway_refuses_foreign_origins_and_hosts_and_non_json_bodies() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Reply::text("hi").into()));
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let body = serde_json::to_string(&tool_request("local", false)).unwrap();

    // A "simple" cross-origin request: text/plain needs no preflight.
    let res = client
        .post(&url)
        .header("origin", "http://attacker.example")
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert_eq!(
        error_of(res).await.error.code,
        Some(json!("origin_not_allowed"))
    );
    // The same body as text/plain without Origin: 415.
    let res = client
        .post(&url)
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    assert_eq!(
        error_of(res).await.error.code,
        Some(json!("unsupported_media_type"))
    );
    let res = client.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(res.status(), 415, "no Content-Type at all");
    // DNS rebinding: the page's own host name reaches the loopback port.
    for path in ["/v1/chat/completions", "/v1/models", "/healthz"] {
        let res = client
            .request(
                if path.ends_with("completions") {
                    reqwest::Method::POST
                } else {
                    reqwest::Method::GET
                },
                format!("http://{}{path}", gw.addr()),
            )
            .header("host", "attacker.example")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{path}");
        assert_eq!(
            error_of(res).await.error.code,
            Some(json!("host_not_allowed"))
        );
    }
    for host in ["localhost", "127.0.0.1:8080", "[::1]:1"] {
        let res = client
            .post(&url)
            .header("host", host)
            .header("content-type", "application/json; charset=utf-8")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{host}");
    }
    assert_eq!(
        up.requests().len(),
        3,
        "only the loopback hosts reached the upstream"
    );

    // With keys, the key decides: any Host and Origin are served.
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt")],
        Some(KEY_A),
    )
    .await;
    let res = client
        .post(format!("{}/chat/completions", gw.base_url()))
        .bearer_auth(KEY_A)
        .header("host", "gateway.example")
        .header("origin", "https://app.example")
        .json(&tool_request("local", false))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn errors_never_show_upstream_urls_paths_or_keys() {
    let up = TestUpstream::start().await.unwrap();
    let port = up.addr().port().to_string();
    let leak = format!(
        "failed at /srv/secret/model.py for http://127.0.0.1:{port}/v1 with key sk-upstream-0123456789"
    );
    up.push(Behavior::status(500, leak.clone()));
    up.push(Behavior::status(
        401,
        "Incorrect API key provided: sk-upstream-0123456789",
    ));
    up.push(Behavior::Status {
        code: 429,
        message: leak.clone(),
        retry_after: Some(3),
    });
    let mut env = BTreeMap::new();
    env.insert("UP_KEY".to_owned(), "sk-upstream-0123456789".to_owned());
    let mut a = arm(&up, "native");
    a["name"] = json!("gpt");
    a["api_key_env"] = json!("UP_KEY");
    let cfg: toolbridge_providers::config::ModelConfig = serde_json::from_value(a).unwrap();
    let gpt = toolbridge_providers::config::build_model(&cfg, &env).unwrap();
    // An upstream that is not there at all.
    let dead_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = model(json!({
        "name": "dead",
        "base_url": format!("http://127.0.0.1:{dead_port}/v1"),
        "upstream_model": "m",
        "max_retries": 0,
    }));
    let gw = start(server_config(), vec![gpt, dead]).await;
    let client = http();
    let mut seen = Vec::new();
    for (model, status) in [("gpt", 502), ("gpt", 502), ("gpt", 429), ("dead", 502)] {
        for stream in [false] {
            let res = post(&client, &gw, &tool_request(model, stream)).await;
            assert_eq!(res.status(), status);
            if status == 429 {
                assert_eq!(res.headers()["retry-after"], "3");
            }
            let text = res.text().await.unwrap();
            let body: ErrorBody = serde_json::from_str(&text).unwrap();
            assert!(body.error.message.starts_with("upstream error ("), "{text}");
            seen.push(text);
        }
    }
    for text in &seen {
        for secret in [
            port.as_str(),
            &dead_port.to_string(),
            "127.0.0.1",
            "/srv/secret",
            "sk-upstream",
            "0123456789",
            "http://",
        ] {
            assert!(!text.contains(secret), "{secret} leaked in {text}");
        }
    }
}
