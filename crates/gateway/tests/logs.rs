//! Keys never appear in the gateway's logs. This test has a binary of its own: `tracing` caches
//! each call site's interest process-wide, so other tests hitting the same call sites on other
//! threads without a subscriber could hide events from this test's thread-local subscriber.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const KEY_A: &str = "sk-gw-test-aaaaaaaaaaaaaaaa";

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// Current-thread runtime: every task runs on this thread, so the thread-local subscriber sees
// the gateway's logs too.
#[tokio::test(flavor = "current_thread")]
async fn keys_never_appear_in_logs() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("hi").into());
    up.push(Behavior::status(500, "boom"));
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt")],
        Some(KEY_A),
    )
    .await;
    let client = http();
    let url = format!("{}/chat/completions", gw.base_url());
    let wrong = "sk-gw-test-wrong-wrong-wrong";
    for key in [KEY_A, wrong, KEY_A] {
        client
            .post(&url)
            .bearer_auth(key)
            .json(&tool_request("local", false))
            .send()
            .await
            .unwrap();
    }
    gw.shutdown().await.unwrap();
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("upstream failed"),
        "logs were captured: {text}"
    );
    assert!(!text.contains(KEY_A) && !text.contains(wrong), "{text}");
    assert!(!text.contains("aaaaaaaa"), "{text}");
}
