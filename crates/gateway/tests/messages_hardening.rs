//! The Messages API front door under the same hardening as Chat Completions (docs/src/security.md,
//! "The gateway"): bad JSON, a missing `max_tokens`, too deep and oversize bodies, missing and
//! wrong keys (as `x-api-key` and as a bearer token), an upstream failure before the answer and in
//! the middle of a stream — every error in Anthropic's shape, with the same sanitized texts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{json, Value};
use toolbridge_gateway::ServerConfig;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const KEY: &str = "sk-gw-messages-test-aaaaaaaaaaaa";

/// Reads an error answer and checks it is Anthropic's shape; gives (type, message).
async fn anthropic_error(res: reqwest::Response) -> (String, String) {
    assert_eq!(res.headers()["content-type"], "application/json");
    let v: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(v["type"], "error", "{v}");
    let keys: Vec<&String> = v["error"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "message"], "{v}");
    (
        v["error"]["type"].as_str().unwrap().to_owned(),
        v["error"]["message"].as_str().unwrap().to_owned(),
    )
}

fn body(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "stream": stream,
    })
}

fn url(gw: &toolbridge_gateway::RunningGateway) -> String {
    format!("http://{}/v1/messages", gw.addr())
}

#[tokio::test]
async fn bad_bodies_get_anthropic_shaped_400_413() {
    let up = TestUpstream::start().await.unwrap();
    let config = ServerConfig {
        body_limit: 4096,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let client = http();
    let raw = |text: String| {
        client
            .post(url(&gw))
            .header("content-type", "application/json")
            .body(text)
            .send()
    };

    let broken = raw("{\"model\": ".into()).await.unwrap();
    assert_eq!(broken.status(), 400);
    let (kind, message) = anthropic_error(broken).await;
    assert_eq!(kind, "invalid_request_error");
    assert!(message.starts_with("Invalid request body"), "{message}");

    let mut no_max = body("local", false);
    no_max.as_object_mut().unwrap().remove("max_tokens");
    let missing = client.post(url(&gw)).json(&no_max).send().await.unwrap();
    assert_eq!(missing.status(), 400);
    assert_eq!(
        anthropic_error(missing).await.1,
        "max_tokens: Field required"
    );

    let deep = format!(
        r#"{{"model":"local","max_tokens":1,"messages":[{{"role":"user","content":"x"}}],"metadata":{}1{}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    let deep = raw(deep).await.unwrap();
    assert_eq!(deep.status(), 400);
    assert!(anthropic_error(deep)
        .await
        .1
        .contains("nested more than 64 levels"));

    let mut big = body("local", false);
    big["messages"][0]["content"] = json!("x".repeat(10_000));
    let big = client.post(url(&gw)).json(&big).send().await.unwrap();
    assert_eq!(big.status(), 413);
    assert_eq!(anthropic_error(big).await.0, "request_too_large");
    assert!(up.requests().is_empty(), "nothing reached the upstream");
}

#[tokio::test]
async fn keys_are_accepted_as_x_api_key_and_as_bearer() {
    let up = TestUpstream::start().await.unwrap();
    up.set_default(Some(Reply::text("hi").into()));
    let gw = start_with_keys(
        server_config(),
        vec![single("local", &up, "prompt")],
        Some(KEY),
    )
    .await;
    let client = http();
    let request = body("local", false);

    let missing = client.post(url(&gw)).json(&request).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(anthropic_error(missing).await.0, "authentication_error");

    let wrong_key = "sk-gw-messages-test-aaaaaaaaaaaX";
    let wrong = client
        .post(url(&gw))
        .header("x-api-key", wrong_key)
        .header("anthropic-version", "2023-06-01")
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let (kind, message) = anthropic_error(wrong).await;
    assert_eq!(kind, "authentication_error");
    assert!(!message.contains(wrong_key));

    for (name, value) in [
        ("x-api-key", KEY.to_owned()),
        ("authorization", format!("Bearer {KEY}")),
    ] {
        let ok = client
            .post(url(&gw))
            .header(name, value)
            .header("anthropic-version", "2023-06-01")
            .json(&request)
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200, "{name}");
        let v: Value = ok.json().await.unwrap();
        assert_eq!(v["content"][0]["text"], "hi");
    }
    // The model list needs the key too, and answers in Anthropic's shape.
    let models = client
        .get(format!("http://{}/v1/models", gw.addr()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap();
    let v: Value = models.json().await.unwrap();
    assert_eq!(v["data"][0]["type"], "model");
    assert_eq!(v["has_more"], false);
}

#[tokio::test]
async fn upstream_failures_are_sanitized_before_and_during_the_stream() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::status(
        500,
        "internal failure at /srv/upstream/secret.py",
    ));
    up.push(Behavior::CutMidStream {
        after_chunks: 2,
        reply: Reply::text("The weather in Paris is sunny today.").with_chunk_size(4),
    });
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();

    let before = client
        .post(url(&gw))
        .json(&body("local", true))
        .send()
        .await
        .unwrap();
    assert_eq!(before.status(), 502);
    let (kind, message) = anthropic_error(before).await;
    assert_eq!(kind, "api_error");
    assert_eq!(message, "upstream error (upstream)");

    let during = client
        .post(url(&gw))
        .json(&body("local", true))
        .send()
        .await
        .unwrap();
    assert_eq!(during.status(), 200);
    let text = during.text().await.unwrap();
    let events = anthropic_events(&text);
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "error", "{text}");
    assert_eq!(data["error"]["type"], "api_error");
    assert_eq!(data["error"]["message"], "upstream error (bad_response)");
    assert!(!text.contains("127.0.0.1") && !text.contains("message_stop"));
    let shown: String = events
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(shown, "The weat");
}

#[tokio::test]
async fn unknown_endpoints_under_messages_answer_in_anthropic_shape() {
    let gw = start(server_config(), vec![]).await;
    let res = http()
        .post(format!("http://{}/v1/messages/batches", gw.addr()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(anthropic_error(res).await.0, "not_found_error");
    // Chat Completions keeps OpenAI's shape.
    let res = http()
        .post(format!("http://{}/v1/chat/completions", gw.addr()))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    let v: Value = res.json().await.unwrap();
    assert!(v["error"]["message"].is_string() && v.get("type").is_none());
}

#[tokio::test]
async fn invalid_requests_get_a_400_naming_the_field() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let image = |data: &str| {
        json!({"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]})
    };
    let asked = json!({"role": "user", "content": "Weather?"});
    let called = |input: Value| {
        json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": input}]})
    };
    let answered = |id: &str| {
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": "sunny"}]})
    };
    let cases = [
        (json!({"max_tokens": 0}), "max_tokens"),
        (
            json!({"messages": [image("not base64!!")]}),
            "messages.0.content.0.source.data",
        ),
        (
            json!({"messages": [asked, called(json!({"city": "Paris"})), answered("toolu_other")]}),
            "messages.2.content.0.tool_use_id",
        ),
        (
            json!({"messages": [answered("toolu_1")]}),
            "messages.0.content.0.tool_use_id",
        ),
        (
            json!({"messages": [asked, called(json!("Paris")), answered("toolu_1")]}),
            "messages.1.content.0.input",
        ),
        (
            json!({"tools": [{"name": "get_weather"}]}),
            "tools.0.input_schema",
        ),
        (json!({"thinking": {"type": "sometimes"}}), "thinking.type"),
        (json!({"temperature": "hot"}), "temperature"),
    ];
    for (fields, field) in cases {
        let mut request = body("local", false);
        for (k, v) in fields.as_object().unwrap() {
            request[k] = v.clone();
        }
        let res = client.post(url(&gw)).json(&request).send().await.unwrap();
        assert_eq!(res.status(), 400, "{request}");
        let (kind, message) = anthropic_error(res).await;
        assert_eq!(kind, "invalid_request_error");
        // Anthropic's shape has no `param`: the message starts with the field, as its own do.
        assert!(
            message.starts_with(&format!("{field}: ")),
            "{field}: {message}"
        );
    }
    assert!(up.requests().is_empty());
}

/// What Claude Code sends is accepted: `cache_control` on blocks, tools and the system
/// prompt, a `max_tokens: 1` probe, `thinking` with a small budget, a blank text block, a
/// server tool declared by its type alone.
#[tokio::test]
async fn a_claude_code_shaped_request_is_accepted() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("ok").into());
    up.push(Reply::text("ok").into());
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let cache = json!({"type": "ephemeral"});
    let request = json!({
        "model": "local", "max_tokens": 1,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": cache}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "Read", "description": "Read a file.", "cache_control": cache,
                   "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}],
        "metadata": {"user_id": "user_abc"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a.txt", "cache_control": cache}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": ""},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello", "cache_control": cache},
                {"type": "text", "text": " "}]},
        ],
    });
    let res = client.post(url(&gw)).json(&request).send().await.unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let mut adaptive = request.clone();
    adaptive["thinking"] = json!({"type": "adaptive"});
    let res = client.post(url(&gw)).json(&adaptive).send().await.unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
}
