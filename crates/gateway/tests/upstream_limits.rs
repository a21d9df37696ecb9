//! Issue 13 item 2: an upstream answering a 300 MiB reply (one JSON body, or a stream of text
//! deltas; OpenAI-compatible and Anthropic) gets 502 `upstream_bad_response`, and the gateway's
//! memory stays bounded by the response cap (16 MiB by default), not by what the upstream sends.
//!
//! One test in its own binary: peak memory is a per-process figure, so nothing else may run
//! alongside it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{json, Value};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const HUGE: u64 = 300 << 20;

/// Peak resident memory of this process so far (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test]
async fn a_300_mib_upstream_reply_is_a_502_and_memory_stays_bounded() {
    let up = TestUpstream::start().await.unwrap();
    let mut whole = arm(&up, "native");
    whole["name"] = json!("whole");
    whole["stream"] = json!(false);
    let mut streamed = arm(&up, "native");
    streamed["name"] = json!("streamed");
    let claude = json!({
        "name": "claude", "provider": "anthropic", "base_url": up.anthropic_base_url(),
        "upstream_model": "mock-model", "max_retries": 0, "tool_mode": "native",
    });
    let gw = start(
        server_config(),
        vec![model(whole), model(streamed), model(claude)],
    )
    .await;
    let client = http();
    let ask = |name: &str, stream: bool| json!({"model": name, "messages": [{"role": "user", "content": "hi"}], "stream": stream});
    // Warm up every path once with a small reply, so the baseline holds what serving costs.
    for name in ["whole", "streamed", "claude"] {
        up.push(Reply::text("small").into());
        let res = post(&client, &gw, &ask(name, false)).await;
        assert_eq!(res.status(), 200, "{name}");
    }
    let before = peak_rss();
    let cases = [
        ("whole", false, false),
        ("whole", true, false),
        ("streamed", false, false),
        ("claude", false, true),
        ("claude", false, false),
    ];
    for (name, client_streams, json_body) in cases {
        up.push(Behavior::Huge {
            bytes: HUGE,
            json: json_body,
        });
        let res = post(&client, &gw, &ask(name, client_streams)).await;
        assert_eq!(
            res.status(),
            502,
            "{name}, client streams: {client_streams}"
        );
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["error"]["code"], "upstream_bad_response",
            "{name}: {body}"
        );
    }
    let growth = peak_rss().saturating_sub(before);
    eprintln!("peak memory growth: {} MiB", growth >> 20);
    assert!(
        growth < 64 << 20,
        "peak memory grew by {} MiB",
        growth >> 20
    );
}
