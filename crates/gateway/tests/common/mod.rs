//! Shared set-up for the gateway tests: a scripted upstream (testkit), a gateway in front of it
//! on 127.0.0.1:0, and small helpers to send requests and read SSE streams.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod responses;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use toolbridge_gateway::{Gateway, RunningGateway, ServerConfig};
use toolbridge_protocol::openai::ChatCompletionChunk;
use toolbridge_providers::config::{build_model, ModelConfig};
use toolbridge_providers::Model;
use toolbridge_testkit::TestUpstream;

/// The key variable the tests configure.
pub const KEYS_VAR: &str = "TB_TEST_KEYS";

/// A model as `[[models]]` would give it, built the way the CLI builds it.
pub fn model(config: Value) -> Model {
    let cfg: ModelConfig = serde_json::from_value(config).unwrap();
    build_model(&cfg, &BTreeMap::new()).unwrap()
}

/// One arm to an OpenAI-compatible testkit upstream, no upstream retries.
pub fn arm(up: &TestUpstream, mode: &str) -> Value {
    json!({
        "base_url": up.base_url(),
        "upstream_model": "mock-model",
        "tool_mode": mode,
        "max_retries": 0,
        "first_byte_timeout_secs": 5.0,
        "idle_timeout_secs": 5.0,
    })
}

pub fn single(name: &str, up: &TestUpstream, mode: &str) -> Model {
    let mut a = arm(up, mode);
    a["name"] = json!(name);
    model(a)
}

/// A server configuration for tests: loopback, any free port, rate limit off.
pub fn server_config() -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        api_keys_env: KEYS_VAR.to_owned(),
        rate_limit_per_minute: 0,
        ..ServerConfig::default()
    }
}

pub async fn start(config: ServerConfig, models: Vec<Model>) -> RunningGateway {
    start_with_keys(config, models, None).await
}

pub async fn start_with_keys(
    config: ServerConfig,
    models: Vec<Model>,
    keys: Option<&str>,
) -> RunningGateway {
    let mut env = BTreeMap::new();
    if let Some(k) = keys {
        env.insert(KEYS_VAR.to_owned(), k.to_owned());
    }
    Gateway::new(config, models, &env)
        .unwrap()
        .spawn()
        .await
        .unwrap()
}

pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

pub fn weather_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }
        }
    })
}

pub fn time_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Local time in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
        }
    })
}

/// A request with the weather tool.
pub fn tool_request(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [weather_tool()],
        "stream": stream,
    })
}

/// The `<tool_call>` text a prompt-mode model writes.
pub fn call_text(name: &str, args: &str) -> String {
    format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>")
}

pub async fn post(
    client: &reqwest::Client,
    gw: &RunningGateway,
    body: &Value,
) -> reqwest::Response {
    client
        .post(format!("{}/chat/completions", gw.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `data:` payloads of an SSE body, in order (`[DONE]` included as a string).
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_owned()
        })
        .collect()
}

/// The chunks of an SSE body (everything before `[DONE]`), checked to be OpenAI chunks.
pub fn chunks(body: &str) -> Vec<ChatCompletionChunk> {
    let data = sse_data(body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{body}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

/// What a client assembles from chunks: text, calls (id, name, arguments), finish reason.
#[derive(Debug, Default, PartialEq)]
pub struct Assembled {
    pub text: String,
    pub calls: Vec<(String, String, String)>,
    pub finish: Option<String>,
}

pub fn assemble(chunks: &[ChatCompletionChunk]) -> Assembled {
    let mut a = Assembled::default();
    for c in chunks {
        for choice in &c.choices {
            if let Some(t) = &choice.delta.content {
                a.text.push_str(t);
            }
            for d in &choice.delta.tool_calls {
                let index = d.index.unwrap();
                if let Some(id) = &d.id {
                    assert_eq!(index, a.calls.len(), "calls start in order");
                    let f = d.function.as_ref().unwrap();
                    a.calls
                        .push((id.clone(), f.name.clone().unwrap(), String::new()));
                    assert_eq!(d.kind.as_deref(), Some("function"));
                } else {
                    assert!(d.kind.is_none() && d.function.as_ref().unwrap().name.is_none());
                }
                if let Some(args) = d.function.as_ref().and_then(|f| f.arguments.as_ref()) {
                    a.calls[index].2.push_str(args);
                }
            }
            if let Some(f) = choice.finish_reason {
                a.finish = Some(f.as_str().to_owned());
            }
        }
    }
    a
}

/// The events of a Messages API stream as (name, data): every event is named, its data is JSON
/// whose `type` is the name, and a complete stream ends with `message_stop` (or `error`).
pub fn anthropic_events(body: &str) -> Vec<(String, Value)> {
    let events: Vec<(String, Value)> = body
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (name, data) = e
                .strip_prefix("event: ")
                .and_then(|e| e.split_once("\ndata: "))
                .unwrap_or_else(|| panic!("not a named event: {e:?}"));
            let data: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            assert_eq!(data["type"], name, "{body}");
            (name.to_owned(), data)
        })
        .collect();
    assert_eq!(
        events.first().map(|e| e.0.as_str()),
        Some("message_start"),
        "{body}"
    );
    let last = events.last().map(|e| e.0.as_str());
    assert!(matches!(last, Some("message_stop" | "error")), "{body}");
    events
}

/// Waits until `f` holds, up to `limit`.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

/// The sandbox's Python with the document libraries (`scripts/test.sh` makes it and sets
/// TOOLBRIDGE_SANDBOX_PYTHON).
pub fn sandbox_python() -> String {
    std::env::var("TOOLBRIDGE_SANDBOX_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLBRIDGE_SANDBOX_PYTHON is not set: run the suite with `bash scripts/test.sh`, which makes the sandbox's Python")
    })
}

/// `[[models]]` entry `name` over `up` in `mode`, as a composition root reads it.
pub fn model_entry(name: &str, up: &TestUpstream, mode: &str) -> ModelConfig {
    let mut entry = arm(up, mode);
    entry["name"] = json!(name);
    serde_json::from_value(entry).unwrap()
}

/// A gateway made from a composition root of `config`, serving with `server` and `env` (the
/// keys variable, say); the root is returned too.
pub async fn runtime_gateway_with(
    config: toolbridge_runtime::Config,
    server: ServerConfig,
    env: &BTreeMap<String, String>,
) -> (RunningGateway, std::sync::Arc<toolbridge_runtime::Runtime>) {
    let runtime = std::sync::Arc::new(toolbridge_runtime::Runtime::new(
        config,
        toolbridge_providers::ProviderRegistry::new(),
        toolbridge_runtime::Overrides::default(),
    ));
    let served = runtime.served_models().unwrap();
    let gw = Gateway::from_runtime(server, std::sync::Arc::clone(&runtime), served, env)
        .unwrap()
        .spawn()
        .await
        .unwrap();
    (gw, runtime)
}

/// [`runtime_gateway_with`] without keys.
pub async fn runtime_gateway(
    config: toolbridge_runtime::Config,
    server: ServerConfig,
) -> RunningGateway {
    runtime_gateway_with(config, server, &BTreeMap::new())
        .await
        .0
}
