#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(up: &TestUpstream, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("http://{}{path}", up.addr()))
        .header("authorization", "Bearer sk-test")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn openai(up: &TestUpstream, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", up.base_url()))
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn anthropic(up: &TestUpstream, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", up.anthropic_base_url()))
        .header("x-api-key", "ak-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The JSON payloads of the `data:` lines, with `[DONE]` as a string.
fn data_lines(body: &str) -> Vec<Value> {
    assert!(body.ends_with("\n\n") || body.is_empty(), "{body:?}");
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|event| {
            let line = event.strip_prefix("data: ").expect(event);
            assert!(!line.contains('\n'), "one line per event: {event:?}");
            if line == "[DONE]" {
                Value::String("[DONE]".into())
            } else {
                serde_json::from_str(line).expect(line)
            }
        })
        .collect()
}

/// Anthropic events: (event name, data JSON).
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|event| {
            let mut lines = event.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").expect(event);
            let data = lines.next().unwrap().strip_prefix("data: ").expect(event);
            assert!(lines.next().is_none());
            let data: Value = serde_json::from_str(data).unwrap();
            assert_eq!(data["type"], name, "event name matches data type");
            (name.to_owned(), data)
        })
        .collect()
}

fn chunks_only(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|v| v.is_object()).collect()
}

fn concat(chunks: &[&Value], pointer: &str) -> String {
    chunks
        .iter()
        .filter_map(|c| c.pointer(pointer).and_then(Value::as_str))
        .collect()
}

#[tokio::test]
async fn openai_stream_text_reasoning_and_tool_calls() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "Hello, wörld!".into(),
        reasoning: "Let me think.".into(),
        tool_calls: vec![
            ("get_weather".into(), r#"{"city":"Paris"}"#.into()),
            ("noop".into(), "{}".into()),
        ],
        chunk_size: 4,
        ..Reply::default()
    }));
    let resp = openai(
        &up,
        json!({"model": "gpt-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let body = resp.text().await.unwrap();
    let lines = data_lines(&body);
    assert_eq!(lines.last().unwrap(), "[DONE]");
    let chunks = chunks_only(&lines);
    assert_eq!(chunks.len(), lines.len() - 1);
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"));
    for c in &chunks {
        assert_eq!(c["id"], id);
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-x");
        assert!(c["created"].as_u64().unwrap() > 1_600_000_000);
        assert!(c.get("usage").is_none(), "no usage without include_usage");
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
        assert_eq!(c["choices"][0]["index"], 0);
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "reasoning_content": "Let "})
    );
    for c in &chunks[1..] {
        assert!(c["choices"][0]["delta"].get("role").is_none());
    }
    assert_eq!(
        concat(&chunks, "/choices/0/delta/reasoning_content"),
        "Let me think."
    );
    assert_eq!(concat(&chunks, "/choices/0/delta/content"), "Hello, wörld!");
    for c in &chunks {
        if let Some(piece) = c
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            assert!(piece.len() <= 4 || piece.chars().count() == 1, "{piece:?}");
        }
    }
    // Reasoning comes before text, text before tool calls.
    let first_of = |key: &str| {
        chunks
            .iter()
            .position(|c| {
                c["choices"][0]["delta"]
                    .get(key)
                    .is_some_and(|v| v.as_str() != Some(""))
            })
            .unwrap()
    };
    assert!(first_of("reasoning_content") < first_of("content"));
    assert!(first_of("content") < first_of("tool_calls"));

    let fragments: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/tool_calls"))
        .map(|tc| {
            assert_eq!(tc.as_array().unwrap().len(), 1);
            &tc[0]
        })
        .collect();
    for index in 0..2 {
        let mine: Vec<&&Value> = fragments.iter().filter(|f| f["index"] == index).collect();
        let first = mine[0];
        assert!(first["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(first["type"], "function");
        assert_eq!(first["function"]["arguments"], "");
        for later in &mine[1..] {
            assert!(later.get("id").is_none());
            assert!(later.get("type").is_none());
            assert!(later["function"].get("name").is_none());
        }
        let args: String = mine
            .iter()
            .map(|f| f["function"]["arguments"].as_str().unwrap())
            .collect();
        let (name, expected) = [("get_weather", r#"{"city":"Paris"}"#), ("noop", "{}")][index];
        assert_eq!(first["function"]["name"], name);
        assert_eq!(args, expected);
    }
    let ids: Vec<&str> = fragments.iter().filter_map(|f| f["id"].as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);

    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    for c in &chunks[..chunks.len() - 1] {
        assert_eq!(c["choices"][0]["finish_reason"], Value::Null);
    }
}

#[tokio::test]
async fn openai_non_stream_shapes() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(
        Reply::text("Sure.")
            .with_tool_call("get_weather", r#"{"city":"Paris"}"#)
            .with_usage(7, 3),
    ));
    up.push(Behavior::Reply(Reply::text("just text")));
    up.push(Behavior::Reply(Reply::tool_call("f", r#"{"x":1}"#)));

    let resp = openai(&up, json!({"model": "m1", "messages": []})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let v: Value = resp.json().await.unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "m1");
    assert!(v["created"].is_u64());
    let choice = &v["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Sure.");
    let call = &choice["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    );

    let v: Value = openai(&up, json!({"model": "m1", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "just text");
    assert!(v["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["prompt_tokens"], 10);
    assert_eq!(v["usage"]["completion_tokens"], 5);
    assert_eq!(v["usage"]["total_tokens"], 15);

    let v: Value = openai(&up, json!({"model": "m1", "messages": [], "stream": false}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"x":1}"#
    );
}

#[tokio::test]
async fn stop_is_honoured_unless_ignored() {
    let up = TestUpstream::start().await.unwrap();
    let reply = Reply::text("alpha beta</tool>gamma").with_chunk_size(3);
    up.push(Behavior::Reply(reply.clone()));
    up.push(Behavior::Reply(reply.clone()));
    up.push(Behavior::Reply(reply.clone().ignoring_stop()));
    up.push(Behavior::Reply(reply.clone()));

    // Streaming, stop as an array: the earliest match wins.
    let body = openai(
        &up,
        json!({"model": "m", "stream": true, "stop": ["gamma", "</tool>"], "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    let lines = data_lines(&body);
    let chunks = chunks_only(&lines);
    assert_eq!(concat(&chunks, "/choices/0/delta/content"), "alpha beta");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );

    // Non-streaming, stop as a string.
    let v: Value = openai(&up, json!({"model": "m", "stop": "beta", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "alpha ");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    // Ignored.
    let v: Value = openai(&up, json!({"model": "m", "stop": "beta", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "alpha beta</tool>gamma"
    );

    // Anthropic's stop_sequences.
    let v: Value = anthropic(
        &up,
        json!({"model": "claude", "max_tokens": 100, "stop_sequences": ["</tool>"], "messages": []}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "alpha beta"}])
    );
    assert_eq!(v["stop_reason"], "stop_sequence");
    assert_eq!(v["stop_sequence"], "</tool>");
}

#[tokio::test]
async fn cut_at_ends_with_length_in_the_middle_of_a_tool_call() {
    let up = TestUpstream::start().await.unwrap();
    let reply = Reply::text("ok ")
        .with_tool_call("write", r#"{"path":"a.txt","content":"long"}"#)
        .with_tool_call("other", "{}")
        .with_chunk_size(5)
        .with_cut_at(3 + 12);
    up.push(Behavior::Reply(reply.clone()));
    up.push(Behavior::Reply(reply.clone()));
    up.push(Behavior::Reply(reply));

    let body = openai(&up, json!({"model": "m", "stream": true, "messages": []}))
        .await
        .text()
        .await
        .unwrap();
    let lines = data_lines(&body);
    let chunks = chunks_only(&lines);
    assert_eq!(concat(&chunks, "/choices/0/delta/content"), "ok ");
    assert_eq!(
        concat(&chunks, "/choices/0/delta/tool_calls/0/function/arguments"),
        r#"{"path":"a.t"#
    );
    assert!(!body.contains("\"other\""));
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );

    let v: Value = openai(&up, json!({"model": "m", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a.t"#
    );
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let body = anthropic(
        &up,
        json!({"model": "c", "max_tokens": 5, "stream": true, "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    let evs = events(&body);
    let partial: String = evs
        .iter()
        .filter_map(|(_, d)| d.pointer("/delta/partial_json").and_then(Value::as_str))
        .collect();
    assert_eq!(partial, r#"{"path":"a.t"#);
    let delta = evs.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "max_tokens");
}

#[tokio::test]
async fn usage_chunk_only_with_include_usage() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("hi").with_usage(12, 4)));
    up.push(Behavior::Reply(Reply::text("hi")));

    let body = openai(
        &up,
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    let lines = data_lines(&body);
    assert_eq!(lines.last().unwrap(), "[DONE]");
    let chunks = chunks_only(&lines);
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16})
    );
    assert_eq!(usage_chunk["object"], "chat.completion.chunk");
    for c in &chunks[..chunks.len() - 1] {
        assert_eq!(c["usage"], Value::Null);
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
    }
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "stop"
    );

    let body = openai(&up, json!({"model": "m", "stream": true, "messages": []}))
        .await
        .text()
        .await
        .unwrap();
    let lines = data_lines(&body);
    for c in chunks_only(&lines) {
        assert!(c.get("usage").is_none());
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn anthropic_stream_event_sequence() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "Hi there".into(),
        reasoning: "hmm".into(),
        tool_calls: vec![("lookup".into(), r#"{"q":"rust"}"#.into())],
        chunk_size: 4,
        usage: Some((30, 9)),
        ..Reply::default()
    }));
    let resp = anthropic(
        &up,
        json!({"model": "claude-x", "max_tokens": 100, "stream": true, "messages": []}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let evs = events(&resp.text().await.unwrap());
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    let delta = "content_block_delta";
    let expected = [
        vec!["message_start", "ping"],
        // thinking: "hmm" in one piece, then the signature
        vec!["content_block_start", delta, delta, "content_block_stop"],
        // text: "Hi t", "here"
        vec!["content_block_start", delta, delta, "content_block_stop"],
        // tool_use: {"q":"rust"} is 12 bytes: 3 pieces
        vec![
            "content_block_start",
            delta,
            delta,
            delta,
            "content_block_stop",
        ],
        vec!["message_delta", "message_stop"],
    ]
    .concat();
    assert_eq!(names, expected);

    let start = &evs[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(start["type"], "message");
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "claude-x");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["stop_reason"], Value::Null);
    assert_eq!(start["usage"]["input_tokens"], 30);

    assert_eq!(
        evs[2].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    );
    assert_eq!(
        evs[3].1,
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}})
    );
    assert_eq!(evs[4].1["delta"]["type"], "signature_delta");
    assert_eq!(evs[5].1, json!({"type": "content_block_stop", "index": 0}));
    assert_eq!(
        evs[6].1,
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    );
    let text: String = evs
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "text_delta")
        .map(|(_, d)| {
            assert_eq!(d["index"], 1);
            d["delta"]["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(text, "Hi there");
    let tool_start = &evs[10].1;
    assert_eq!(tool_start["index"], 2);
    assert_eq!(tool_start["content_block"]["type"], "tool_use");
    assert!(tool_start["content_block"]["id"]
        .as_str()
        .unwrap()
        .starts_with("toolu_"));
    assert_eq!(tool_start["content_block"]["name"], "lookup");
    assert_eq!(tool_start["content_block"]["input"], json!({}));
    let partial: String = evs
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(partial, r#"{"q":"rust"}"#);
    let message_delta = &evs[evs.len() - 2].1;
    assert_eq!(
        *message_delta,
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}})
    );
    assert_eq!(evs.last().unwrap().1, json!({"type": "message_stop"}));
}

#[tokio::test]
async fn anthropic_non_stream_body() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(
        Reply::text("Let me check.")
            .with_reasoning("thinking...")
            .with_tool_call("lookup", r#"{"q":"rust","n":2}"#)
            .with_usage(11, 6),
    ));
    up.push(Behavior::Reply(Reply::text("done")));
    up.push(Behavior::Reply(Reply::text("abcdef").with_cut_at(3)));

    let v: Value = anthropic(
        &up,
        json!({"model": "claude-x", "max_tokens": 100, "messages": []}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-x");
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(
        content[0],
        json!({"type": "thinking", "thinking": "thinking...", "signature": "sig"})
    );
    assert_eq!(content[1], json!({"type": "text", "text": "Let me check."}));
    assert_eq!(content[2]["type"], "tool_use");
    assert!(content[2]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(content[2]["name"], "lookup");
    assert_eq!(content[2]["input"], json!({"q": "rust", "n": 2}));
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["stop_sequence"], Value::Null);
    assert_eq!(v["usage"], json!({"input_tokens": 11, "output_tokens": 6}));

    let v: Value = anthropic(&up, json!({"model": "c", "max_tokens": 1, "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["content"], json!([{"type": "text", "text": "done"}]));
    assert_eq!(v["stop_reason"], "end_turn");

    let v: Value = anthropic(&up, json!({"model": "c", "max_tokens": 1, "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["content"], json!([{"type": "text", "text": "abc"}]));
    assert_eq!(v["stop_reason"], "max_tokens");
}

#[tokio::test]
async fn status_with_retry_after_and_empty_queue() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Status {
        code: 429,
        message: "slow down".into(),
        retry_after: Some(2),
    });
    up.push(Behavior::status(503, "overloaded"));
    up.push(Behavior::Status {
        code: 529,
        message: "busy".into(),
        retry_after: Some(1),
    });

    let resp = openai(&up, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["message"], "slow down");
    assert_eq!(v["error"]["type"], "rate_limit_error");

    let resp = openai(&up, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().get("retry-after").is_none());
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["message"], "overloaded");

    let resp = anthropic(&up, json!({"model": "c", "max_tokens": 1, "messages": []})).await;
    assert_eq!(resp.status(), 529);
    assert_eq!(resp.headers()["retry-after"], "1");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["message"], "busy");
    assert_eq!(v["error"]["type"], "overloaded_error");

    assert_eq!(up.remaining(), 0);
    let resp = openai(&up, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 500);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["message"], "testkit: no scripted reply left");
    assert!(v["error"]["type"].is_string());
}

#[tokio::test]
async fn invalid_json_gets_400_and_keeps_the_queue() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("kept")));
    let resp = client()
        .post(format!("{}/chat/completions", up.base_url()))
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("invalid JSON"));
    assert_eq!(up.remaining(), 1);
    let v: Value = openai(&up, json!({"model": "m", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "kept");
    let recorded = up.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].body, Value::String("{oops".into()));
}

#[tokio::test]
async fn slow_first_byte_delays_the_headers() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_millis(250),
        reply: Reply::text("late"),
    });
    let started = Instant::now();
    let resp = openai(&up, json!({"model": "m", "stream": true, "messages": []})).await;
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(resp.status(), 200);
    let lines = data_lines(&resp.text().await.unwrap());
    assert_eq!(
        concat(&chunks_only(&lines), "/choices/0/delta/content"),
        "late"
    );
}

/// Reads `resp` until `want` complete SSE events arrived; returns them and the rest.
async fn read_events(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    buf: &mut String,
    want: usize,
) {
    while buf.matches("\n\n").count() < want {
        let chunk = stream.next().await.expect("stream ended early").unwrap();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test]
async fn stall_mid_stream_goes_silent_then_finishes() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 2,
        stall: Duration::from_millis(250),
        reply: Reply::text("abcdefghijkl").with_chunk_size(2),
    });
    let resp = openai(&up, json!({"model": "m", "stream": true, "messages": []})).await;
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    read_events(&mut stream, &mut buf, 2).await;
    assert_eq!(
        buf.matches("\n\n").count(),
        2,
        "only 2 chunks before the stall"
    );
    let stalled_at = Instant::now();
    read_events(&mut stream, &mut buf, 3).await;
    assert!(stalled_at.elapsed() >= Duration::from_millis(200));
    while let Some(chunk) = stream.next().await {
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let lines = data_lines(&buf);
    assert_eq!(lines.last().unwrap(), "[DONE]");
    assert_eq!(
        concat(&chunks_only(&lines), "/choices/0/delta/content"),
        "abcdefghijkl"
    );
}

#[tokio::test]
async fn cut_mid_stream_is_an_error_for_the_client() {
    let up = TestUpstream::start().await.unwrap();
    let reply = Reply::text("abcdefghijkl").with_chunk_size(2);
    up.push(Behavior::CutMidStream {
        after_chunks: 3,
        reply: reply.clone(),
    });
    up.push(Behavior::CutMidStream {
        after_chunks: 3,
        reply: reply.clone(),
    });
    up.push(Behavior::CutMidStream {
        after_chunks: 4,
        reply: reply.clone(),
    });
    up.push(Behavior::CutMidStream {
        after_chunks: 0,
        reply: reply.clone(),
    });
    up.push(Behavior::Reply(Reply::text("after")));

    // Whole-body read fails.
    let resp = openai(&up, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.is_err());

    // Streamed read: exactly 3 chunks, then an error, never [DONE].
    let resp = openai(&up, json!({"model": "m", "stream": true, "messages": []})).await;
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => buf.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the body must end with an error");
    let lines = data_lines(&buf);
    assert_eq!(lines.len(), 3);
    assert!(!buf.contains("[DONE]"));
    assert!(!buf.contains("finish_reason\":\"stop"));

    // Anthropic: 4 events (message_start, ping, content_block_start, one delta).
    let resp = anthropic(
        &up,
        json!({"model": "c", "max_tokens": 1, "stream": true, "messages": []}),
    )
    .await;
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => buf.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed);
    let names: Vec<String> = events(&buf).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta"
        ]
    );

    // Non-streaming: half a body, then the abort.
    let resp = openai(&up, json!({"model": "m", "messages": []})).await;
    assert!(resp.json::<Value>().await.is_err());

    // The server is still fine afterwards.
    let v: Value = openai(&up, json!({"model": "m", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "after");
}

#[tokio::test]
async fn malformed_sse_line_then_continues() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::MalformedSse {
        after_chunks: 2,
        reply: Reply::text("abcdef").with_chunk_size(2),
    });
    up.push(Behavior::MalformedSse {
        after_chunks: 1,
        reply: Reply::text("xyz"),
    });
    let body = openai(&up, json!({"model": "m", "stream": true, "messages": []}))
        .await
        .text()
        .await
        .unwrap();
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events[2], "data: {not json");
    assert_eq!(
        events.iter().filter(|e| **e == "data: {not json").count(),
        1
    );
    assert_eq!(*events.last().unwrap(), "data: [DONE]");
    let good: Vec<Value> = events
        .iter()
        .filter(|e| **e != "data: {not json" && **e != "data: [DONE]")
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    let good: Vec<&Value> = good.iter().collect();
    assert_eq!(concat(&good, "/choices/0/delta/content"), "abcdef");

    let body = anthropic(
        &up,
        json!({"model": "c", "max_tokens": 1, "stream": true, "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(events[0].starts_with("event: message_start\n"));
    assert_eq!(events[1], "data: {not json");
    assert!(events.last().unwrap().starts_with("event: message_stop\n"));
}

#[tokio::test]
async fn requests_are_recorded() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("one")));
    up.push(Behavior::Reply(Reply::text("two")));
    let first =
        json!({"model": "m", "messages": [{"role": "user", "content": "hello"}], "tools": []});
    openai(&up, first.clone()).await.text().await.unwrap();
    let second = json!({"model": "c", "max_tokens": 5, "messages": []});
    anthropic(&up, second.clone()).await.text().await.unwrap();
    client()
        .get(format!("{}/models", up.base_url()))
        .send()
        .await
        .unwrap();
    // A 404 on an unknown path takes no behaviour and is not recorded.
    let resp = post(&up, "/v1/nope", json!({})).await;
    assert_eq!(resp.status(), 404);

    let recorded = up.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].body, first);
    assert_eq!(recorded[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(recorded[0].header("Content-Type"), Some("application/json"));
    assert_eq!(recorded[1].path, "/v1/messages");
    assert_eq!(recorded[1].body, second);
    assert_eq!(recorded[1].authorization, None);
    assert_eq!(recorded[1].header("x-api-key"), Some("ak-test"));
    assert!(recorded[1]
        .headers
        .contains(&("anthropic-version".to_owned(), "2023-06-01".to_owned())));
}

#[tokio::test]
async fn models_endpoint() {
    let up = TestUpstream::start().await.unwrap();
    let v: Value = client()
        .get(format!("{}/models", up.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v,
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "created": 0, "owned_by": "testkit"}]})
    );
    assert!(up.requests().is_empty());
    assert!(up.base_url().starts_with("http://127.0.0.1:"));
    assert!(up.addr().ip().is_loopback());
}

#[tokio::test]
async fn server_stops_when_dropped() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_secs(30),
        reply: Reply::text("never finished"),
    });
    let addr = up.addr();
    let c = client();
    let resp = c
        .post(format!("{}/chat/completions", up.base_url()))
        .json(&json!({"model": "m", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    read_events(&mut stream, &mut buf, 1).await;

    drop(up);

    // The open connection is aborted rather than left stalling.
    let started = Instant::now();
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("stalled stream must end when the server is dropped");
    assert!(matches!(next, None | Some(Err(_))));
    assert!(started.elapsed() < Duration::from_secs(5));

    // New connections are refused.
    let err = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    let err = c
        .get(format!("http://{addr}/v1/models"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn refused_immediately_after_drop() {
    let up = TestUpstream::start().await.unwrap();
    let addr = up.addr();
    drop(up);
    let err = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_and_concurrent_requests_take_behaviours_in_order() {
    let up = TestUpstream::start().await.unwrap();
    for i in 0..20 {
        up.push(Behavior::Reply(Reply::text(format!("reply {i}"))));
    }
    let c = client();
    let mut seen = Vec::new();
    for _ in 0..10 {
        let v: Value = c
            .post(format!("{}/chat/completions", up.base_url()))
            .json(&json!({"model": "m", "messages": []}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        seen.push(
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let expected: Vec<String> = (0..10).map(|i| format!("reply {i}")).collect();
    assert_eq!(seen, expected);
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let c = c.clone();
            let url = format!("{}/chat/completions", up.base_url());
            tokio::spawn(async move {
                c.post(url)
                    .json(&json!({"model": "m", "stream": true, "messages": []}))
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
            })
        })
        .collect();
    for t in tasks {
        let body = t.await.unwrap();
        assert!(body.ends_with("data: [DONE]\n\n"));
    }
    assert_eq!(up.remaining(), 0);
    assert_eq!(up.requests().len(), 20);
}

#[tokio::test(start_paused = true)]
async fn works_on_a_paused_clock() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_secs(20),
        reply: Reply::text("first"),
    });
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_secs(60),
        reply: Reply::text("second"),
    });
    let c = client();
    let url = format!("{}/chat/completions", up.base_url());
    let real = std::time::Instant::now();
    let v: Value = c
        .post(&url)
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "first");
    // An idle keep-alive connection survives a long (virtual) pause.
    tokio::time::sleep(Duration::from_secs(45)).await;
    let body = c
        .post(&url)
        .json(&json!({"model": "m", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"));
    assert!(real.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn openai_first_chunk_carries_the_role() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::tool_call("f", "{}")));
    up.push(Behavior::Reply(Reply::default()));
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_millis(100),
        reply: Reply::text("abcdefgh").with_chunk_size(2),
    });
    let stream = json!({"model": "m", "stream": true, "messages": []});

    let lines = data_lines(&openai(&up, stream.clone()).await.text().await.unwrap());
    let chunks = chunks_only(&lines);
    let first = &chunks[0]["choices"][0]["delta"];
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["content"], Value::Null);
    assert_eq!(first["tool_calls"][0]["function"]["name"], "f");
    assert_eq!(first["tool_calls"][0]["function"]["arguments"], "");

    let lines = data_lines(&openai(&up, stream.clone()).await.text().await.unwrap());
    let chunks = chunks_only(&lines);
    assert_eq!(chunks.len(), 2);
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "stop");

    // after_chunks counts output chunks: the first one already holds text.
    let resp = openai(&up, stream).await;
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    read_events(&mut body, &mut buf, 1).await;
    let lines = data_lines(&buf);
    assert_eq!(lines[0]["choices"][0]["delta"]["content"], "ab");
}
