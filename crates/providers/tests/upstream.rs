//! Providers against the fault-injecting test upstream (loopback only): every fault gives its typed
//! error or the next arm within the configured time, never a hang.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::types::{ChatRequest, FinishReason, Message, ToolSpec};
use toolbridge_providers::http::{RetryPolicy, Timeouts};
use toolbridge_providers::openai::{OpenAiClient, OpenAiConfig};
use toolbridge_providers::{Arm, Model, ModelEvent, ProviderError, TimeoutKind};
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

fn quick_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(400),
        idle: Duration::from_millis(400),
        total: Duration::from_secs(10),
    }
}

fn client(up: &TestUpstream, retries: u32) -> Arc<OpenAiClient> {
    let mut c = OpenAiConfig::new(up.base_url(), "mock-model");
    c.timeouts = quick_timeouts();
    c.retry = RetryPolicy {
        max_retries: retries,
        base_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    };
    Arc::new(OpenAiClient::new(c).unwrap())
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![Message::user("Weather in Paris?")],
        tools: vec![weather_tool()],
        ..ChatRequest::default()
    }
}

/// Calls and text of a stream, ignoring ids (they are random per response).
fn summary(events: &[ModelEvent]) -> (String, Vec<(String, String)>, Option<FinishReason>) {
    let mut text = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut finish = None;
    for e in events {
        match e {
            ModelEvent::Text { text: t } => text.push_str(t),
            ModelEvent::CallStart { name, .. } => calls.push((name.clone(), String::new())),
            ModelEvent::CallArgs { fragment, .. } => calls.last_mut().unwrap().1.push_str(fragment),
            ModelEvent::Finish { reason } => finish = Some(*reason),
            _ => {}
        }
    }
    (text, calls, finish)
}

async fn events(model: &Model, req: ChatRequest) -> Result<Vec<ModelEvent>, ProviderError> {
    let mut stream = model.stream(req);
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push(e?);
    }
    Ok(out)
}

#[tokio::test]
async fn prompt_mode_text_and_native_calls_give_the_same_events() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "Checking. <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>".into(),
        chunk_size: 5,
        ..Reply::default()
    }));
    up.push(Behavior::Reply(Reply {
        text: "Checking. ".into(),
        tool_calls: vec![("get_weather".into(), "{\"city\": \"Paris\"}".into())],
        chunk_size: 3,
        ..Reply::default()
    }));
    let prompt = Model::new("p", vec![Arm::new(client(&up, 0), ToolMode::Prompt)]);
    let native = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    let a = events(&prompt, request()).await.unwrap();
    let b = events(&native, request()).await.unwrap();
    assert_eq!(summary(&a), summary(&b));
    assert_eq!(
        summary(&a),
        (
            "Checking. ".into(),
            vec![("get_weather".into(), "{\"city\": \"Paris\"}".into())],
            Some(FinishReason::ToolCalls)
        )
    );
    let reqs = up.requests();
    assert!(
        reqs[0].body.get("tools").is_none(),
        "prompt mode strips tools"
    );
    assert_eq!(reqs[0].body["stop"][0], "</tool_call>");
    assert!(reqs[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("## Available tools"));
    assert_eq!(reqs[1].body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(reqs[1].body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn a_server_that_ignores_stop_is_cut_at_the_stop_sequence() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>\n<tool_result>sunny</tool_result> It is sunny.".into(),
        ignore_stop: true,
        ..Reply::default()
    }));
    let model = Model::new("p", vec![Arm::new(client(&up, 0), ToolMode::Prompt)]);
    let r = model.complete(request()).await.unwrap();
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.text, "", "the invented result after the call is dropped");
    assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn usage_and_reasoning_come_through() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "Hi".into(),
        reasoning: "thinking".into(),
        usage: Some((11, 3)),
        ..Reply::default()
    }));
    let model = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    let r = model.complete(request()).await.unwrap();
    assert_eq!((r.text.as_str(), r.reasoning.as_str()), ("Hi", "thinking"));
    assert_eq!(r.usage.unwrap().prompt_tokens, 11);
    assert_eq!(r.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn server_errors_are_retried_up_to_the_bound() {
    let up = TestUpstream::start().await.unwrap();
    for _ in 0..3 {
        up.push(Behavior::Status {
            code: 503,
            message: "overloaded".into(),
            retry_after: None,
        });
    }
    up.push(Behavior::Reply(Reply::text("late")));
    let model = Model::new("n", vec![Arm::new(client(&up, 2), ToolMode::Native)]);
    let err = model.complete(request()).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Upstream {
            status: 503,
            message: "overloaded".into()
        }
    );
    assert_eq!(up.requests().len(), 3, "one try and two retries, no more");

    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Status {
        code: 500,
        message: "boom".into(),
        retry_after: None,
    });
    up.push(Behavior::Reply(Reply::text("ok")));
    let model = Model::new("n", vec![Arm::new(client(&up, 2), ToolMode::Native)]);
    assert_eq!(model.complete(request()).await.unwrap().text, "ok");
}

#[tokio::test]
async fn rate_limits_honour_retry_after_or_give_up() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Status {
        code: 429,
        message: "slow down".into(),
        retry_after: Some(1),
    });
    up.push(Behavior::Reply(Reply::text("ok")));
    let model = Model::new("n", vec![Arm::new(client(&up, 2), ToolMode::Native)]);
    let started = Instant::now();
    assert_eq!(model.complete(request()).await.unwrap().text, "ok");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited for Retry-After"
    );

    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Status {
        code: 429,
        message: "slow down".into(),
        retry_after: Some(120),
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 2), ToolMode::Native)]);
    let started = Instant::now();
    let err = model.complete(request()).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(120))
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "did not wait two minutes"
    );
}

#[tokio::test]
async fn auth_and_not_found_are_typed_and_not_retried() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Status {
        code: 401,
        message: "bad key".into(),
        retry_after: None,
    });
    up.push(Behavior::Status {
        code: 404,
        message: "no such model".into(),
        retry_after: None,
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 2), ToolMode::Native)]);
    assert!(matches!(
        model.complete(request()).await,
        Err(ProviderError::Auth { status: 401, .. })
    ));
    assert!(matches!(
        model.complete(request()).await,
        Err(ProviderError::NotFound { status: 404, .. })
    ));
    assert_eq!(up.requests().len(), 2);
}

#[tokio::test]
async fn slow_first_byte_times_out() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::SlowFirstByte {
        delay: Duration::from_secs(3),
        reply: Reply::text("late"),
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    let started = Instant::now();
    let err = model.complete(request()).await.unwrap_err();
    assert_eq!(err, ProviderError::Timeout(TimeoutKind::FirstByte));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_stall_mid_stream_hits_the_idle_limit() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 2,
        stall: Duration::from_secs(3),
        reply: Reply {
            text: "a long answer that stalls".into(),
            chunk_size: 4,
            ..Reply::default()
        },
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    let started = Instant::now();
    let err = events(&model, request()).await.unwrap_err();
    assert_eq!(err, ProviderError::Timeout(TimeoutKind::Idle));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_cut_connection_and_malformed_sse_are_bad_responses() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::CutMidStream {
        after_chunks: 2,
        reply: Reply {
            text: "partial answer here".into(),
            chunk_size: 4,
            ..Reply::default()
        },
    });
    up.push(Behavior::MalformedSse {
        after_chunks: 1,
        reply: Reply::text("x"),
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    assert!(matches!(
        events(&model, request()).await,
        Err(ProviderError::BadResponse(_))
    ));
    assert!(matches!(
        events(&model, request()).await,
        Err(ProviderError::BadResponse(_))
    ));
}

#[tokio::test]
async fn a_call_cut_by_the_token_limit_is_length_not_a_call() {
    let up = TestUpstream::start().await.unwrap();
    // Native: the arguments are cut half-way.
    up.push(Behavior::Reply(Reply {
        tool_calls: vec![("get_weather".into(), "{\"city\": \"Paris, France\"}".into())],
        cut_at: Some(12),
        chunk_size: 4,
        ..Reply::default()
    }));
    // Prompt mode: the text is cut inside the call.
    up.push(Behavior::Reply(Reply {
        text: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par".into(),
        finish_reason: Some("length".into()),
        ..Reply::default()
    }));
    for mode in [ToolMode::Native, ToolMode::Prompt] {
        let model = Model::new("m", vec![Arm::new(client(&up, 0), mode)]);
        let r = model.complete(request()).await.unwrap();
        assert!(r.calls.is_empty(), "{mode}: {:?}", r.calls);
        assert_eq!(r.finish_reason, Some(FinishReason::Length), "{mode}");
        assert!(
            r.errors
                .iter()
                .any(|e| e.kind == toolbridge_protocol::parser::ErrorKind::Truncated),
            "{mode}"
        );
    }
}

#[tokio::test]
async fn fallback_goes_to_the_next_arm_and_reencodes_for_its_mode() {
    let bad = TestUpstream::start().await.unwrap();
    bad.push(Behavior::Status {
        code: 500,
        message: "down".into(),
        retry_after: None,
    });
    let good = TestUpstream::start().await.unwrap();
    good.push(Behavior::Reply(Reply::text(
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}",
    )));
    let model = Model::new(
        "fallback",
        vec![
            Arm::new(client(&bad, 0), ToolMode::Native),
            Arm::new(client(&good, 0), ToolMode::Verbatim),
        ],
    );
    let mut stream = model.stream(request());
    let mut got = Vec::new();
    while let Some(e) = stream.next().await {
        got.push(e.unwrap());
    }
    let arm = stream.arm().unwrap().clone();
    assert_eq!((arm.index, arm.mode), (1, ToolMode::Verbatim));
    assert_eq!(
        summary(&got).1,
        vec![("get_weather".into(), "{\"city\": \"Rome\"}".into())]
    );
    let native_req = &bad.requests()[0].body;
    let verbatim_req = &good.requests()[0].body;
    let dump = |v: &serde_json::Value| v["messages"].to_string();
    assert!(
        !dump(native_req).contains("## Tool definitions"),
        "native arm has no in-band block"
    );
    assert!(
        dump(verbatim_req).contains("## Tool definitions"),
        "verbatim arm has the in-band block"
    );
    assert_eq!(verbatim_req["tools"][0]["function"]["name"], "get_weather");
}

/// Each arm is taught, stopped and read in its own dialect: a qwen3-coder arm that fails gets the
/// qwen3-coder preamble and `</tool_call>` as its stop; the mistral arm after it gets the mistral
/// preamble and no stop sequence, and its `[TOOL_CALLS]` reply comes back as the call.
#[tokio::test]
async fn each_arm_is_taught_and_read_in_its_own_dialect() {
    let bad = TestUpstream::start().await.unwrap();
    bad.push(Behavior::Status {
        code: 503,
        message: "down".into(),
        retry_after: None,
    });
    let good = TestUpstream::start().await.unwrap();
    good.push(Behavior::Reply(Reply {
        text: "Let me look. [TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]".into(),
        chunk_size: 3,
        ..Reply::default()
    }));
    let model = Model::new(
        "dialects",
        vec![
            Arm::new(client(&bad, 0), ToolMode::Prompt).with_dialect(Dialect::Qwen3Coder),
            Arm::new(client(&good, 0), ToolMode::Prompt).with_dialect(Dialect::Mistral),
        ],
    );
    let mut stream = model.stream(request());
    let mut got = Vec::new();
    while let Some(e) = stream.next().await {
        got.push(e.unwrap());
    }
    assert_eq!(stream.arm().unwrap().dialect, Dialect::Mistral);
    assert_eq!(
        summary(&got),
        (
            "Let me look. ".into(),
            vec![("get_weather".into(), "{\"city\": \"Rome\"}".into())],
            Some(FinishReason::ToolCalls)
        )
    );
    let system =
        |body: &serde_json::Value| body["messages"][0]["content"].as_str().unwrap().to_owned();
    let qwen = &bad.requests()[0].body;
    assert!(
        system(qwen).contains("<function=<tool>>"),
        "{}",
        system(qwen)
    );
    assert_eq!(qwen["stop"], json!(["</tool_call>"]));
    let mistral = &good.requests()[0].body;
    assert!(system(mistral).contains("[TOOL_CALLS][{\"name\": \"<tool>\""));
    assert!(!system(mistral).contains("<tool_call>"));
    assert!(mistral.get("stop").is_none(), "{mistral}");
}

/// qwen3-coder values are bare text: the offered tools' schemas type them, and a reply that
/// starts inside reasoning (`reasoning_open`) has its reasoning apart.
#[tokio::test]
async fn qwen3_coder_values_are_typed_by_the_schema_and_open_reasoning_is_reasoning() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "The user wants 3 days.</think>\n<tool_call>\n<function=forecast>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>".into(),
        chunk_size: 4,
        ..Reply::default()
    }));
    let arm = Arm {
        reasoning_open: true,
        ..Arm::new(client(&up, 0), ToolMode::Prompt).with_dialect(Dialect::Qwen3Coder)
    };
    let model = Model::new("qwen", vec![arm]);
    let mut req = request();
    req.tools = vec![ToolSpec::new(
        "forecast",
        "A forecast.",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}),
    )];
    let r = model.complete(req).await.unwrap();
    assert_eq!(r.reasoning, "The user wants 3 days.");
    assert_eq!(r.calls.len(), 1, "{r:?}");
    assert_eq!(r.calls[0].name, "forecast");
    assert_eq!(r.calls[0].arguments, r#"{"city":"Paris","days":3}"#);
    assert_eq!(r.text.trim(), "");
}

#[tokio::test]
async fn fallback_on_connection_refused_and_timeouts_but_not_after_content() {
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut c = OpenAiConfig::new(format!("http://{closed}/v1"), "x");
    c.timeouts = quick_timeouts();
    c.retry = RetryPolicy::none();
    let refused: Arc<OpenAiClient> = Arc::new(OpenAiClient::new(c).unwrap());
    let slow = TestUpstream::start().await.unwrap();
    slow.push(Behavior::SlowFirstByte {
        delay: Duration::from_secs(3),
        reply: Reply::text("late"),
    });
    let good = TestUpstream::start().await.unwrap();
    good.push(Behavior::Reply(Reply::text("from the third arm")));
    let model = Model::new(
        "f",
        vec![
            Arm::new(refused, ToolMode::Native),
            Arm::new(client(&slow, 0), ToolMode::Native),
            Arm::new(client(&good, 0), ToolMode::Native),
        ],
    );
    let started = Instant::now();
    let r = model.complete(request()).await.unwrap();
    assert_eq!(r.text, "from the third arm");
    assert_eq!(r.arm.unwrap().index, 2);
    assert!(started.elapsed() < Duration::from_secs(3));

    let cut = TestUpstream::start().await.unwrap();
    cut.push(Behavior::CutMidStream {
        after_chunks: 2,
        reply: Reply {
            text: "some content first".into(),
            chunk_size: 4,
            ..Reply::default()
        },
    });
    let never = TestUpstream::start().await.unwrap();
    let model = Model::new(
        "g",
        vec![
            Arm::new(client(&cut, 0), ToolMode::Native),
            Arm::new(client(&never, 0), ToolMode::Native),
        ],
    );
    assert!(events(&model, request()).await.is_err());
    assert!(
        never.requests().is_empty(),
        "no fallback once content reached the consumer"
    );
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_upstream_request() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::StallMidStream {
        after_chunks: 1,
        stall: Duration::from_secs(30),
        reply: Reply {
            text: "abcdefgh".into(),
            chunk_size: 2,
            ..Reply::default()
        },
    });
    let model = Model::new("n", vec![Arm::new(client(&up, 0), ToolMode::Native)]);
    let mut stream = model.stream(request());
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, ModelEvent::Text { .. }));
    drop(stream);
    // The server side sees the connection close; a new request is served at once.
    up.push(Behavior::Reply(Reply::text("next")));
    let started = Instant::now();
    assert_eq!(model.complete(request()).await.unwrap().text, "next");
    assert!(started.elapsed() < Duration::from_secs(2));
}

fn anthropic(up: &TestUpstream) -> Arc<toolbridge_providers::anthropic::AnthropicClient> {
    let mut c = toolbridge_providers::anthropic::AnthropicConfig::new("claude-test");
    c.base_url = up.anthropic_base_url();
    c.api_key = Some("sk-ant-test-key-0123456789".into());
    c.timeouts = quick_timeouts();
    c.retry = RetryPolicy::none();
    Arc::new(toolbridge_providers::anthropic::AnthropicClient::new(c).unwrap())
}

#[tokio::test]
async fn the_anthropic_client_round_trips_a_tool_conversation() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply {
        text: "Let me look.".into(),
        tool_calls: vec![("get_weather".into(), "{\"city\": \"Paris\"}".into())],
        chunk_size: 4,
        ..Reply::default()
    }));
    up.push(Behavior::Reply(Reply::text("It is 18°C in Paris.")));
    let model = Model::new("a", vec![Arm::new(anthropic(&up), ToolMode::Native)]);
    let first = model.complete(request()).await.unwrap();
    assert_eq!(first.text, "Let me look.");
    assert_eq!(first.calls.len(), 1);
    assert_eq!(first.calls[0].name, "get_weather");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&first.calls[0].arguments).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(first.finish_reason, Some(FinishReason::ToolCalls));

    let mut second = request();
    second.messages.push(Message::assistant_calls(
        Some(first.text.clone()),
        first.calls.clone(),
    ));
    second.messages.push(Message::tool_result(
        first.calls[0].id.clone(),
        "18°C, cloudy",
        false,
    ));
    let answer = model.complete(second).await.unwrap();
    assert_eq!(answer.text, "It is 18°C in Paris.");
    assert_eq!(answer.finish_reason, Some(FinishReason::Stop));

    let reqs = up.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(
        reqs[0].header("x-api-key"),
        Some("sk-ant-test-key-0123456789")
    );
    assert_eq!(reqs[0].body["tools"][0]["name"], "get_weather");
    assert_eq!(
        reqs[0].body["tools"][0]["input_schema"]["required"][0],
        "city"
    );
    // Every tool_use is answered by a tool_result at the start of the next user turn.
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    let user = &messages[messages.len() - 1];
    assert_eq!(assistant["role"], "assistant");
    let tool_use = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"][0]["type"], "tool_result");
    assert_eq!(user["content"][0]["tool_use_id"], tool_use["id"]);
    assert_eq!(user["content"][0]["content"], "18°C, cloudy");
}

#[tokio::test]
async fn the_anthropic_client_in_prompt_mode_and_its_errors() {
    let up = TestUpstream::start().await.unwrap();
    up.push(Behavior::Reply(Reply::text("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call> ignored")));
    up.push(Behavior::Status {
        code: 401,
        message: "invalid x-api-key".into(),
        retry_after: None,
    });
    let model = Model::new("a", vec![Arm::new(anthropic(&up), ToolMode::Prompt)]);
    let r = model.complete(request()).await.unwrap();
    assert_eq!(r.calls[0].arguments, "{\"city\": \"Oslo\"}");
    let body = &up.requests()[0].body;
    assert_eq!(body["stop_sequences"][0], "</tool_call>");
    assert!(body.get("tools").is_none());
    assert!(body["system"]
        .as_str()
        .unwrap()
        .contains("## Available tools"));
    let err = model.complete(request()).await.unwrap_err();
    assert!(matches!(err, ProviderError::Auth { status: 401, .. }));
    assert!(!err.to_string().contains("0123456789"));
}

/// Issue 13 item 20: a refused connection names the provider, the model and the base URL (without
/// user info or query, where keys hide), and hints at the fix.
#[tokio::test]
async fn connection_errors_say_where_and_what_to_check() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let env: std::collections::BTreeMap<String, String> = Default::default();
    for (provider, url) in [
        (
            "openai",
            format!("http://user:hunter2@{closed}/v1?api-key=sk-secret"),
        ),
        (
            "anthropic",
            format!("http://user:hunter2@{closed}?api-key=sk-secret"),
        ),
    ] {
        let cfg: toolbridge_providers::config::ModelConfig = serde_json::from_value(json!({
            "name": "m", "provider": provider, "base_url": url, "upstream_model": "the-model",
            "max_retries": 0
        }))
        .unwrap();
        let model = toolbridge_providers::config::build_model(&cfg, &env).unwrap();
        let err = model.complete(request()).await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ProviderError::Connect(_)),
            "{provider}: {text}"
        );
        assert!(
            text.contains(&format!("{provider} model `the-model`")),
            "{provider}: {text}"
        );
        assert!(
            text.contains(&format!("http://{closed}")),
            "{provider}: {text}"
        );
        assert!(text.contains("is the server running"), "{provider}: {text}");
        assert!(
            !text.contains("hunter2") && !text.contains("sk-secret"),
            "{provider}: {text}"
        );
        assert!(!model.arms[0].upstream.describe().contains("hunter2"));
    }
}
