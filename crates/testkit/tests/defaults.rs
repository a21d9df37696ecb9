//! The default reply (for benchmarks and demos) and turning request recording off.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

async fn ask(up: &TestUpstream) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(format!("{}/chat/completions", up.base_url()))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

#[tokio::test]
async fn the_default_answers_when_the_queue_is_empty() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("queued").into());
    up.set_default(Some(Behavior::Reply(Reply::text("default"))));
    let (_, first) = ask(&up).await;
    assert_eq!(first["choices"][0]["message"]["content"], "queued");
    for _ in 0..3 {
        let (status, body) = ask(&up).await;
        assert_eq!(status, 200);
        assert_eq!(body["choices"][0]["message"]["content"], "default");
    }
    assert_eq!(up.remaining(), 0, "the default is never used up");
    up.set_default(None);
    assert_eq!(ask(&up).await.0, 500, "back to 'no scripted reply left'");
}

#[tokio::test]
async fn recording_can_be_turned_off() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Behavior::Reply(Reply::text("x"))));
    ask(&up).await;
    up.set_recording(false);
    ask(&up).await;
    ask(&up).await;
    assert_eq!(up.requests().len(), 1);
    up.set_recording(true);
    ask(&up).await;
    assert_eq!(up.requests().len(), 2);
}
