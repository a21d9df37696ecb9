//! Operating the gateway: the Prometheus exposition and graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use toolbridge_gateway::ServerConfig;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

#[tokio::test]
async fn metrics_expose_the_named_series() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text(call_text("get_weather", r#"{"city": "Paris"}"#)).into());
    up.push(Reply::text(r#"<tool_call>{"name": "nope", "arguments": {}}"#).into());
    up.push(Behavior::status(500, "boom"));
    up.push(Reply::text("streamed").into());
    let config = ServerConfig {
        malformed_retries: 0,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let client = http();
    for (stream, status) in [(false, 200), (false, 200), (false, 502), (true, 200)] {
        let res = post(&client, &gw, &tool_request("local", stream)).await;
        assert_eq!(res.status(), status);
        res.bytes().await.unwrap();
    }
    assert_eq!(
        post(&client, &gw, &tool_request("nope", false))
            .await
            .status(),
        404
    );
    let res = client
        .get(format!("http://{}/metrics", gw.addr()))
        .send()
        .await
        .unwrap();
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = res.text().await.unwrap();
    for line in [
        r#"toolbridge_requests_total{status="200",stream="false"} 2"#,
        r#"toolbridge_requests_total{status="502",stream="false"} 1"#,
        r#"toolbridge_requests_total{status="200",stream="true"} 1"#,
        r#"toolbridge_requests_total{status="404",stream="false"} 1"#,
        r#"toolbridge_request_duration_seconds_count{stream="false"} 3"#,
        r#"toolbridge_request_duration_seconds_count{stream="true"} 1"#,
        r#"toolbridge_upstream_errors_total{kind="upstream"} 1"#,
        "toolbridge_tool_calls_total 1",
        r#"toolbridge_malformed_calls_total{kind="malformed"} 1"#,
        "toolbridge_fallbacks_total 0",
        "# TYPE toolbridge_request_duration_seconds histogram",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    assert!(!text.contains(&up.addr().port().to_string()));
}

#[tokio::test]
async fn shutdown_drains_in_flight_requests() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_millis(600),
        reply: Reply::text("finished"),
    });
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_millis(600),
        reply: Reply::text("streamed to the end"),
    });
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let addr = gw.addr();
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let plain = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move {
            let res = client
                .post(&url)
                .json(&tool_request("local", false))
                .send()
                .await
                .unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    });
    // The upstream answers in arrival order, and the two connections are served on different
    // threads: the second request starts once the first has reached the upstream.
    assert!(eventually(Duration::from_secs(3), || up.requests().len() == 1).await);
    let streamed = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move {
            let res = client
                .post(&url)
                .json(&tool_request("local", true))
                .send()
                .await
                .unwrap();
            res.text().await.unwrap()
        }
    });
    assert!(eventually(Duration::from_secs(3), || up.requests().len() == 2).await);
    let started = Instant::now();
    gw.shutdown().await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "shutdown waited"
    );
    let (status, body) = plain.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["message"]["content"], "finished");
    let text = streamed.await.unwrap();
    assert_eq!(assemble(&chunks(&text)).text, "streamed to the end");
    // Not listening any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_cuts_what_outlives_the_grace_period() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_secs(20),
        reply: Reply::text("too late"),
    });
    let config = ServerConfig {
        shutdown_grace_secs: 0.3,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let url = format!("{}/chat/completions", gw.base_url());
    let pending = tokio::spawn(async move {
        http()
            .post(&url)
            .json(&tool_request("local", false))
            .send()
            .await
    });
    assert!(eventually(Duration::from_secs(3), || up.requests().len() == 1).await);
    let started = Instant::now();
    gw.shutdown().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(pending.await.unwrap().is_err(), "the request was cut");
}
