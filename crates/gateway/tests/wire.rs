//! The gateway's wire format against the scripted upstream, in prompt and native modes:
//! completions and chunks exactly as OpenAI's clients read them, tool_choice and
//! parallel_tool_calls, history re-encoding, pass-through of unknown fields, the malformed-call
//! retry and truncated calls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{json, Value};
use toolbridge_protocol::openai::ChatCompletion;
use toolbridge_protocol::parser::ParserConfig;
use toolbridge_protocol::texts::{self, CallTag};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

fn args_of(call: &Value) -> Value {
    let text = call["function"]["arguments"]
        .as_str()
        .expect("arguments is a JSON string");
    serde_json::from_str(text).unwrap()
}

fn upstream_system(up: &TestUpstream, i: usize) -> String {
    let body = &up.requests()[i].body;
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn prompt_mode_completion_has_openai_tool_calls() {
    let up = TestUpstream::start().await.unwrap();
    up.push(
        Reply::text(format!(
            "Let me check.\n{}",
            call_text("get_weather", r#"{"city": "Paris"}"#)
        ))
        .into(),
    );
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let res = post(&http(), &gw, &tool_request("local", false)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "local");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Let me check.\n");
    let call = &choice["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(args_of(call), json!({"city": "Paris"}));
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    );
    // It also reads as the protocol's own completion type.
    let _: ChatCompletion = serde_json::from_value(body).unwrap();

    // The upstream got prompt mode: no tools field, the preamble, the stop sequence.
    let sent = &up.requests()[0].body;
    assert!(sent.get("tools").is_none());
    assert!(upstream_system(&up, 0).contains("get_weather"));
    assert_eq!(sent["stop"][0], "</tool_call>");
}

#[tokio::test]
async fn prompt_mode_stream_has_openai_chunks() {
    let up = TestUpstream::start().await.unwrap();
    up.push(
        Reply::text(format!(
            "Checking. {}",
            call_text("get_weather", r#"{"city": "Paris"}"#)
        ))
        .with_chunk_size(3)
        .into(),
    );
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let mut req = tool_request("local", true);
    req["stream_options"] = json!({"include_usage": true});
    let res = post(&http(), &gw, &req).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let body = res.text().await.unwrap();
    let chunks = chunks(&body);
    let id = &chunks[0].id;
    assert!(id.starts_with("chatcmpl-"));
    assert!(chunks.iter().all(|c| &c.id == id && c.model == "local"));
    assert!(chunks.iter().all(|c| c.object == "chat.completion.chunk"));
    assert_eq!(
        chunks[0].choices[0].delta.role.as_deref(),
        Some("assistant")
    );
    let a = assemble(&chunks);
    assert_eq!(a.text, "Checking. ");
    assert_eq!(a.calls.len(), 1);
    assert!(a.calls[0].0.starts_with("call_"));
    assert_eq!(a.calls[0].1, "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(&a.calls[0].2).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(a.finish.as_deref(), Some("tool_calls"));
    // The first call fragment carries empty arguments, as OpenAI's does.
    let first_call = body
        .split("\n\n")
        .find(|e| e.contains("\"tool_calls\""))
        .unwrap();
    assert!(first_call
        .contains(r#""type":"function","function":{"name":"get_weather","arguments":""}"#));
    // The usage chunk: after the finish chunk, no choices.
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty());
    assert_eq!(last.usage.unwrap().total_tokens, 15);
    assert!(body.ends_with("data: [DONE]\n\n"));
}

#[tokio::test]
async fn no_usage_chunk_unless_asked() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("Hello there.").into());
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let body = post(&http(), &gw, &tool_request("local", true))
        .await
        .text()
        .await
        .unwrap();
    let chunks = chunks(&body);
    assert!(chunks
        .iter()
        .all(|c| c.usage.is_none() && !c.choices.is_empty()));
    let a = assemble(&chunks);
    assert_eq!(
        (a.text.as_str(), a.finish.as_deref()),
        ("Hello there.", Some("stop"))
    );
}

#[tokio::test]
async fn native_mode_both_ways() {
    let up = TestUpstream::start().await.unwrap();
    let reply = || Reply::tool_call("get_weather", r#"{"city":"Paris"}"#).with_chunk_size(4);
    up.push(reply().into());
    up.push(reply().into());
    let gw = start(server_config(), vec![single("gpt", &up, "native")]).await;
    let client = http();
    let body: Value = post(&client, &gw, &tool_request("gpt", false))
        .await
        .json()
        .await
        .unwrap();
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(
        args_of(&choice["message"]["tool_calls"][0]),
        json!({"city": "Paris"})
    );
    // Tools went in the API field.
    assert_eq!(
        up.requests()[0].body["tools"][0]["function"]["name"],
        "get_weather"
    );

    let text = post(&client, &gw, &tool_request("gpt", true))
        .await
        .text()
        .await
        .unwrap();
    let a = assemble(&chunks(&text));
    assert_eq!(a.calls[0].1, "get_weather");
    assert_eq!(a.calls[0].2, r#"{"city":"Paris"}"#);
    assert_eq!(a.finish.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn anthropic_upstream_answers_in_openai_form() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::tool_call("get_weather", r#"{"city":"Paris"}"#).into());
    let claude = model(json!({
        "name": "claude",
        "model": format!("anthropic:claude-test@{}", up.anthropic_base_url()),
        "max_retries": 0,
    }));
    let gw = start(server_config(), vec![claude]).await;
    let body: Value = post(&http(), &gw, &tool_request("claude", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(up.requests()[0].path, "/v1/messages");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(args_of(call), json!({"city": "Paris"}));
}

#[tokio::test]
async fn history_is_reencoded_for_prompt_upstreams() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("It is sunny in Paris.").into());
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let req = json!({
        "model": "local",
        "tools": [weather_tool()],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_abc", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}
            }]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "sunny, 24 C"}
        ]
    });
    let body: Value = post(&http(), &gw, &req).await.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "It is sunny in Paris."
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    let sent = &up.requests()[0].body["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert!(sent[2]["content"].as_str().unwrap().contains("<tool_call>"));
    assert!(sent[2].get("tool_calls").is_none());
    let result = sent[3]["content"].as_str().unwrap();
    assert!(
        result.contains(r#"<tool_result name="get_weather">"#),
        "{result}"
    );
    assert!(result.contains("sunny, 24 C"));
}

#[tokio::test]
async fn unknown_fields_pass_through_to_native_upstreams() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text("ok").into());
    let gw = start(server_config(), vec![single("gpt", &up, "native")]).await;
    let mut req = tool_request("gpt", false);
    req["seed"] = json!(7);
    req["logit_bias"] = json!({"50256": -100});
    req["response_format"] = json!({"type": "text"});
    req["user"] = json!("user-1");
    req["metadata"] = json!({"k": "v"});
    assert_eq!(post(&http(), &gw, &req).await.status(), 200);
    let sent = &up.requests()[0].body;
    assert_eq!(sent["seed"], 7);
    assert_eq!(sent["logit_bias"], json!({"50256": -100}));
    assert_eq!(sent["response_format"], json!({"type": "text"}));
    assert_eq!(sent["user"], "user-1");
    assert_eq!(sent["metadata"], json!({"k": "v"}));
    assert_eq!(sent["model"], "mock-model", "the upstream's own model name");
}

#[tokio::test]
async fn tool_choice_in_prompt_mode() {
    let up = TestUpstream::start().await.unwrap();
    for _ in 0..3 {
        up.push(Reply::text(call_text("get_weather", r#"{"city": "Rome"}"#)).into());
    }
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let mut req = tool_request("local", false);
    req["tools"] = json!([weather_tool(), time_tool()]);

    // none: no tools offered, and a call written anyway is only text.
    req["tool_choice"] = json!("none");
    let body: Value = post(&client, &gw, &req).await.json().await.unwrap();
    assert!(!upstream_system(&up, 0).contains("get_weather"));
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    // A named function: only that tool, and the note asking for it.
    req["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let body: Value = post(&client, &gw, &req).await.json().await.unwrap();
    let system = upstream_system(&up, 1);
    assert!(system.contains("get_weather") && !system.contains("get_time"));
    assert!(system.contains(&texts::prompt_choice_note(Some("get_weather"))));
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");

    // required: every tool and the note asking for a call.
    req["tool_choice"] = json!("required");
    post(&client, &gw, &req).await;
    let system = upstream_system(&up, 2);
    assert!(system.contains("get_weather") && system.contains("get_time"));
    assert!(system.contains(&texts::prompt_choice_note(None)));
}

#[tokio::test]
async fn tool_choice_and_parallel_flag_reach_native_upstreams() {
    let up = TestUpstream::start().await.unwrap();
    up.push(
        Reply::tool_call("get_weather", r#"{"city":"Rome"}"#)
            .with_tool_call("get_time", r#"{"city":"Rome"}"#)
            .into(),
    );
    let gw = start(server_config(), vec![single("gpt", &up, "native")]).await;
    let mut req = tool_request("gpt", false);
    req["tools"] = json!([weather_tool(), time_tool()]);
    req["tool_choice"] = json!("required");
    req["parallel_tool_calls"] = json!(false);
    let body: Value = post(&http(), &gw, &req).await.json().await.unwrap();
    let sent = &up.requests()[0].body;
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["parallel_tool_calls"], false);
    // An upstream that ignores the flag still gives the client one call.
    let calls = body["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
}

#[tokio::test]
async fn parallel_tool_calls_false_keeps_the_first_call_in_text_modes() {
    let up = TestUpstream::start().await.unwrap();
    // Two calls in one block.
    let two = r#"<tool_call>[{"name": "get_weather", "arguments": {"city": "Rome"}}, {"name": "get_time", "arguments": {"city": "Rome"}}]</tool_call>"#;
    for _ in 0..3 {
        up.push(Reply::text(two).into());
    }
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let mut req = tool_request("local", false);
    req["tools"] = json!([weather_tool(), time_tool()]);
    let body: Value = post(&client, &gw, &req).await.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    req["parallel_tool_calls"] = json!(false);
    let body: Value = post(&client, &gw, &req).await.json().await.unwrap();
    let calls = body["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "get_weather");

    req["stream"] = json!(true);
    let text = post(&client, &gw, &req).await.text().await.unwrap();
    let a = assemble(&chunks(&text));
    assert_eq!(a.calls.len(), 1);
    assert_eq!(a.calls[0].1, "get_weather");
    assert_eq!(a.finish.as_deref(), Some("tool_calls"));
}

/// The reason the parser gives for a text, as the retry message quotes it.
fn parse_reason(text: &str) -> String {
    let out = toolbridge_protocol::parse(text, &ParserConfig::with_tools(["get_weather"]));
    out.errors[0].reason.clone()
}

/// A call to a tool that does not exist, as a model writes it when the stop sequence ate the
/// close tag.
const BAD_CALL: &str = r#"<tool_call>{"name": "get_wether", "arguments": {"city": "Paris"}}"#;

#[tokio::test]
async fn malformed_calls_are_re_asked_with_the_seed_retry_message() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text(BAD_CALL).into());
    up.push(Reply::text(call_text("get_weather", r#"{"city": "Paris"}"#)).into());
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let body: Value = post(&http(), &gw, &tool_request("local", false))
        .await
        .json()
        .await
        .unwrap();
    // The client sees only the good answer.
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(body["usage"]["total_tokens"], 30, "usage of both attempts");
    let requests = up.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["content"], BAD_CALL);
    assert_eq!(messages[n - 1]["role"], "user");
    let expected = texts::retry_message(&parse_reason(BAD_CALL), CallTag::ToolCall);
    assert_eq!(messages[n - 1]["content"], expected.as_str());
}

#[tokio::test]
async fn malformed_retries_are_bounded_then_the_text_is_the_answer() {
    let up = TestUpstream::start().await.unwrap();
    for _ in 0..5 {
        up.push(Reply::text(BAD_CALL).into());
    }
    let gw = start(server_config(), vec![single("local", &up, "prompt")]).await;
    let client = http();
    let body: Value = post(&client, &gw, &tool_request("local", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(up.requests().len(), 3, "one attempt and two retries");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["choices"][0]["message"]["content"], BAD_CALL);
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());

    // Streaming: the parser's policy, no retry; the raw text stays visible.
    let text = post(&client, &gw, &tool_request("local", true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(up.requests().len(), 4);
    let a = assemble(&chunks(&text));
    assert_eq!(a.text, BAD_CALL);
    assert!(a.calls.is_empty());
    assert_eq!(a.finish.as_deref(), Some("stop"));
}

#[tokio::test]
async fn malformed_retries_can_be_turned_off() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Reply::text(BAD_CALL).into());
    let config = toolbridge_gateway::ServerConfig {
        malformed_retries: 0,
        ..server_config()
    };
    let gw = start(config, vec![single("local", &up, "prompt")]).await;
    let body: Value = post(&http(), &gw, &tool_request("local", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(up.requests().len(), 1);
    assert_eq!(body["choices"][0]["message"]["content"], BAD_CALL);
}

#[tokio::test]
async fn a_call_cut_by_the_token_limit_is_length_never_a_call() {
    let up = TestUpstream::start().await.unwrap();
    let call = call_text("get_weather", r#"{"city": "Paris"}"#);
    up.push(Reply::text(call.clone()).with_cut_at(30).into());
    up.push(Reply::text(call.clone()).with_cut_at(30).into());
    up.push(
        Reply::tool_call("get_weather", r#"{"city":"Paris"}"#)
            .with_cut_at(6)
            .into(),
    );
    let gw = start(
        server_config(),
        vec![single("local", &up, "prompt"), single("gpt", &up, "native")],
    )
    .await;
    let client = http();
    let body: Value = post(&client, &gw, &tool_request("local", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(up.requests().len(), 1, "a truncated call is not retried");

    let text = post(&client, &gw, &tool_request("local", true))
        .await
        .text()
        .await
        .unwrap();
    let a = assemble(&chunks(&text));
    assert!(a.calls.is_empty());
    assert_eq!(a.finish.as_deref(), Some("length"));

    let body: Value = post(&client, &gw, &tool_request("gpt", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
}

#[tokio::test]
async fn models_are_listed_and_unknown_ones_are_404() {
    let up = TestUpstream::start().await.unwrap();
    let gw = start(
        server_config(),
        vec![single("local", &up, "prompt"), single("gpt", &up, "native")],
    )
    .await;
    let client = http();
    let list: Value = client
        .get(format!("{}/models", gw.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["object"], "list");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["local", "gpt"]);
    assert_eq!(list["data"][0]["object"], "model");

    let res = post(&client, &gw, &tool_request("nope", false)).await;
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(body["error"]["param"], "model");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(up.requests().is_empty());
}

#[tokio::test]
async fn a_failing_arm_falls_back_to_the_next() {
    let bad = TestUpstream::start().await.unwrap();
    let good = TestUpstream::start().await.unwrap();
    bad.push(Behavior::status(503, "overloaded"));
    good.push(Reply::text(call_text("get_weather", r#"{"city": "Paris"}"#)).into());
    let m = model(json!({"name": "smart", "arms": [arm(&bad, "native"), arm(&good, "prompt")]}));
    let gw = start(server_config(), vec![m]).await;
    let client = http();
    let body: Value = post(&client, &gw, &tool_request("smart", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    // The prompt arm got the prompt encoding; the native arm the tools field.
    assert!(bad.requests()[0].body.get("tools").is_some());
    assert!(good.requests()[0].body.get("tools").is_none());
    let metrics = client
        .get(format!("http://{}/metrics", gw.addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("toolbridge_fallbacks_total 1"),
        "{metrics}"
    );
}
